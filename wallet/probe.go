package wallet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Probe defaults: a wallet request must not hold a connection open for long,
// and an RPC's answer to eth_chainId is a few dozen bytes.
const (
	DefaultProbeTimeout = 5 * time.Second
	maxProbeResponse    = 64 << 10
	maxProbeRedirects   = 3
	maxProbesInFlight   = 4
)

// ErrRefusedTarget is returned (wrapped) when the probe would connect to an
// address its policy forbids.
var ErrRefusedTarget = errors.New("target address refused by the wallet's probe policy")

// Prober asks an RPC URL for its chain id on behalf of a remote caller, so it
// is built against request forgery (SSRF):
//
//   - The policy is applied to the address actually dialled, at dial time
//     (net.Dialer.Control), after DNS resolution: a name that resolves, or
//     re-resolves, to a forbidden address is refused before any packet is
//     sent to it. Every address a dial tries is checked.
//   - What may be dialled is the Policy (see there): public unicast always,
//     loopback when the node listens on loopback only, private and
//     link-local only with --wallet.allow-private. Refusal happens before
//     any packet leaves, so a refused target's open and closed ports answer
//     alike.
//   - No proxy from the environment is used, redirects are followed only to
//     the same scheme and host (at most 3), the whole exchange has a short
//     timeout, the response is size-limited, and at most 4 probes run at once.
type Prober struct {
	Policy  Policy
	Timeout time.Duration
	client  *http.Client
	sem     chan struct{}
	// connect, when set, runs for an address the policy allows, before
	// the connection is made; its error stops the dial (tests use it to
	// see the decision without dialling out).
	connect func(address string) error
}

// NewProber returns a prober with the given policy and timeout (0: default).
func NewProber(policy Policy, timeout time.Duration) *Prober {
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	p := &Prober{Policy: policy, Timeout: timeout, sem: make(chan struct{}, maxProbesInFlight)}
	dialer := &net.Dialer{Timeout: timeout, Control: p.control}
	tr := &http.Transport{
		Proxy:                  nil, // never via an environment proxy: the policy is about the real target
		DialContext:            dialer.DialContext,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 16 << 10,
		DisableKeepAlives:      true,
		ForceAttemptHTTP2:      true,
	}
	p.client = &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: sameOriginRedirect}
	return p
}

// control runs after the socket is made and before it connects.
func (p *Prober) control(network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return fmt.Errorf("%w: network %s", ErrRefusedTarget, network)
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRefusedTarget, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrRefusedTarget, err)
	}
	if !p.Policy.Allows(ip) {
		return ErrRefusedTarget
	}
	if p.connect != nil {
		return p.connect(address)
	}
	return nil
}

func sameOriginRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxProbeRedirects {
		return errors.New("too many redirects")
	}
	first := via[0].URL
	if req.URL.Scheme != first.Scheme || !strings.EqualFold(req.URL.Host, first.Host) {
		return fmt.Errorf("redirect to another origin refused (%s://%s)", req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// ProbeError is a failed probe; Refused tells a policy refusal from an
// unreachable or misbehaving RPC. Detail is for the node's log only: it is
// not sent to the caller, so that the probe tells a remote caller nothing
// about hosts it could not reach itself.
type ProbeError struct {
	URL     string
	Refused bool
	Detail  error
}

func (e *ProbeError) Error() string {
	return fmt.Sprintf("probe %s: %v", e.URL, e.Detail)
}

func (e *ProbeError) Unwrap() error { return e.Detail }

// ChainID sends eth_chainId to rawURL and returns the answer as a number.
func (p *Prober) ChainID(ctx context.Context, rawURL string) (*big.Int, error) {
	// The time limit covers the wait for a probe slot too.
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	select {
	case p.sem <- struct{}{}:
		defer func() { <-p.sem }()
	case <-ctx.Done():
		return nil, &ProbeError{URL: rawURL, Detail: fmt.Errorf("no probe slot: %w", ctx.Err())}
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return nil, &ProbeError{URL: rawURL, Detail: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "preconf-wallet-probe")
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, &ProbeError{URL: rawURL, Refused: errors.Is(err, ErrRefusedTarget), Detail: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &ProbeError{URL: rawURL, Detail: fmt.Errorf("HTTP status %s", resp.Status)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxProbeResponse+1))
	if err != nil {
		return nil, &ProbeError{URL: rawURL, Detail: err}
	}
	if len(data) > maxProbeResponse {
		return nil, &ProbeError{URL: rawURL, Detail: fmt.Errorf("response larger than %d bytes", maxProbeResponse)}
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &msg); err != nil {
		return nil, &ProbeError{URL: rawURL, Detail: fmt.Errorf("not a JSON-RPC response: %v", err)}
	}
	if len(msg.Error) > 0 && string(msg.Error) != "null" {
		return nil, &ProbeError{URL: rawURL, Detail: fmt.Errorf("JSON-RPC error %s", msg.Error)}
	}
	var s string
	if err := json.Unmarshal(msg.Result, &s); err != nil {
		return nil, &ProbeError{URL: rawURL, Detail: fmt.Errorf("result is not a hex string: %s", msg.Result)}
	}
	n, ok := parseHexQuantity(s)
	if !ok {
		return nil, &ProbeError{URL: rawURL, Detail: fmt.Errorf("result is not a hex quantity: %q", s)}
	}
	return n, nil
}

// parseHexQuantity reads a 0x-hex number, tolerating leading zeros (some
// RPCs answer "0x01"); at most 64 digits.
func parseHexQuantity(s string) (*big.Int, bool) {
	if len(s) < 3 || len(s) > 66 || (s[:2] != "0x" && s[:2] != "0X") {
		return nil, false
	}
	for _, c := range s[2:] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return nil, false
		}
	}
	return new(big.Int).SetString(s[2:], 16)
}
