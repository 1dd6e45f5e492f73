package wallet

import (
	"errors"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string // "" when valid
	}{
		{"zero is the defaults", func(*Config) {}, ""},
		{"auto", func(c *Config) { c.Approval = ModeAuto }, ""},
		{"unknown mode", func(c *Config) { c.Approval = "maybe" }, "approval"},
		{"negative approval timeout", func(c *Config) { c.ApprovalTimeout = -time.Second }, "approval-timeout"},
		{"negative probe timeout", func(c *Config) { c.ProbeTimeout = -1 }, "probe-timeout"},
		{"symbol of 7", func(c *Config) { c.Self.NativeCurrency.Symbol = "TOOLONG" }, "currency-symbol"},
		{"symbol of 6 runes", func(c *Config) { c.Self.NativeCurrency.Symbol = "ΞΞΞΞΞΞ" }, ""},
		{"rpc url with a space", func(c *Config) { c.Self.RPCURLs = []string{"http://a b"} }, "rpc-url"},
		{"explorer url", func(c *Config) { c.Self.BlockExplorerURLs = []string{"https://ok.example", "x\x00"} }, "explorer-url"},
	} {
		var c Config
		tc.edit(&c)
		err := c.Validate()
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%s: %v, want an error on %s", tc.name, err, tc.field)
		}
	}
	d := Config{}.withDefaults()
	if d.Approval != ModePrompt || d.ApprovalTimeout != DefaultApprovalTimeout || d.ProbeTimeout != DefaultProbeTimeout {
		t.Errorf("defaults %+v", d)
	}
}
