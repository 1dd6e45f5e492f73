package follower_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/follower"
	"github.com/preconf/preconf/node"
)

func followNode(t *testing.T, upstream, feedURL string, config *params.ChainConfig) *node.Node {
	t.Helper()
	fn, err := node.New(node.Config{HTTPAddr: "127.0.0.1", Follow: &follower.Config{
		Upstream: upstream, Feed: feedURL, Chain: config,
		PollInterval: 20 * time.Millisecond, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		UpstreamTimeout: 2 * time.Second,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := fn.Start(nil); err != nil {
		fn.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { fn.Close() })
	return fn
}

// rawResult is one call's raw result (or its error text).
func rawResult(url, method string, params ...any) string {
	var raw json.RawMessage
	if err := rpcCall(url, &raw, method, params...); err != nil {
		return "error: " + err.Error()
	}
	return string(raw)
}

// pendingCalls are compared between the sequencer and the followers.
func pendingCalls(lastTx common.Hash) [][]any {
	addrs, slots := watched()
	var calls [][]any
	for _, a := range addrs[:8] {
		calls = append(calls, []any{"eth_getBalance", a, "pending"}, []any{"eth_getTransactionCount", a, "pending"})
	}
	for _, k := range slots {
		calls = append(calls, []any{"eth_getStorageAt", store, k, "pending"})
	}
	from := addrs[0]
	calls = append(calls,
		[]any{"eth_getCode", store, "pending"},
		[]any{"eth_getAccountInfo", store, "pending"},
		[]any{"eth_getAccountInfo", from, "pending"},
		[]any{"eth_getStorageValues", map[common.Address][]common.Hash{store: slots}, "pending"},
		[]any{"eth_getTransactionByHash", lastTx},
		[]any{"eth_getTransactionReceipt", lastTx},
		[]any{"eth_call", map[string]any{"from": from, "to": store, "data": hexutil.Bytes(make([]byte, 64))}, "pending"},
		[]any{"eth_estimateGas", map[string]any{"from": from, "to": addrs[1], "value": "0x1"}, "pending"},
		[]any{"eth_simulateV1", map[string]any{"blockStateCalls": []any{map[string]any{"calls": []any{map[string]any{"from": from, "to": store, "data": hexutil.Bytes(append(common.Hash{31: 3}.Bytes(), common.Hash{31: 7}.Bytes()...))}}}}}, "pending"},
		[]any{"eth_chainId"},
		[]any{"eth_getBlockByNumber", "pending", true},
		[]any{"eth_getBlockReceipts", "pending"},
		[]any{"eth_getBlockTransactionCountByNumber", "pending"},
		[]any{"eth_getLogs", map[string]any{"fromBlock": "pending", "toBlock": "pending", "address": store}},
	)
	return calls
}

func compareAll(urls []string, calls [][]any) error {
	for _, c := range calls {
		method := c[0].(string)
		want := rawResult(urls[0], method, c[1:]...)
		if strings.HasPrefix(want, "error") && method != "eth_simulateV1" {
			return fmt.Errorf("sequencer %s: %s", method, want)
		}
		for _, u := range urls[1:] {
			if got := rawResult(u, method, c[1:]...); got != want {
				at := 0
				for at < len(got) && at < len(want) && got[at] == want[at] {
					at++
				}
				from := max(at-200, 0)
				return fmt.Errorf("%s%v on %s, from byte %d:\n got %.400s\nwant %.400s", method, c[1:], u, from, got[from:], want[from:])
			}
		}
	}
	return nil
}

// TestFollowNodesServeTheInterface starts a sequencing dev node and two
// follow-mode nodes on loopback, streams transactions, and checks that
// pending-aware calls (state reads, pre-confirmed transactions and receipts,
// eth_call/estimateGas/simulateV1 at pending) answer exactly as the
// sequencer does, that sealed reads are forwarded, that subscriptions work,
// and that a dead upstream gives a clear error and then recovers.
func TestFollowNodesServeTheInterface(t *testing.T) {
	seq, feedURL := sequencerNode(t, time.Second, 100*time.Millisecond)
	up := newSwitchProxy(t, seq.URL())
	f1 := followNode(t, seq.URL(), feedURL+"?replay=block", seq.Chain.Config())
	f2 := followNode(t, up.srv.URL, feedURL+"?compress=brotli", seq.Chain.Config())
	urls := []string{seq.URL(), f1.URL(), f2.URL()}

	// a newFlashblocks subscription on a follower
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(f1.URL(), "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(16 << 20)
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newFlashblocks"]}`)); err != nil {
		t.Fatal(err)
	}

	s := newSender(t, seq.URL(), seq.Chain.Config().ChainID, 4)
	var n uint64
	for round := range 4 {
		var last common.Hash
		for range 12 {
			n++
			if err := s.send(int(n)%len(s.keys), n%3 == 0, n); err != nil {
				t.Fatal(err)
			}
		}
		last = s.last
		calls := pendingCalls(last)
		deadline := time.Now().Add(30 * time.Second)
		for rawResult(seq.URL(), "eth_getTransactionReceipt", last) == "null" { // pre-confirmed on the sequencer first
			if time.Now().After(deadline) {
				t.Fatalf("round %d: transaction %s never pre-confirmed", round, last)
			}
			time.Sleep(5 * time.Millisecond)
		}
		for {
			err := compareAll(urls, calls)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %v", round, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// the follower's sealed-chain backend agrees with the sequencer's chain
	waitFor(t, "a sealed block with transactions", 30*time.Second, func() bool {
		for n := uint64(1); n <= seq.Chain.Head().Number.Uint64(); n++ {
			if len(seq.Chain.BlockByNumber(n).Transactions()) > 0 {
				return true
			}
		}
		return false
	})
	be := f1.Follower.Backend()
	if g := be.Genesis(); g == nil || g.Hash() != seq.Chain.Genesis().Hash() {
		t.Fatalf("genesis %v", g)
	}
	for n := uint64(1); n <= seq.Chain.Head().Number.Uint64(); n++ {
		want := seq.Chain.BlockByNumber(n)
		got := be.BlockByNumber(n)
		if got == nil || got.Hash() != want.Hash() || !be.IsCanonical(got.Header()) || be.HeaderByHash(want.Hash()) == nil {
			t.Fatalf("block %d: %v", n, got)
		}
		wr, gr := seq.Chain.Receipts(want), be.Receipts(got)
		if len(wr) != len(gr) {
			t.Fatalf("block %d: %d receipts, want %d", n, len(gr), len(wr))
		}
		for i := range wr {
			a, _ := json.Marshal(wr[i])
			b, _ := json.Marshal(gr[i])
			if string(a) != string(b) {
				t.Fatalf("block %d receipt %d:\n got %s\nwant %s", n, i, b, a)
			}
			tx, bh, num, idx, ok := be.TxLookup(wr[i].TxHash)
			if !ok || tx.Hash() != wr[i].TxHash || bh != want.Hash() || num != n || idx != uint64(i) {
				t.Fatalf("tx lookup %s: %v %s %d %d", wr[i].TxHash, ok, bh, num, idx)
			}
		}
	}
	if r, err := be.StateReader(be.Head().Root); err != nil {
		t.Fatal(err)
	} else if a, err := r.Account(s.keys0()); err != nil || a == nil {
		t.Fatalf("state reader: %v %v", a, err)
	}

	// sealed reads are forwarded: identical to the upstream's
	var head hexutil.Uint64
	if err := rpcCall(seq.URL(), &head, "eth_blockNumber"); err != nil {
		t.Fatal(err)
	}
	for _, m := range [][]any{{"eth_getBlockByNumber", hexutil.Uint64(1), true}, {"eth_getBlockReceipts", hexutil.Uint64(1)}, {"eth_getHeaderByNumber", hexutil.Uint64(1)}} {
		want := rawResult(seq.URL(), m[0].(string), m[1:]...)
		for _, u := range urls[1:] {
			if got := rawResult(u, m[0].(string), m[1:]...); got != want {
				t.Fatalf("%s on %s: got %.200s want %.200s", m[0], u, got, want)
			}
		}
	}

	// the subscription delivered flashblocks
	got := 0
	for got < 3 {
		_, msg, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("subscription: %v after %d messages", err, got)
		}
		if strings.Contains(string(msg), `"eth_subscription"`) {
			got++
		}
	}

	// upstream down: a clear error from forwarded calls; then recovery
	up.down.Store(true)
	res := rawResult(f2.URL(), "eth_getBlockByNumber", "latest", false)
	if !strings.Contains(res, "upstream unavailable") {
		t.Fatalf("with the upstream down: %s", res)
	}
	up.down.Store(false)
	deadline := time.Now().Add(30 * time.Second)
	for strings.HasPrefix(rawResult(f2.URL(), "eth_getBlockByNumber", "latest", false), "error") {
		if time.Now().After(deadline) {
			t.Fatal("no recovery after the upstream came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get(f1.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`preconf_follower_flashblocks_total{outcome="accepted"} `, "preconf_follower_feed_connected 1",
		`preconf_follower_visible_latency_seconds_bucket{le="0.01"} `, "# TYPE preconf_follower_upstream_round_trip_seconds histogram",
		`preconf_rpc_requests_total{method="eth_getBlockByNumber"} `} {
		if !strings.Contains(string(metrics), want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, metrics)
		}
	}
	var st follower.Status
	if err := rpcCall(f1.URL(), &st, "follower_status"); err != nil {
		t.Fatal(err)
	}
	if st.Counters["unknown"] != 0 || st.Counters["gap"] != 0 { // ?replay=block: the current block from its index 0
		t.Errorf("follower with replay saw unknown/gap flashblocks: %v", st.Counters)
	}
	if st.Counters["published"] == 0 || st.Counters["block_hash_mismatch"] != 0 {
		t.Fatalf("status %+v", st)
	}
	t.Logf("follower1: latency %v, counters %v", st.LatencyMs, st.Counters)
}
