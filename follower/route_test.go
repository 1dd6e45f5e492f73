package follower

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/remote"
	"github.com/preconf/preconf/rpc"
)

// fakeUpstream answers JSON-RPC by method and counts the calls.
type fakeUpstream struct {
	mu     sync.Mutex
	calls  map[string]int
	params map[string]string // the last params of each method
}

func (u *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	json.Unmarshal(body, &req)
	u.mu.Lock()
	u.calls[req.Method]++
	if u.params == nil {
		u.params = make(map[string]string)
	}
	u.params[req.Method] = string(req.Params)
	u.mu.Unlock()
	switch req.Method {
	case "eth_getBlockByNumber":
		if strings.Contains(string(req.Params), `"0x7"`) { // a block this upstream does not have yet
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":null}`))
			return
		}
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"params":` + string(req.Params) + `}}`))
	case "eth_getBlockByHash":
		if strings.Contains(string(req.Params), "0x00000000") {
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":null}`))
			return
		}
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"number":"0x1","params":` + string(req.Params) + `}}`))
	case "eth_sendRawTransaction":
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"nonce too low","data":"0x01"}}`))
	default:
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x2a"}`))
	}
}

func (u *fakeUpstream) last(m string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.params[m]
}

func (u *fakeUpstream) count(m string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls[m]
}

func TestRouting(t *testing.T) {
	up := &fakeUpstream{calls: map[string]int{}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	f, err := New(Config{Upstream: srv.URL, Feed: "ws://127.0.0.1:1", Chain: chain.DevGenesis().Config}, new(pending.Source))
	if err != nil {
		t.Fatal(err)
	}
	local := rpc.NewServer(rpc.Options{})
	var localCalls int
	for _, m := range []string{"eth_getBalance", "eth_getBlockByHash", "eth_getTransactionReceipt", "eth_chainId", "eth_estimateGas"} {
		local.Register(m, func(context.Context, rpc.Params) (any, error) { localCalls++; return "local", nil })
	}
	public := rpc.NewServer(rpc.Options{})
	// eth_estimateGas without a block runs at pending (as api's defaults say).
	f.Route(public, local, func(method string, p rpc.Params) bool { return method == "eth_estimateGas" && !p.Present(1) })
	call := func(method string, params ...string) (string, error) {
		h, ok := public.Lookup(method)
		if !ok {
			t.Fatalf("%s not registered", method)
		}
		p := make(rpc.Params, len(params))
		for i, s := range params {
			p[i] = json.RawMessage(s)
		}
		v, err := h(context.Background(), p)
		if err != nil {
			return "", err
		}
		if raw, ok := v.(json.RawMessage); ok {
			return string(raw), nil
		}
		b, _ := json.Marshal(v)
		return string(b), nil
	}
	addr := `"0x00000000000000000000000000000000000000aa"`
	hash := `"0x1111111111111111111111111111111111111111111111111111111111111111"`
	zero := `"0x0000000000000000000000000000000000000000000000000000000000000000"`

	if v, _ := call("eth_getBalance", addr, `"pending"`); v != `"local"` {
		t.Fatalf("pending read not local: %s", v)
	}
	if v, _ := call("eth_getBalance", addr, `"latest"`); v != `"0x2a"` || up.count("eth_getBalance") != 1 {
		t.Fatalf("latest read not forwarded: %s", v)
	}
	if v, _ := call("eth_chainId"); v != `"local"` {
		t.Fatalf("eth_chainId: %s", v)
	}
	// a block defaulting to pending is answered here; a named one upstream
	if v, _ := call("eth_estimateGas", `{"to":`+addr+`}`); v != `"local"` {
		t.Fatalf("eth_estimateGas without a block: %s", v)
	}
	if v, _ := call("eth_estimateGas", `{"to":`+addr+`}`, `"latest"`); v != `"0x2a"` || up.count("eth_estimateGas") != 1 {
		t.Fatalf("eth_estimateGas at latest not forwarded: %s", v)
	}
	// immutable answers are cached, null ones are not
	for range 3 {
		if v, _ := call("eth_getBlockByHash", hash, "false"); !strings.Contains(v, `"number":"0x1"`) {
			t.Fatalf("block by hash: %s", v)
		}
	}
	if n := up.count("eth_getBlockByHash"); n != 1 {
		t.Fatalf("%d upstream calls for one cached block", n)
	}
	call("eth_getBlockByHash", zero, "false")
	call("eth_getBlockByHash", zero, "false")
	if n := up.count("eth_getBlockByHash"); n != 3 {
		t.Fatalf("null answers cached: %d calls", n)
	}
	// a receipt of a transaction that is not pre-confirmed is forwarded
	if v, _ := call("eth_getTransactionReceipt", hash); v != `"0x2a"` {
		t.Fatalf("receipt: %s", v)
	}
	// methods only the upstream has are forwarded, errors keep their code and data
	_, err = call("eth_sendRawTransaction", `"0x02"`)
	var ce *rpc.CodedError
	if !errors.As(err, &ce) || ce.Code != -32000 || ce.Msg != "nonce too low" {
		t.Fatalf("forwarded error: %#v", err)
	}
	if localCalls != 3 {
		t.Fatalf("%d local calls, want 3", localCalls)
	}
	// a dead upstream: a clear error
	srv.Close()
	if _, err := call("eth_getBalance", addr, `"latest"`); err == nil || !strings.Contains(err.Error(), "upstream unavailable") {
		t.Fatalf("dead upstream: %v", err)
	}
}

// "latest" is the follower's head: forwarded calls naming it carry the
// head's number (the anchor: right after each seal a client read pending
// one block below a latest the follower forwarded to its upstream); a block
// the upstream does not have yet (a pool's node behind) falls back to its
// latest. Unknown methods are forwarded in the served namespaces, except
// the follower's own.
func TestRoutingLatestAndFallback(t *testing.T) {
	up := &fakeUpstream{calls: map[string]int{}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	f, err := New(Config{Upstream: srv.URL, Feed: "ws://127.0.0.1:1", Chain: chain.DevGenesis().Config}, new(pending.Source))
	if err != nil {
		t.Fatal(err)
	}
	f.setHead(&remote.Head{Header: &types.Header{Number: big.NewInt(5), Difficulty: new(big.Int)}})
	local := rpc.NewServer(rpc.Options{})
	for _, m := range []string{"eth_getBalance", "eth_getBlockByNumber", "eth_getLogs"} {
		local.Register(m, func(context.Context, rpc.Params) (any, error) { return "local", nil })
	}
	public := rpc.NewServer(rpc.Options{Namespaces: []string{"eth", "debug", "wallet"}})
	f.Route(public, local, nil)
	call := func(method string, params ...string) string {
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":[` + strings.Join(params, ",") + `]}`
		return string(public.Handle(context.Background(), []byte(body)))
	}
	addr := `"0x00000000000000000000000000000000000000aa"`
	call("eth_getBalance", addr, `"latest"`)
	if got := up.last("eth_getBalance"); got != `[`+addr+`,"0x5"]` {
		t.Fatalf("latest forwarded as %s", got)
	}
	call("eth_getLogs", `{"fromBlock":"0x1","toBlock":"latest"}`)
	if got := up.last("eth_getLogs"); got != `[{"fromBlock":"0x1","toBlock":"0x5"}]` {
		t.Fatalf("eth_getLogs forwarded as %s", got)
	}
	if got := call("eth_getBlockByNumber", `"latest"`, "false"); !strings.Contains(got, `"0x5"`) {
		t.Fatalf("latest block: %s", got)
	}
	f.setHead(&remote.Head{Header: &types.Header{Number: big.NewInt(7), Difficulty: new(big.Int)}})
	if got := call("eth_getBlockByNumber", `"latest"`, "false"); !strings.Contains(got, `"latest"`) || up.count("eth_getBlockByNumber") != 3 {
		t.Fatalf("a head the upstream lacks did not fall back to its latest: %s (%d calls)", got, up.count("eth_getBlockByNumber"))
	}
	if got := call("eth_blockNumber"); !strings.Contains(got, `"result":"0x7"`) || up.count("eth_blockNumber") != 0 {
		t.Fatalf("eth_blockNumber: %s, %d forwarded", got, up.count("eth_blockNumber"))
	}
	if got := call("eth_somethingNew", `"x"`); !strings.Contains(got, `"result":"0x2a"`) || up.last("eth_somethingNew") != `["x"]` {
		t.Fatalf("unknown eth_ method not forwarded: %s", got)
	}
	if got := call("debug_somethingNew"); !strings.Contains(got, `"result":"0x2a"`) {
		t.Fatalf("unknown debug_ method not forwarded: %s", got)
	}
	for _, m := range []string{"txpool_content", "admin_addPeer", "wallet_somethingNew"} {
		if got := call(m); !strings.Contains(got, "-32601") || up.count(m) != 0 {
			t.Fatalf("%s (namespace not served, unknown or the follower's own): %s", m, got)
		}
	}
}

// BenchmarkRouter is what the follower's routing adds to a local call
// (eth_getBalance and eth_getStorageAt at "pending"): the router against
// calling the local handler directly.
func BenchmarkRouter(b *testing.B) {
	local := func(context.Context, rpc.Params) (any, error) { return nil, nil }
	f := &Follower{}
	r := f.router("eth_getBalance", local, newLRU[string, json.RawMessage](1), nil)
	calls := map[string]rpc.Params{
		"balance": {[]byte(`"0x70997970c51812dc3a010c7d01b50e0d17dc79c8"`), []byte(`"pending"`)},
		"storage": {[]byte(`"0x70997970c51812dc3a010c7d01b50e0d17dc79c8"`), []byte(`"0x0000000000000000000000000000000000000000000000000000000000000003"`), []byte(`"pending"`)},
	}
	ctx := context.Background()
	for name, p := range calls {
		b.Run(name+"/direct", func(b *testing.B) {
			for b.Loop() {
				local(ctx, p)
			}
		})
		b.Run(name+"/routed", func(b *testing.B) {
			for b.Loop() {
				r(ctx, p)
			}
		})
	}
}

func TestMentionsPending(t *testing.T) {
	for _, tc := range []struct {
		params []string
		want   bool
	}{
		{nil, false},
		{[]string{`"0x01"`, `"pending"`}, true},
		{[]string{`"pending"`, `"0x01"`}, true},
		{[]string{`{"to":"0x01"}`, `{"blockNumber":"pending"}`}, true},
		{[]string{`"0x01"`, ` "pending" `}, true},
		{[]string{`"0x01"`, `"latest"`}, false},
		{[]string{`"0x01"`, `"pendingX"`}, false},
		{[]string{`"0x01"`, `pending`}, false},
	} {
		p := make(rpc.Params, len(tc.params))
		for i, s := range tc.params {
			p[i] = []byte(s)
		}
		if got := mentionsPending(p); got != tc.want {
			t.Errorf("mentionsPending(%v) = %v, want %v", tc.params, got, tc.want)
		}
	}
}
