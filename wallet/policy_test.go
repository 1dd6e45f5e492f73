package wallet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/preconf/preconf/rpc"
)

func TestPolicyAllows(t *testing.T) {
	loopback := []string{"127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"}
	private := []string{"10.1.2.3", "192.168.0.1", "172.16.0.1", "169.254.169.254", "fe80::1", "fd12::1",
		"100.64.0.1", "0.0.0.0", "::", "::ffff:10.0.0.1", "64:ff9b::7f00:1", "64:ff9b::a00:1"}
	public := []string{"8.8.8.8", "2606:4700:4700::1111"}
	for _, tc := range []struct {
		name                    string
		policy                  Policy
		loopback, private, publ bool
	}{
		{"node on a public address", Policy{}, false, false, true},
		{"node on loopback only (default)", Policy{Loopback: true}, true, false, true},
		{"--wallet.allow-private", Policy{Private: true}, true, true, true},
		{"--wallet.allow-private on loopback", Policy{Loopback: true, Private: true}, true, true, true},
	} {
		for _, set := range []struct {
			addrs []string
			want  bool
		}{{loopback, tc.loopback}, {private, tc.private}, {public, tc.publ}} {
			for _, a := range set.addrs {
				if got := tc.policy.Allows(mustAddr(t, a)); got != set.want {
					t.Errorf("%s: Allows(%s) = %v, want %v", tc.name, a, got, set.want)
				}
			}
		}
	}
}

// The listening address and the advertised URL decide whether loopback
// targets are probed; only the flag opens private ones.
func TestProbePolicyFromConfig(t *testing.T) {
	for _, tc := range []struct {
		addr, selfURL string
		private       bool
		want          Policy
	}{
		{addr: "", want: Policy{Loopback: true}}, // --http.addr's default
		{addr: "127.0.0.1", want: Policy{Loopback: true}},
		{addr: "localhost", selfURL: "http://localhost:8545", want: Policy{Loopback: true}},
		{addr: "::1", want: Policy{Loopback: true}},
		{addr: "0.0.0.0", want: Policy{}},
		{addr: "::", want: Policy{}},
		{addr: "192.168.1.5", want: Policy{}},
		{addr: "127.0.0.1", selfURL: "https://rpc.example.org", want: Policy{}}, // behind a proxy
		{addr: "0.0.0.0", private: true, want: Policy{Private: true}},
		{addr: "127.0.0.1", private: true, want: Policy{Loopback: true, Private: true}},
	} {
		cfg := Config{NodeAddr: tc.addr, AllowPrivate: tc.private}
		if tc.selfURL != "" {
			cfg.Self.RPCURLs = []string{tc.selfURL}
		}
		if got := probePolicy(cfg); got != tc.want {
			t.Errorf("node on %q, rpc-url %q, allow-private %v: policy %+v, want %+v", tc.addr, tc.selfURL, tc.private, got, tc.want)
		}
	}
}

// recordDials makes w's probe connect only to loopback addresses (the fake
// RPCs); any other address the policy lets through is recorded and not
// dialled, so that the test sends nothing off this machine.
func recordDials(w *Wallet) func() []string {
	var mu sync.Mutex
	var tried []string
	w.probe.connect = func(address string) error {
		host, _, _ := net.SplitHostPort(address)
		if a, err := netip.ParseAddr(host); err == nil && a.Unmap().IsLoopback() {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		tried = append(tried, address)
		return errors.New("test: not dialling off loopback")
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), tried...)
	}
}

// wallet_addEthereumChain with loopback, private and link-local RPC URLs, by
// where the node listens.
func TestProbeTargetsByListener(t *testing.T) {
	fake := newFakeRPC(t, "0x2a")
	byName := strings.Replace(fake.URL, "127.0.0.1", "localhost", 1)
	offLoopback := []string{"https://10.1.2.3:8545", "https://192.168.1.1/", "https://169.254.169.254/latest", "https://[fe80::1]:8545/"}
	const (
		onLoopback = "Request for method 'eth_chainId on %s refused: the RPC URL's host is a private or link-local address, which this node does not connect to for a caller; loopback ones are allowed while the node listens on loopback only (see --wallet.allow-private)"
		elsewhere  = "Request for method 'eth_chainId on %s refused: the RPC URL's host is a private, loopback or link-local address, which this node does not connect to for a remote caller while it listens on a non-loopback address or advertises one with --wallet.rpc-url (see --wallet.allow-private)"
	)
	for _, tc := range []struct {
		name, addr, selfURL string
		allowPrivate        bool
		loopbackOK          bool   // loopback URLs are probed and the chain added
		refused             string // the message for refused URLs
	}{
		{name: "default: loopback only", addr: "127.0.0.1", loopbackOK: true, refused: onLoopback},
		{name: "all interfaces", addr: "0.0.0.0", refused: elsewhere},
		{name: "a LAN address", addr: "192.168.1.5", refused: elsewhere},
		{name: "loopback behind a proxy", addr: "127.0.0.1", selfURL: "https://rpc.example.org", refused: elsewhere},
		{name: "all interfaces, --wallet.allow-private", addr: "0.0.0.0", allowPrivate: true, loopbackOK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := fake.hits.Load()
			cfg := testConfig("")
			cfg.NodeAddr, cfg.AllowPrivate = tc.addr, tc.allowPrivate
			if tc.selfURL != "" {
				cfg.Self.RPCURLs = []string{tc.selfURL}
			}
			w, srv := openWallet(t, cfg)
			tried := recordDials(w)
			for i, u := range []string{fake.URL, byName} {
				a := call(t, context.Background(), srv, MethodAdd, addParams("0x2a", fmt.Sprintf("Local %d", i), "FT", u))
				if tc.loopbackOK {
					wantNull(t, a)
				} else {
					wantError(t, a, rpc.CodeInvalidParams, fmt.Sprintf(tc.refused, u))
				}
			}
			if got := fake.hits.Load() - before; tc.loopbackOK != (got == 2) || !tc.loopbackOK && got != 0 {
				t.Errorf("the loopback RPC got %d probes", got)
			}
			for _, u := range offLoopback {
				a := call(t, context.Background(), srv, MethodAdd, addParams("0x2b", "Elsewhere", "EW", u))
				if tc.allowPrivate {
					// Allowed by the policy, so the dial was attempted (and
					// stopped by recordDials): the probe failed, -32603.
					wantError(t, a, rpc.CodeInternal, fmt.Sprintf("Request for method 'eth_chainId on %s failed", u))
				} else {
					wantError(t, a, rpc.CodeInvalidParams, fmt.Sprintf(tc.refused, u))
				}
			}
			if n := len(tried()); tc.allowPrivate != (n == len(offLoopback)) || !tc.allowPrivate && n != 0 {
				t.Errorf("dials off loopback: %v", tried())
			}
			if len(w.Pending()) != 0 {
				t.Error("a request reached the approval queue")
			}
		})
	}
}

func TestProberRefusesBeforeConnecting(t *testing.T) {
	p := NewProber(Policy{}, 2*time.Second)
	p.connect = func(address string) error {
		t.Errorf("the policy let %s through", address)
		return errors.New("test: not dialling")
	}
	ctx := context.Background()
	// Every one of these is refused at dial time, before a packet is sent:
	// the dialer's Control hook runs before connect(2).
	for _, u := range []string{
		"http://127.0.0.1:1/", "http://localhost:1/", "http://[::1]:1/", "http://10.0.0.1:1/", "http://192.168.1.1:1/",
		"http://172.16.0.1:1/", "http://169.254.169.254/latest/meta-data", "http://[fe80::1]:1/", "http://0.0.0.0:1/",
		"http://100.64.0.1:1/", "http://[::ffff:10.0.0.1]:1/", "http://[64:ff9b::a00:1]:1/",
	} {
		_, err := p.ChainID(ctx, u)
		var pe *ProbeError
		if !errors.As(err, &pe) || !pe.Refused {
			t.Errorf("%s: got %v, want a refusal", u, err)
		}
	}
}

func TestIsPublicAddr(t *testing.T) {
	public := []string{"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"}
	private := []string{"127.0.0.1", "10.1.2.3", "172.31.255.255", "192.168.0.1", "169.254.169.254", "100.64.0.1",
		"0.0.0.0", "255.255.255.255", "224.0.0.1", "192.0.2.1", "198.18.0.1", "240.0.0.1", "::", "::1", "fe80::1",
		"fc00::1", "fd12::1", "ff02::1", "::ffff:127.0.0.1", "64:ff9b::7f00:1", "2002:a00:1::1", "2001:db8::1"}
	for _, s := range public {
		if !IsPublicAddr(mustAddr(t, s)) {
			t.Errorf("%s should be public", s)
		}
	}
	for _, s := range private {
		if IsPublicAddr(mustAddr(t, s)) {
			t.Errorf("%s should not be public", s)
		}
	}
}

func mustAddr(t *testing.T, s string) netip.Addr {
	t.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
