// Package wallet is preconf's built-in wallet component: it answers EIP-3085
// wallet_addEthereumChain and EIP-3326 wallet_switchEthereumChain with a
// registry of chains persisted in the data directory, validates requests as
// MetaMask does, probes the submitted RPC URL's eth_chainId (with an SSRF-safe
// dialer), and asks a person before it adds or changes anything. It touches
// no chain state.
package wallet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/preconf/preconf/rpc"
)

// Approval modes (--wallet.approval).
const (
	ModePrompt = "prompt" // a person approves or rejects each request
	ModeAuto   = "auto"   // valid requests are approved (tests, CI)
	ModeReject = "reject" // every request is rejected (4001)
)

// DefaultApprovalTimeout is how long a request waits for a person.
const DefaultApprovalTimeout = 120 * time.Second

// EIP-1193 / MetaMask provider error codes and texts.
const (
	CodeUserRejected   = 4001
	CodeUnsupported    = 4100
	CodeUnrecognizedID = 4902
	MsgUserRejected    = "User rejected the request"
	MsgUnsupported     = "Requested method not supported"
	MsgUnrecognizedID  = "Unrecognized chain ID"
)

// Method names.
const (
	MethodAdd    = "wallet_addEthereumChain"
	MethodSwitch = "wallet_switchEthereumChain"
)

// Config configures the wallet.
type Config struct {
	// Disabled turns the component off: the wallet methods answer 4100.
	Disabled bool
	// Approval is ModePrompt (default), ModeAuto or ModeReject.
	Approval string
	// ApprovalTimeout bounds the wait for a person (default 120s).
	ApprovalTimeout time.Duration
	// AllowPrivate lets the probe reach private, link-local and loopback
	// addresses (--wallet.allow-private), whatever address the node listens
	// on. Without it loopback ones are reached only when the node listens
	// on loopback only (Policy).
	AllowPrivate bool
	// NodeAddr is the node's listening host (its --http.addr; "" is the
	// default, 127.0.0.1).
	NodeAddr string
	// ProbeTimeout bounds the eth_chainId probe (default 5s).
	ProbeTimeout time.Duration
	// DataDir holds the registry file; "" keeps it in memory.
	DataDir string
	// Self is the node's own chain, always in the registry.
	Self   Chain
	Logger *slog.Logger
}

// Approval is a request waiting for a person.
type Approval struct {
	ID       string    `json:"id"`
	Method   string    `json:"method"`
	Chain    Chain     `json:"chain"`              // the entry as it will be stored
	Previous *Chain    `json:"previous,omitempty"` // the entry it replaces, if any
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires"`

	decided chan bool
}

// Wallet is the component. Its methods are safe for concurrent use.
type Wallet struct {
	cfg       Config
	selfFixed bool // the own RPC URL was configured, not taken from the listener
	log       *slog.Logger
	probe     *Prober

	mu      sync.Mutex
	reg     *registry
	pending map[string]*Approval
	order   []string // pending IDs, oldest first
	changed chan struct{}
	version uint64
	closed  bool
}

// maxPending bounds the approvals waiting at once.
const maxPending = 32

// Open loads (or creates) the registry and returns the wallet. A disabled
// wallet opens no file.
func Open(cfg Config) (*Wallet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("wallet: %w", err)
	}
	cfg = cfg.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	w := &Wallet{cfg: cfg, log: cfg.Logger, pending: make(map[string]*Approval), changed: make(chan struct{}),
		selfFixed: len(cfg.Self.RPCURLs) > 0}
	if cfg.Disabled {
		return w, nil
	}
	if cfg.Self.ChainID == "" {
		return nil, errors.New("wallet: the node's own chain is not set")
	}
	path := ""
	if cfg.DataDir != "" {
		path = filepath.Join(cfg.DataDir, RegistryFile)
	}
	reg, err := loadRegistry(path, cfg.Self)
	if err != nil {
		return nil, err
	}
	if err := reg.save(); err != nil {
		return nil, fmt.Errorf("wallet registry: %w", err)
	}
	w.reg = reg
	w.probe = NewProber(probePolicy(cfg), cfg.ProbeTimeout)
	return w, nil
}

// refusedTarget is the -32602 answered for a target the policy refuses. It
// names the rule, never the address a name resolved to.
func refusedTarget(rawURL string, p Policy) error {
	if p.Loopback {
		return invalid("Request for method 'eth_chainId on %s refused: the RPC URL's host is a private or link-local address, which this node does not connect to for a caller; loopback ones are allowed while the node listens on loopback only (see --wallet.allow-private)", rawURL)
	}
	return invalid("Request for method 'eth_chainId on %s refused: the RPC URL's host is a private, loopback or link-local address, which this node does not connect to for a remote caller while it listens on a non-loopback address or advertises one with --wallet.rpc-url (see --wallet.allow-private)", rawURL)
}

// Enabled reports whether the component answers requests.
func (w *Wallet) Enabled() bool { return !w.cfg.Disabled }

// Mode is the approval mode.
func (w *Wallet) Mode() string { return w.cfg.Approval }

// AllowsPrivateTargets reports the probe's policy.
func (w *Wallet) AllowsPrivateTargets() bool { return w.probe != nil && w.probe.Policy.Private }

// Register adds the wallet methods to srv.
func (w *Wallet) Register(srv *rpc.Server) {
	srv.Register(MethodAdd, w.addEthereumChain)
	srv.Register(MethodSwitch, w.switchEthereumChain)
}

// Close rejects every pending approval (their callers get 4001).
func (w *Wallet) Close() error {
	w.mu.Lock()
	w.closed = true
	ids := append([]string(nil), w.order...)
	w.mu.Unlock()
	for _, id := range ids {
		w.decide(id, false)
	}
	return nil
}

func userRejected() error { return &rpc.CodedError{Code: CodeUserRejected, Msg: MsgUserRejected} }

func unsupported() error { return &rpc.CodedError{Code: CodeUnsupported, Msg: MsgUnsupported} }

// unrecognized is MetaMask's 4902 wording.
func unrecognized(id string) error {
	return &rpc.CodedError{Code: CodeUnrecognizedID,
		Msg: fmt.Sprintf("%s %q. Try adding the chain using %s first.", MsgUnrecognizedID, id, MethodAdd)}
}

func (w *Wallet) addEthereumChain(ctx context.Context, p rpc.Params) (any, error) {
	if w.cfg.Disabled {
		return nil, unsupported()
	}
	req, err := ValidateAdd(p)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	old, known := w.reg.get(req.ChainID)
	w.mu.Unlock()
	if known && old.NativeCurrency.Symbol != req.NativeCurrency.Symbol {
		return nil, invalid("nativeCurrency.symbol does not match currency symbol for a network the user already has added with the same chainId. Received:\n%s", req.NativeCurrency.Symbol)
	}
	if w.cfg.Approval == ModeReject {
		return nil, userRejected()
	}
	next := req
	if known {
		next = merge(old, req)
		if next.Equal(old) {
			return nil, nil // already there, nothing new: no prompt
		}
	}
	// Ask the first RPC URL (every one is valid by now) for its chain id.
	url := req.RPCURLs[0]
	got, err := w.probe.ChainID(ctx, url)
	if err != nil {
		var pe *ProbeError
		if errors.As(err, &pe) && pe.Refused {
			w.log.Info("wallet probe refused", "url", url, "err", err)
			return nil, refusedTarget(url, w.probe.Policy)
		}
		w.log.Info("wallet probe failed", "url", url, "err", err)
		return nil, &rpc.InternalError{Msg: fmt.Sprintf("Request for method 'eth_chainId on %s failed", url)}
	}
	if got.Cmp(req.ID()) != 0 {
		// The id the target returned is logged, not answered: the probe
		// must not read other hosts' data back to the caller.
		w.log.Info("wallet probe: chain id mismatch", "url", url, "want", req.ChainID, "got", fmt.Sprintf("0x%x", got))
		return nil, invalid("Chain ID returned by RPC URL %s does not match %s", url, req.ChainID)
	}
	if w.cfg.Approval == ModePrompt {
		ok, err := w.ask(ctx, MethodAdd, next, old, known)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, userRejected()
		}
	}
	return nil, w.store(req)
}

// store merges req into the registry as it is now (it may have changed while
// a person was deciding) and saves it; null is answered only once the chain
// is on disk.
func (w *Wallet) store(req Chain) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	old, known := w.reg.get(req.ChainID)
	next := req
	if known {
		if old.NativeCurrency.Symbol != req.NativeCurrency.Symbol {
			return invalid("nativeCurrency.symbol does not match currency symbol for a network the user already has added with the same chainId. Received:\n%s", req.NativeCurrency.Symbol)
		}
		next = merge(old, req)
	}
	w.reg.put(next)
	if err := w.reg.save(); err != nil {
		if known {
			w.reg.put(old)
		} else {
			w.reg.chains = w.reg.chains[:len(w.reg.chains)-1]
		}
		w.log.Error("wallet registry save failed", "err", err)
		return &rpc.InternalError{Msg: "wallet registry could not be saved"}
	}
	w.log.Info("wallet chain stored", "chainId", next.ChainID, "name", next.ChainName, "rpcUrls", next.RPCURLs)
	w.notifyLocked()
	return nil
}

func (w *Wallet) switchEthereumChain(_ context.Context, p rpc.Params) (any, error) {
	if w.cfg.Disabled {
		return nil, unsupported()
	}
	id, err := ValidateSwitch(p)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reg.index(id) < 0 {
		return nil, unrecognized(id)
	}
	if w.cfg.Approval == ModeReject {
		return nil, userRejected()
	}
	if w.reg.selected == id {
		return nil, nil
	}
	prev := w.reg.selected
	w.reg.selected = id
	if err := w.reg.save(); err != nil {
		w.reg.selected = prev
		w.log.Error("wallet registry save failed", "err", err)
		return nil, &rpc.InternalError{Msg: "wallet registry could not be saved"}
	}
	w.notifyLocked()
	return nil, nil
}

// Chains returns the registry and the selected chain id.
func (w *Wallet) Chains() (chains []Chain, selected string) {
	if w.cfg.Disabled {
		return nil, ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reg.list(), w.reg.selected
}

// SetSelfRPCURL sets the node's own RPC URL in its chain's entry (the node
// knows it only once it listens).
// A URL configured in Config.Self (--wallet.rpc-url) is kept instead. An
// unspecified listening host (0.0.0.0, ::) becomes 127.0.0.1.
func (w *Wallet) SetSelfRPCURL(rawURL string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.selfFixed {
		return nil
	}
	if u, err := url.Parse(rawURL); err == nil {
		if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && a.IsUnspecified() {
			u.Host = net.JoinHostPort("127.0.0.1", u.Port())
			rawURL = u.String()
		}
	}
	w.cfg.Self.RPCURLs = []string{rawURL}
	if w.cfg.Disabled {
		return nil
	}
	w.reg.setSelf(w.cfg.Self)
	w.notifyLocked()
	return w.reg.save()
}

// SelfChain fills the node's own chain data: the chain id from the chain's
// configuration and defaults for what tmpl leaves empty (name "preconf chain
// <id>", currency Ether/ETH/18). tmpl.RPCURLs, when set, is the node's public
// URL (--wallet.rpc-url); otherwise the node sets its listening URL at start.
func SelfChain(id *big.Int, tmpl Chain) Chain {
	c := tmpl.clone()
	c.ChainID = fmt.Sprintf("0x%x", id)
	if c.ChainName == "" {
		c.ChainName = fmt.Sprintf("preconf chain %d", id)
	}
	if c.NativeCurrency.Name == "" {
		c.NativeCurrency.Name = "Ether"
	}
	if c.NativeCurrency.Symbol == "" {
		c.NativeCurrency.Symbol = "ETH"
	}
	c.NativeCurrency.Decimals = requiredDecimal
	return c
}

// Self is the node's own chain data (EIP-3085 chainData).
func (w *Wallet) Self() Chain {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cfg.Self.clone()
}
