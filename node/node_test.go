package node

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/preconf/preconf/internal/option"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/sequencer"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func startNode(t *testing.T, cfg Config) *Node {
	t.Helper()
	cfg.Logger = quiet
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func get(t *testing.T, url, host string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if host != "" {
		req.Host = host
	}
	req.Header.Set("Accept", "text/html")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A request in flight when the node is told to stop is answered; the node
// then closes (and new connections are refused). With or without the fast
// path (--http.fastpath).
func TestCloseDrainsInFlight(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("fast path off %v", off), func(t *testing.T) { testCloseDrainsInFlight(t, off) })
	}
}

func testCloseDrainsInFlight(t *testing.T, noFastPath bool) {
	n := startNode(t, Config{DisableFastPath: noFastPath})
	started := make(chan struct{}, 2)
	n.RPC.Register("test_slow", func(ctx context.Context, _ rpc.Params) (any, error) {
		started <- struct{}{}
		select {
		case <-time.After(500 * time.Millisecond):
			return "done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"test_slow"}`
	answers := make(chan string, 2)
	for _, extra := range []string{"", "Connection: close\r\n"} { // fast path, net/http
		conn, err := net.Dial("tcp", n.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: localhost\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", extra, len(body), body)
		go func() {
			conn.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				answers <- "error: " + err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			answers <- string(b)
		}()
	}
	<-started
	<-started
	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	for range 2 {
		if a := <-answers; a != `{"jsonrpc":"2.0","id":1,"result":"done"}` {
			t.Fatalf("in-flight request during shutdown: %s", a)
		}
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", n.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("still accepting after Close")
	}
}

// /health turns 503 with the reason once the pending snapshot goes stale
// (the sequencer loop stopped); /readyz follows it.
func TestHealthReportsStaleSequencer(t *testing.T) {
	defer func(old time.Duration) { minStale = old }(minStale)
	minStale = 300 * time.Millisecond
	n := startNode(t, Config{Sequencer: &sequencer.Config{BlockTime: 100 * time.Millisecond, Interval: 10 * time.Millisecond}})
	defer n.Close()
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, n.URL()+"/health", ""); code != 200 || !strings.Contains(body, `"ok"`) {
		t.Fatalf("/health of a running node: %d %s", code, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := get(t, n.URL()+"/readyz", "")
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never ready: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	n.Sequencer.Stop()
	time.Sleep(3 * minStale)
	for _, path := range []string{"/health", "/readyz"} {
		code, body := get(t, n.URL()+path, "")
		var st struct {
			Status  string   `json:"status"`
			Reasons []string `json:"reasons"`
		}
		json.Unmarshal([]byte(body), &st)
		if code != http.StatusServiceUnavailable || len(st.Reasons) == 0 || !strings.Contains(st.Reasons[0], "pending snapshot is") {
			t.Fatalf("%s with a stopped sequencer: %d %s", path, code, body)
		}
	}
}

// Every endpoint answers a foreign Host 403: JSON-RPC, the page, the feed,
// the wallet, /metrics; with or without the fast path.
func TestHostCheckOnEveryEndpoint(t *testing.T) {
	for _, off := range []bool{false, true} {
		n := startNode(t, Config{DisableFastPath: off})
		if err := n.Start(nil); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/", "/flashblocks", "/ws", "/wallet/state", "/metrics", "/health", "/chain.json"} {
			if code, body := get(t, n.URL()+path, "rebind.example:8545"); code != http.StatusForbidden || !strings.Contains(body, "invalid host") {
				t.Errorf("fast path off %v: %s with a foreign Host: %d %s", off, path, code, body)
			}
		}
		if code, _ := get(t, n.URL()+"/metrics", "localhost:8545"); code != 200 {
			t.Errorf("fast path off %v: /metrics with Host localhost: %d", off, code)
		}
		n.Close()
	}
}

// Off loopback, only eth, net and web3 are served unless --http.api says
// otherwise.
func TestDefaultNamespaces(t *testing.T) {
	for _, tc := range []struct {
		addr string
		apis []string
		want map[string]bool
	}{
		{"127.0.0.1", nil, map[string]bool{"eth_chainId": true, "debug_traceCall": true, "txpool_status": true}},
		{"0.0.0.0", nil, map[string]bool{"eth_chainId": true, "debug_traceCall": false, "txpool_status": false, "wallet_addEthereumChain": false}},
		{"0.0.0.0", []string{"eth", "debug"}, map[string]bool{"eth_chainId": true, "debug_traceCall": true, "net_version": false}},
		{"0.0.0.0", []string{"*"}, map[string]bool{"eth_chainId": true, "debug_traceCall": true, "wallet_addEthereumChain": true}},
		{"0.0.0.0", []string{" Hardhat "}, map[string]bool{"anvil_mine": true, "evm_mine": true, "eth_chainId": false}},
		{"::1", nil, map[string]bool{"debug_traceCall": true}},
	} {
		n := startNode(t, Config{HTTPAddr: tc.addr, APIs: tc.apis})
		for m, want := range tc.want {
			if n.RPC.Has(m) != want {
				t.Errorf("%s %v: %s served = %v", tc.addr, tc.apis, m, !want)
			}
		}
		n.Close()
	}
	// The namespaces served are the ones registered: a name the node has no
	// method under is refused, saying which it has.
	for _, apis := range [][]string{{"admin"}, {"eth", "follower"}, {" "}} {
		if _, err := New(Config{APIs: apis, Logger: quiet}); err == nil || !strings.Contains(err.Error(), "--http.api") {
			t.Errorf("--http.api %q: %v", apis, err)
		} else if apis[0] != " " && !strings.Contains(err.Error(), "this node has anvil, debug, eth, evm, hardhat, net, personal, txpool, wallet, web3") {
			t.Errorf("--http.api %q: %v", apis, err)
		}
	}
}

// Zero is a limit's default and a negative value is refused, named by its
// flag; the largest values are "none".
func TestValidateLimits(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{}, ""},
		{Config{RPCTimeout: rpc.NoTimeout, MaxResponseSize: rpc.NoResponseCap}, ""},
		{Config{BatchLimit: -1}, "rpc.batch-limit"},
		{Config{RPCTimeout: -time.Second}, "rpc.timeout"},
		{Config{MaxResponseSize: -1}, "rpc.max-response-size"},
		{Config{MaxConnections: -1}, "rpc.max-connections"},
		{Config{MaxTracing: -2}, "rpc.max-tracing-requests"},
		{Config{MaxSubs: -1}, "ws.max-subscriptions"},
		{Config{ShutdownTimeout: -time.Second}, "shutdown-timeout"},
	} {
		err := tc.cfg.ValidateLimits()
		if !option.Names(err, tc.field) {
			t.Errorf("%+v: %v, want a refusal of %q", tc.cfg, err, tc.field)
		}
		if tc.field != "" && tc.cfg.Validate() == nil {
			t.Errorf("Validate accepted %q", tc.field)
		}
	}
}
