package wallet

import "github.com/preconf/preconf/internal/option"

// FieldError is a configuration value the wallet refuses. Field is the
// option's name without the command's prefix ("approval",
// "approval-timeout", …), so the command line names its flag
// ("--wallet."+Field) and a Go caller its field, from one check.
type FieldError = option.FieldError

// Validate checks the configuration. Zero values are the defaults (Open
// fills them in): an empty Approval is ModePrompt, a zero timeout the
// package's default; negative ones are errors. The node's own chain is
// checked as a registry entry would be: a currency symbol of 1-6
// characters when given, RPC and explorer URLs a wallet would accept.
func (c *Config) Validate() error {
	switch c.Approval {
	case "", ModePrompt, ModeAuto, ModeReject:
	default:
		return option.Errorf("approval", "must be prompt, auto or reject, not %q", c.Approval)
	}
	if c.ApprovalTimeout < 0 {
		return &FieldError{Field: "approval-timeout", Msg: "must be positive"}
	}
	if c.ProbeTimeout < 0 {
		return &FieldError{Field: "probe-timeout", Msg: "must be positive"}
	}
	if sym := c.Self.NativeCurrency.Symbol; sym != "" && len([]rune(sym)) > maxSymbolLen {
		return option.Errorf("currency-symbol", "must have 1-%d characters", maxSymbolLen)
	}
	for _, u := range c.Self.RPCURLs {
		if err := CheckURL(u); err != nil {
			return &FieldError{Field: "rpc-url", Msg: err.Error()}
		}
	}
	for _, u := range c.Self.BlockExplorerURLs {
		if err := CheckURL(u); err != nil {
			return &FieldError{Field: "explorer-url", Msg: err.Error()}
		}
	}
	return nil
}

// withDefaults fills the zero values Validate allows.
func (c Config) withDefaults() Config {
	if c.Approval == "" {
		c.Approval = ModePrompt
	}
	if c.ApprovalTimeout == 0 {
		c.ApprovalTimeout = DefaultApprovalTimeout
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = DefaultProbeTimeout
	}
	return c
}
