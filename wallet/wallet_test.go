package wallet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/preconf/preconf/rpc"
)

// fakeRPC answers eth_chainId with a fixed id and counts requests.
type fakeRPC struct {
	*httptest.Server
	hits atomic.Int32
}

func newFakeRPC(t *testing.T, chainID string) *fakeRPC {
	t.Helper()
	f := &fakeRPC{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || !strings.Contains(string(body), `"eth_chainId"`) {
			http.Error(w, "bad probe", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":%q}`, chainID)
	}))
	t.Cleanup(f.Close)
	return f
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func testConfig(dir string) Config {
	return Config{
		Approval:        ModeAuto,
		ApprovalTimeout: 30 * time.Second,
		NodeAddr:        "127.0.0.1", // the default: the fake RPCs on loopback are probed
		DataDir:         dir,
		Self:            SelfChain(big.NewInt(1337), Chain{RPCURLs: []string{"http://127.0.0.1:8545"}}),
		Logger:          quiet,
	}
}

func openWallet(t *testing.T, cfg Config) (*Wallet, *rpc.Server) {
	t.Helper()
	w, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	srv := rpc.NewServer(rpc.Options{Logger: quiet})
	w.Register(srv)
	return w, srv
}

type answer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func call(t *testing.T, ctx context.Context, srv *rpc.Server, method, params string) answer {
	t.Helper()
	resp := srv.Handle(ctx, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)))
	var a answer
	if err := json.Unmarshal(resp, &a); err != nil {
		t.Fatalf("bad response %s: %v", resp, err)
	}
	return a
}

func wantNull(t *testing.T, a answer) {
	t.Helper()
	if a.Error != nil || string(a.Result) != "null" {
		t.Fatalf("want result null, got result %s error %+v", a.Result, a.Error)
	}
}

func wantError(t *testing.T, a answer, code int, msg string) {
	t.Helper()
	if a.Error == nil {
		t.Fatalf("want error %d %q, got result %s", code, msg, a.Result)
	}
	if a.Error.Code != code || a.Error.Message != msg {
		t.Fatalf("want error %d %q, got %d %q", code, msg, a.Error.Code, a.Error.Message)
	}
}

func addParams(chainID, name, symbol string, urls ...string) string {
	u, _ := json.Marshal(urls)
	return fmt.Sprintf(`[{"chainId":%q,"chainName":%q,"nativeCurrency":{"name":"Coin","symbol":%q,"decimals":18},"rpcUrls":%s}]`, chainID, name, symbol, u)
}

func TestAddAutoAndIdenticalReadd(t *testing.T) {
	rpcSrv := newFakeRPC(t, "0x2a")
	w, srv := openWallet(t, testConfig(t.TempDir()))
	wantNull(t, call(t, context.Background(), srv, MethodAdd, addParams("0x2a", "Forty-two", "FT", rpcSrv.URL)))
	if rpcSrv.hits.Load() != 1 {
		t.Fatalf("probe made %d requests, want 1", rpcSrv.hits.Load())
	}
	chains, selected := w.Chains()
	if len(chains) != 2 || chains[1].ChainID != "0x2a" || chains[1].ChainName != "Forty-two" {
		t.Fatalf("registry %+v", chains)
	}
	if selected != "0x539" {
		t.Errorf("adding must not select the chain; selected %s", selected)
	}
	// The same chain again: null, no probe, no prompt (even in prompt mode).
	w.cfg.Approval = ModePrompt
	wantNull(t, call(t, context.Background(), srv, MethodAdd, addParams("0x2a", "Forty-two", "FT", rpcSrv.URL)))
	if rpcSrv.hits.Load() != 1 || len(w.Pending()) != 0 {
		t.Errorf("identical re-add probed (%d) or prompted (%d)", rpcSrv.hits.Load(), len(w.Pending()))
	}
	if chains2, _ := w.Chains(); len(chains2) != 2 {
		t.Errorf("re-add duplicated the chain: %+v", chains2)
	}
}

func TestProbeMismatchAndUnreachable(t *testing.T) {
	rpcSrv := newFakeRPC(t, "0x539")
	_, srv := openWallet(t, testConfig(""))
	a := call(t, context.Background(), srv, MethodAdd, addParams("0x2a", "Forty-two", "FT", rpcSrv.URL))
	wantError(t, a, rpc.CodeInvalidParams, fmt.Sprintf("Chain ID returned by RPC URL %s does not match 0x2a", rpcSrv.URL))

	// A port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	a = call(t, context.Background(), srv, MethodAdd, addParams("0x2a", "Forty-two", "FT", dead))
	wantError(t, a, rpc.CodeInternal, fmt.Sprintf("Request for method 'eth_chainId on %s failed", dead))
}

func TestProbeRedirectsAndLimits(t *testing.T) {
	target := newFakeRPC(t, "0x2a")
	// A redirect to another origin (another port is another host:port) is refused.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer other.Close()
	p := NewProber(Policy{Loopback: true}, 5*time.Second)
	if _, err := p.ChainID(context.Background(), other.URL); err == nil || !strings.Contains(err.Error(), "redirect to another origin refused") {
		t.Errorf("cross-origin redirect: got %v", err)
	}
	if target.hits.Load() != 0 {
		t.Errorf("redirect target was contacted")
	}
	// A redirect within the same origin is followed.
	same := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			http.Redirect(w, r, "/rpc", http.StatusPermanentRedirect)
			return
		}
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":"0x2a"}`)
	}))
	defer same.Close()
	if n, err := p.ChainID(context.Background(), same.URL); err != nil || n.Int64() != 42 {
		t.Errorf("same-origin redirect: %v, %v", n, err)
	}
	// Oversized and malformed answers fail.
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":"0x2a","pad":"`+strings.Repeat("x", maxProbeResponse)+`"}`)
	}))
	defer huge.Close()
	if _, err := p.ChainID(context.Background(), huge.URL); err == nil || !strings.Contains(err.Error(), "response larger than") {
		t.Errorf("oversized answer: got %v", err)
	}
	for _, body := range []string{`not json`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`, `{"result":42}`, `{"result":"0x-1"}`, `{"result":"0x"}`} {
		bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
		if _, err := p.ChainID(context.Background(), bad.URL); err == nil {
			t.Errorf("answer %s accepted", body)
		}
		bad.Close()
	}
	// Leading zeros are tolerated.
	padded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":"0x002a"}`)
	}))
	defer padded.Close()
	if n, err := p.ChainID(context.Background(), padded.URL); err != nil || n.Int64() != 42 {
		t.Errorf("padded answer: %v, %v", n, err)
	}
	// A server that never answers is cut by the timeout.
	stall := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-stall }))
	defer slow.Close()
	defer close(stall)
	short := NewProber(Policy{Loopback: true}, 100*time.Millisecond)
	if _, err := short.ChainID(context.Background(), slow.URL); err == nil {
		t.Error("a stalled RPC did not time out")
	}
}

// waitPending polls until n approvals are pending.
func waitPending(t *testing.T, w *Wallet, n int) []Approval {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if p := w.Pending(); len(p) == n {
			return p
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never saw %d pending approvals (have %d)", n, len(w.Pending()))
	return nil
}

func TestPromptApproveRejectTimeout(t *testing.T) {
	rpcSrv := newFakeRPC(t, "0x2a")
	cfg := testConfig(t.TempDir())
	cfg.Approval = ModePrompt
	w, srv := openWallet(t, cfg)
	params := addParams("0x2a", "Forty-two", "FT", rpcSrv.URL)

	// Approve.
	done := make(chan answer, 1)
	go func() { done <- call(t, context.Background(), srv, MethodAdd, params) }()
	p := waitPending(t, w, 1)
	if p[0].Method != MethodAdd || p[0].Chain.ChainID != "0x2a" || p[0].Previous != nil || p[0].ID == "" {
		t.Fatalf("approval %+v", p[0])
	}
	if _, ok := w.reg.get("0x2a"); ok {
		t.Fatal("chain stored before approval")
	}
	if err := w.Approve(p[0].ID); err != nil {
		t.Fatal(err)
	}
	wantNull(t, <-done)
	if _, ok := w.reg.get("0x2a"); !ok {
		t.Fatal("approved chain not stored")
	}
	if err := w.Approve(p[0].ID); err != ErrNoSuchApproval {
		t.Errorf("second decision: %v", err)
	}

	// Reject: a changed entry (new RPC URL) needs approval too.
	rpc2 := newFakeRPC(t, "0x2a")
	go func() {
		done <- call(t, context.Background(), srv, MethodAdd, addParams("0x2a", "Forty-two", "FT", rpc2.URL))
	}()
	p = waitPending(t, w, 1)
	if p[0].Previous == nil || p[0].Chain.RPCURLs[0] != rpc2.URL || len(p[0].Chain.RPCURLs) != 2 {
		t.Fatalf("change approval %+v", p[0])
	}
	if err := w.Reject(p[0].ID); err != nil {
		t.Fatal(err)
	}
	wantError(t, <-done, CodeUserRejected, MsgUserRejected)
	if c, _ := w.reg.get("0x2a"); len(c.RPCURLs) != 1 {
		t.Errorf("rejected change was stored: %+v", c)
	}

	// Timeout.
	w.cfg.ApprovalTimeout = 50 * time.Millisecond
	wantError(t, call(t, context.Background(), srv, MethodAdd, addParams("0x2a", "Renamed", "FT", rpcSrv.URL)), CodeUserRejected, MsgUserRejected)
	if len(w.Pending()) != 0 {
		t.Error("timed-out approval still pending")
	}
	if c, _ := w.reg.get("0x2a"); c.ChainName != "Forty-two" {
		t.Errorf("timed-out change was stored: %+v", c)
	}

	// The caller going away withdraws the request.
	w.cfg.ApprovalTimeout = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- call(t, ctx, srv, MethodAdd, addParams("0x2a", "Renamed", "FT", rpcSrv.URL)) }()
	waitPending(t, w, 1)
	cancel()
	wantError(t, <-done, CodeUserRejected, MsgUserRejected)
	waitPending(t, w, 0)

	// Close rejects what is waiting.
	go func() {
		done <- call(t, context.Background(), srv, MethodAdd, addParams("0x2a", "Renamed", "FT", rpcSrv.URL))
	}()
	waitPending(t, w, 1)
	w.Close()
	wantError(t, <-done, CodeUserRejected, MsgUserRejected)
}

func TestRejectModeAndDisabled(t *testing.T) {
	rpcSrv := newFakeRPC(t, "0x2a")
	cfg := testConfig("")
	cfg.Approval = ModeReject
	_, srv := openWallet(t, cfg)
	wantError(t, call(t, context.Background(), srv, MethodAdd, addParams("0x2a", "Forty-two", "FT", rpcSrv.URL)), CodeUserRejected, MsgUserRejected)
	wantError(t, call(t, context.Background(), srv, MethodSwitch, `[{"chainId":"0x539"}]`), CodeUserRejected, MsgUserRejected)
	wantError(t, call(t, context.Background(), srv, MethodSwitch, `[{"chainId":"0x2a"}]`), CodeUnrecognizedID, `Unrecognized chain ID "0x2a". Try adding the chain using wallet_addEthereumChain first.`)
	if rpcSrv.hits.Load() != 0 {
		t.Error("reject mode probed the RPC")
	}

	dir := t.TempDir()
	cfg = testConfig(dir)
	cfg.Disabled = true
	w, srv := openWallet(t, cfg)
	if w.Enabled() {
		t.Fatal("disabled wallet says enabled")
	}
	for _, m := range []string{MethodAdd, MethodSwitch} {
		wantError(t, call(t, context.Background(), srv, m, addParams("0x2a", "Forty-two", "FT", rpcSrv.URL)), CodeUnsupported, MsgUnsupported)
	}
	if _, err := os.Stat(filepath.Join(dir, RegistryFile)); !os.IsNotExist(err) {
		t.Errorf("a disabled wallet wrote its registry: %v", err)
	}
}

func TestSwitchAndPersistence(t *testing.T) {
	dir := t.TempDir()
	rpcSrv := newFakeRPC(t, "0x2a")
	w, srv := openWallet(t, testConfig(dir))
	wantError(t, call(t, context.Background(), srv, MethodSwitch, `[{"chainId":"0x2A"}]`), CodeUnrecognizedID, `Unrecognized chain ID "0x2a". Try adding the chain using wallet_addEthereumChain first.`)
	wantError(t, call(t, context.Background(), srv, MethodSwitch, `[{"chainId":"42"}]`), rpc.CodeInvalidParams, "Expected 0x-prefixed, unpadded, non-zero hexadecimal string 'chainId'. Received:\n42")
	wantNull(t, call(t, context.Background(), srv, MethodAdd, addParams("0x2a", "Forty-two", "FT", rpcSrv.URL)))
	wantNull(t, call(t, context.Background(), srv, MethodSwitch, `[{"chainId":"0x2A"}]`))
	if _, sel := w.Chains(); sel != "0x2a" {
		t.Fatalf("selected %s", sel)
	}
	w.Close()

	// Restart on another address: the chain and the selection survive; the
	// node's own URL is replaced, not accumulated.
	cfg := testConfig(dir)
	cfg.Self.RPCURLs = []string{"http://127.0.0.1:9999"}
	w2, srv2 := openWallet(t, cfg)
	chains, sel := w2.Chains()
	if sel != "0x2a" || len(chains) != 2 {
		t.Fatalf("after restart: selected %s, chains %+v", sel, chains)
	}
	if c, _ := w2.reg.get("0x2a"); c.ChainName != "Forty-two" || c.RPCURLs[0] != rpcSrv.URL {
		t.Errorf("stored chain %+v", c)
	}
	if c, _ := w2.reg.get("0x539"); strings.Join(c.RPCURLs, " ") != "http://127.0.0.1:9999" {
		t.Errorf("own chain rpcUrls %v", c.RPCURLs)
	}
	// Identical re-add after the restart: null without probing.
	hits := rpcSrv.hits.Load()
	wantNull(t, call(t, context.Background(), srv2, MethodAdd, addParams("0x2a", "Forty-two", "FT", rpcSrv.URL)))
	if rpcSrv.hits.Load() != hits {
		t.Error("identical re-add probed")
	}
	// No temporary files are left behind by the atomic writes.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != RegistryFile {
			t.Errorf("unexpected file %s in the data directory", e.Name())
		}
	}
}

func TestSymbolMismatch(t *testing.T) {
	_, srv := openWallet(t, testConfig(""))
	a := call(t, context.Background(), srv, MethodAdd, addParams("0x539", "Dev", "DEV", "https://rpc.example.com"))
	wantError(t, a, rpc.CodeInvalidParams, "nativeCurrency.symbol does not match currency symbol for a network the user already has added with the same chainId. Received:\nDEV")
}

func TestCorruptRegistry(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, RegistryFile), []byte("{not json"), 0o600)
	if _, err := Open(testConfig(dir)); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("corrupt registry: %v", err)
	}
	cfg := testConfig("")
	cfg.Approval = "sometimes"
	if _, err := Open(cfg); err == nil {
		t.Error("unknown approval mode accepted")
	}
}

func TestSetSelfRPCURL(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Self.RPCURLs = nil
	w, _ := openWallet(t, cfg)
	if err := w.SetSelfRPCURL("http://0.0.0.0:38545"); err != nil {
		t.Fatal(err)
	}
	if got := w.Self().RPCURLs; len(got) != 1 || got[0] != "http://127.0.0.1:38545" {
		t.Errorf("self rpcUrls %v", got)
	}
	if c, _ := w.reg.get("0x539"); len(c.RPCURLs) != 1 || c.RPCURLs[0] != "http://127.0.0.1:38545" {
		t.Errorf("registry entry %v", c.RPCURLs)
	}
	// A configured public URL is kept.
	cfg = testConfig("")
	cfg.Self.RPCURLs = []string{"https://rpc.example.com"}
	w2, _ := openWallet(t, cfg)
	w2.SetSelfRPCURL("http://127.0.0.1:1")
	if got := w2.Self().RPCURLs; got[0] != "https://rpc.example.com" {
		t.Errorf("configured URL replaced: %v", got)
	}
}
