package follower

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
)

// fakeUpstream answers JSON-RPC by method and counts the calls.
type fakeUpstream struct {
	mu    sync.Mutex
	calls map[string]int
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
	u.mu.Unlock()
	switch req.Method {
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
