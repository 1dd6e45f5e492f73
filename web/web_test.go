package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/wallet"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newSite(t *testing.T, mode string) (*Site, *wallet.Wallet, *rpc.Server) {
	t.Helper()
	w, err := wallet.Open(wallet.Config{
		Approval: mode, NodeAddr: "127.0.0.1", Logger: quiet, AllowPrivate: true, // fake RPCs on loopback
		Self: wallet.SelfChain(big.NewInt(1337), wallet.Chain{RPCURLs: []string{"http://127.0.0.1:8545"}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	srv := rpc.NewServer(rpc.Options{Logger: quiet})
	w.Register(srv)
	return New(w, quiet), w, srv
}

// mux mounts the site as the node does.
func mux(s *Site) *http.ServeMux {
	m := http.NewServeMux()
	s.Mount(func(p string, h http.Handler) { m.Handle(p, h) })
	m.Handle("/", s)
	return m
}

func request(m http.Handler, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	r := httptest.NewRequest(method, target, body)
	r.RemoteAddr = "127.0.0.1:50000"
	r.Host = "127.0.0.1:8545"
	for k, v := range hdr {
		switch k {
		case "RemoteAddr":
			r.RemoteAddr = v
		case "Host":
			r.Host = v
		default:
			r.Header.Set(k, v)
		}
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, r)
	return rec
}

func TestPageAndAssets(t *testing.T) {
	s, _, _ := newSite(t, wallet.ModeAuto)
	m := mux(s)
	rec := request(m, "GET", "/", map[string]string{"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"})
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	body := rec.Body.String()
	for _, want := range []string{"Add this network to your wallet", `id="approvals"`, `id="flashblock-index"`, `src="/assets/app.js"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
		t.Error("page refers to an external address")
	}
	if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "ws://127.0.0.1:8545") {
		t.Errorf("CSP %q", csp)
	}
	for _, accept := range []string{"", "*/*", "application/json", "text/html;q=0"} {
		if rec := request(m, "GET", "/", map[string]string{"Accept": accept}); rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "POST" {
			t.Errorf("GET / with Accept %q: %d, want 405", accept, rec.Code)
		}
	}
	if rec := request(m, "PUT", "/", map[string]string{"Accept": "text/html"}); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("PUT /: %d", rec.Code)
	}
	for path, ctype := range map[string]string{"/assets/app.js": "javascript", "/assets/style.css": "text/css"} {
		rec := request(m, "GET", path, nil)
		if rec.Code != 200 || !strings.Contains(rec.Header().Get("Content-Type"), ctype) {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Header().Get("Content-Type"))
		}
		if strings.Contains(rec.Body.String(), "https://") {
			t.Errorf("%s loads something external", path)
		}
	}
	if rec := request(m, "GET", "/assets/nope.js", nil); rec.Code != 404 {
		t.Errorf("missing asset: %d", rec.Code)
	}
}

func TestChainJSON(t *testing.T) {
	s, w, _ := newSite(t, wallet.ModeAuto)
	rec := request(mux(s), "GET", "/chain.json", map[string]string{"RemoteAddr": "203.0.113.5:1", "Host": "node.example"})
	if rec.Code != 200 || rec.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("chain.json: %d %v", rec.Code, rec.Header())
	}
	var c wallet.Chain
	if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	if !c.Equal(w.Self()) || c.ChainID != "0x539" || c.NativeCurrency.Decimals != 18 {
		t.Errorf("chain.json %+v", c)
	}
	// It is valid wallet_addEthereumChain input.
	if _, err := wallet.ValidateAdd(rpc.Params{rec.Body.Bytes()}); err != nil {
		t.Errorf("chain.json is not valid chainData: %v", err)
	}
}

func TestLocalOnly(t *testing.T) {
	s, _, _ := newSite(t, wallet.ModePrompt)
	m := mux(s)
	if rec := request(m, "GET", "/wallet/state", nil); rec.Code != 200 {
		t.Fatalf("local state: %d %s", rec.Code, rec.Body)
	}
	for name, hdr := range map[string]map[string]string{
		"remote caller":    {"RemoteAddr": "192.0.2.7:4000"},
		"rebinding host":   {"Host": "attacker.example:8545"},
		"foreign origin":   {"Origin": "https://attacker.example"},
		"cross-site fetch": {"Sec-Fetch-Site": "cross-site"},
	} {
		if rec := request(m, "GET", "/wallet/state", hdr); rec.Code != http.StatusForbidden {
			t.Errorf("%s: GET state %d, want 403", name, rec.Code)
		}
		hdr["Content-Type"] = "application/json"
		if rec := request(m, "POST", "/wallet/approvals/x/approve", hdr); rec.Code != http.StatusForbidden {
			t.Errorf("%s: POST approve %d, want 403", name, rec.Code)
		}
	}
	// A form post (no JSON content type) is refused: other pages could send one.
	if rec := request(m, "POST", "/wallet/approvals/x/approve", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}); rec.Code != http.StatusForbidden {
		t.Errorf("form post: %d", rec.Code)
	}
	// Same-origin page requests and localhost names pass.
	for _, hdr := range []map[string]string{
		{"Content-Type": "application/json", "Origin": "http://127.0.0.1:8545", "Sec-Fetch-Site": "same-origin"},
		{"Content-Type": "application/json", "Host": "localhost:8545", "RemoteAddr": "[::1]:5000"},
	} {
		if rec := request(m, "POST", "/wallet/approvals/nope/approve", hdr); rec.Code != http.StatusNotFound {
			t.Errorf("local POST %v: %d %s, want 404 for an unknown id", hdr, rec.Code, rec.Body)
		}
	}
	if rec := request(m, "GET", "/wallet/approvals/x/approve", nil); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET approve: %d", rec.Code)
	}
	if rec := request(m, "POST", "/wallet/approvals/x/maybe", map[string]string{"Content-Type": "application/json"}); rec.Code != http.StatusNotFound {
		t.Errorf("unknown action: %d", rec.Code)
	}
}

func TestApproveOverHTTP(t *testing.T) {
	probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":"0x2a"}`)
	}))
	defer probe.Close()
	s, w, srv := newSite(t, wallet.ModePrompt)
	m := mux(s)
	for _, action := range []string{"approve", "reject"} {
		done := make(chan string, 1)
		go func() {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"wallet_addEthereumChain","params":[{"chainId":"0x2a","chainName":"Chain %s","nativeCurrency":{"name":"Coin","symbol":"CN","decimals":18},"rpcUrls":[%q]}]}`, action, probe.URL)
			done <- string(srv.Handle(context.Background(), []byte(body)))
		}()
		var st State
		deadline := time.Now().Add(30 * time.Second)
		for len(st.Pending) == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
			rec := request(m, "GET", "/wallet/state", nil)
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
		}
		if len(st.Pending) != 1 || st.Mode != "prompt" || !st.Enabled {
			t.Fatalf("state %+v", st)
		}
		rec := request(m, "POST", "/wallet/approvals/"+st.Pending[0].ID+"/"+action, map[string]string{"Content-Type": "application/json"})
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", action, rec.Code, rec.Body)
		}
		got := <-done
		if action == "approve" && got != `{"jsonrpc":"2.0","id":1,"result":null}` {
			t.Errorf("approved call answered %s", got)
		}
		if action == "reject" && got != `{"jsonrpc":"2.0","id":1,"error":{"code":4001,"message":"User rejected the request"}}` {
			t.Errorf("rejected call answered %s", got)
		}
	}
	chains, _ := w.Chains()
	if len(chains) != 2 || chains[1].ChainName != "Chain approve" {
		t.Errorf("registry %+v", chains)
	}
}

func TestStateLongPoll(t *testing.T) {
	s, _, srv := newSite(t, wallet.ModeAuto)
	m := mux(s)
	state := func(q string) State {
		var st State
		if err := json.Unmarshal(request(m, "GET", "/wallet/state"+q, nil).Body.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	v0 := state("").Version
	got := make(chan State, 1)
	go func() { got <- state(fmt.Sprintf("?since=%d", v0)) }()
	probe := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":"0x2a"}`)
	}))
	defer probe.Close()
	// Whether the poll is already waiting or not, it answers with the change:
	// it waits only while the version is still v0.
	srv.Handle(context.Background(), []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"wallet_addEthereumChain","params":[{"chainId":"0x2a","chainName":"X","nativeCurrency":{"name":"Coin","symbol":"CN","decimals":18},"rpcUrls":[%q]}]}`, probe.URL)))
	st := <-got
	if len(st.Chains) != 2 || st.Version == v0 {
		t.Errorf("long poll answered version %d (from %d) with %d chains", st.Version, v0, len(st.Chains))
	}
	// An old version answers at once.
	if st2 := state(fmt.Sprintf("?since=%d", v0)); st2.Version != st.Version {
		t.Errorf("stale since: version %d, want %d", st2.Version, st.Version)
	}
}

func TestDisabledWallet(t *testing.T) {
	w, err := wallet.Open(wallet.Config{Disabled: true, Logger: quiet,
		Self: wallet.SelfChain(big.NewInt(1337), wallet.Chain{RPCURLs: []string{"http://127.0.0.1:8545"}})})
	if err != nil {
		t.Fatal(err)
	}
	m := mux(New(w, quiet))
	var st State
	if err := json.Unmarshal(request(m, "GET", "/wallet/state?since=0", nil).Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.Enabled || st.Mode != "disabled" || len(st.Chains) != 0 || len(st.Pending) != 0 {
		t.Errorf("disabled state %+v", st)
	}
	if rec := request(m, "POST", "/wallet/approvals/x/approve", map[string]string{"Content-Type": "application/json"}); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "disabled") {
		t.Errorf("approve on a disabled wallet: %d %s", rec.Code, rec.Body)
	}
	// The page and the chain data are still served.
	if rec := request(m, "GET", "/", map[string]string{"Accept": "text/html"}); rec.Code != 200 {
		t.Errorf("page: %d", rec.Code)
	}
	if rec := request(m, "GET", "/chain.json", nil); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"chainId":"0x539"`) {
		t.Errorf("chain.json: %d %s", rec.Code, rec.Body)
	}
}
