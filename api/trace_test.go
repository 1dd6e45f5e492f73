package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/conformance"
	"github.com/preconf/preconf/internal/peers"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
)

// traceNode is an API over a chain, served by an in-process RPC server.
type traceNode struct {
	srv   *rpc.Server
	chain *chain.Chain
	src   *pending.Source
}

// rpcAnswer is one JSON-RPC response.
type rpcAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (n *traceNode) call(t *testing.T, method string, params ...any) rpcAnswer {
	t.Helper()
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	var ans rpcAnswer
	if err := json.Unmarshal(n.srv.Handle(context.Background(), req), &ans); err != nil {
		t.Fatal(err)
	}
	return ans
}

// result calls method and fails the test on an error answer.
func (n *traceNode) result(t *testing.T, method string, params ...any) json.RawMessage {
	t.Helper()
	ans := n.call(t, method, params...)
	if ans.Error != nil {
		t.Fatalf("%s %v: error %d %s", method, params, ans.Error.Code, ans.Error.Message)
	}
	return ans.Result
}

// fixtureBlock is a block of the fixture chain and its RLP encoding.
type fixtureBlock struct {
	*types.Block
	raw []byte
}

// fixtureBlocks reads the execution-apis chain (blocks 1…head); without the
// fixtures it skips, or fails under CI (conformance.Fixtures).
func fixtureBlocks(t *testing.T) (genesisFile string, blocks []fixtureBlock) {
	t.Helper()
	dir := conformance.Fixtures(t)
	f, err := os.Open(filepath.Join(dir, "chain.rlp"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := rlp.NewStream(f, 0)
	for {
		raw, err := s.Raw()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		b := new(types.Block)
		if err := rlp.DecodeBytes(raw, b); err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, fixtureBlock{b, raw})
	}
	return filepath.Join(dir, "genesis.json"), blocks
}

// openTraceNode opens the fixture chain with the given blocks imported.
func openTraceNode(t *testing.T, genesisFile string, blocks []fixtureBlock) *traceNode {
	t.Helper()
	g, err := chain.LoadGenesis(genesisFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := chain.Open(chain.Config{Genesis: g})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var file []byte
	for _, b := range blocks {
		file = append(file, b.raw...)
	}
	if _, err := c.Import(bytes.NewReader(file)); err != nil {
		t.Fatal(err)
	}
	src := new(pending.Source)
	srv := rpc.NewServer(rpc.Options{})
	methods, err := api.New(api.Local(c), api.Config{Pending: src})
	if err != nil {
		t.Fatal(err)
	}
	methods.Register(srv)
	return &traceNode{srv: srv, chain: c, src: src}
}

// postBody posts a JSON-RPC request body and returns the response body.
func postBody(t *testing.T, client *http.Client, url string, body []byte) []byte {
	t.Helper()
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// startFixtureNode serves the fixture chain with a node on a free port.
func startFixtureNode(t *testing.T, genesisFile, chainFile string) *node.Node {
	t.Helper()
	g, err := chain.LoadGenesis(genesisFile)
	if err != nil {
		t.Fatal(err)
	}
	// The comparisons are of answers, not speed: a request deadline
	// longer than the default 5 s, so that a machine loaded by the rest of
	// the suite under -race does not turn a slow trace into -32002
	// (seen: 2 of 1,895 at a load average of 20).
	n, err := node.New(node.Config{Genesis: g, Imports: []string{chainFile}, RPCTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	return n
}

// busiestBlock is the index (in blocks) of the last block with the most
// transactions.
func busiestBlock(blocks []fixtureBlock) int {
	best := 0
	for i, b := range blocks {
		if len(b.Transactions()) >= len(blocks[best].Transactions()) {
			best = i
		}
	}
	return best
}

// traceConfigs are the tracer options every comparison runs with.
var traceConfigs = []map[string]any{
	nil,
	{"enableMemory": true, "enableReturnData": true},
	{"disableStack": true, "disableStorage": true},
	{"tracer": "callTracer"},
	{"tracer": "callTracer", "tracerConfig": map[string]any{"withLog": true}},
	{"tracer": "prestateTracer"},
	{"tracer": "prestateTracer", "tracerConfig": map[string]any{"diffMode": true}},
	{"tracer": "4byteTracer"},
	{"tracer": "noopTracer"},
	{"tracer": "flatCallTracer"},
	{"tracer": "muxTracer", "tracerConfig": map[string]any{"callTracer": map[string]any{"onlyTopCall": true}, "4byteTracer": nil}},
}

func withConfig(params []any, cfg map[string]any) []any {
	if cfg == nil {
		return params
	}
	return append(params, cfg)
}

// TestTracePendingMatchesSealed publishes the busiest block of the fixture
// chain as the pending block over its parent, and requires every trace of
// it — by transaction, by block number, by block hash, and calls at a
// transaction index — to equal the trace of the same block once sealed.
func TestTracePendingMatchesSealed(t *testing.T) {
	genesisFile, blocks := fixtureBlocks(t)
	k := busiestBlock(blocks)
	target := blocks[k]
	if len(target.Transactions()) < 2 {
		t.Fatalf("busiest block has %d transactions", len(target.Transactions()))
	}
	sealed := openTraceNode(t, genesisFile, blocks[:k+1])
	pend := openTraceNode(t, genesisFile, blocks[:k])
	parent := pend.chain.Head()
	if parent.Hash() != target.ParentHash() {
		t.Fatalf("head %s is not the target's parent %s", parent.Hash(), target.ParentHash())
	}
	pend.src.Publish(&pending.Snapshot{Parent: parent, Header: target.Header(), Txs: target.Transactions()})

	number := hexutil.EncodeUint64(target.NumberU64())
	// The struct logger, and tracers that read state before and after.
	for _, cfg := range []map[string]any{traceConfigs[0], traceConfigs[3], traceConfigs[6], traceConfigs[10]} {
		name := "structLogger"
		if cfg != nil {
			b, _ := json.Marshal(cfg)
			name = string(b)
		}
		t.Run(name, func(t *testing.T) {
			want := sealed.result(t, "debug_traceBlockByNumber", withConfig([]any{number}, cfg)...)
			if got := pend.result(t, "debug_traceBlockByNumber", withConfig([]any{"pending"}, cfg)...); !bytes.Equal(got, want) {
				t.Errorf("pending block trace differs:\n got %.400s\nwant %.400s", got, want)
			}
			if got := pend.result(t, "debug_traceBlockByHash", withConfig([]any{target.Hash()}, cfg)...); !bytes.Equal(got, want) {
				t.Errorf("pending block trace by hash differs:\n got %.400s\nwant %.400s", got, want)
			}
			var perTx []struct {
				TxHash common.Hash     `json:"txHash"`
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(want, &perTx); err != nil || len(perTx) != len(target.Transactions()) {
				t.Fatalf("block trace %.200s: %v", want, err)
			}
			for i, tx := range target.Transactions() {
				if perTx[i].TxHash != tx.Hash() {
					t.Errorf("entry %d is %s, want %s", i, perTx[i].TxHash, tx.Hash())
				}
				// Each replays the transactions before it: the first, one
				// in the middle and the last are enough.
				if i != 0 && i != len(perTx)/2 && i != len(perTx)-1 {
					continue
				}
				txWant := sealed.result(t, "debug_traceTransaction", withConfig([]any{tx.Hash()}, cfg)...)
				if !bytes.Equal(txWant, perTx[i].Result) {
					t.Errorf("tx %d: traceTransaction differs from the block's entry", i)
				}
				if got := pend.result(t, "debug_traceTransaction", withConfig([]any{tx.Hash()}, cfg)...); !bytes.Equal(got, txWant) {
					t.Errorf("tx %d: pre-confirmed trace differs:\n got %.400s\nwant %.400s", i, got, txWant)
				}
			}
		})
	}

	// A call replaying the last transaction at its own index sees the same
	// state as the transaction did.
	last := len(target.Transactions()) - 1
	tx := target.Transactions()[last]
	from, err := types.Sender(types.LatestSigner(pend.chain.Config()), tx)
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"from": from, "to": tx.To(), "input": hexutil.Bytes(tx.Data()), "value": (*hexutil.Big)(tx.Value()), "gas": hexutil.Uint64(tx.Gas())}
	cfg := map[string]any{"tracer": "callTracer", "txIndex": hexutil.Uint(last)}
	want := sealed.result(t, "debug_traceCall", args, number, cfg)
	if got := pend.result(t, "debug_traceCall", args, "pending", cfg); !bytes.Equal(got, want) {
		t.Errorf("traceCall at a pending index differs:\n got %s\nwant %s", got, want)
	}
}

// TestTraceCall checks debug_traceCall's options on the head of the
// fixture chain: state overrides, the BLOCKHASH view of a number override
// to head+1, and the call's result in the struct logger.
func TestTraceCall(t *testing.T) {
	genesisFile, blocks := fixtureBlocks(t)
	n := openTraceNode(t, genesisFile, blocks)
	head := n.chain.Head()
	probe := common.HexToAddress("0x00000000000000000000000000000000000b10c4")
	// PUSH8 head; BLOCKHASH; PUSH1 0; MSTORE; PUSH1 32; PUSH1 0; RETURN
	code := hexutil.Bytes(append(append([]byte{0x67}, common.BigToHash(head.Number).Bytes()[24:]...), 0x40, 0x60, 0x00, 0x52, 0x60, 0x20, 0x60, 0x00, 0xf3))
	overrides := map[string]any{probe.Hex(): map[string]any{"code": code}}
	next := hexutil.EncodeUint64(head.Number.Uint64() + 1)
	for _, tc := range []struct {
		name string
		cfg  map[string]any
		want common.Hash
	}{
		// BLOCKHASH of the current block itself is zero.
		{"at head", map[string]any{"stateOverrides": overrides}, common.Hash{}},
		// At head+1 the head is the previous block: its hash is visible.
		{"number override", map[string]any{"stateOverrides": overrides, "blockOverrides": map[string]any{"number": next}}, head.Hash()},
	} {
		out := n.result(t, "debug_traceCall", map[string]any{"to": probe}, "latest", tc.cfg)
		var res struct {
			Failed      bool          `json:"failed"`
			ReturnValue hexutil.Bytes `json:"returnValue"`
			StructLogs  []struct {
				Op string `json:"op"`
			} `json:"structLogs"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		if res.Failed || common.BytesToHash(res.ReturnValue) != tc.want || len(res.StructLogs) != 7 || res.StructLogs[1].Op != "BLOCKHASH" {
			t.Errorf("%s: %s, want return value %s", tc.name, out, tc.want)
		}
	}

	// callTracer sees the overridden code and the call's input.
	out := n.result(t, "debug_traceCall", map[string]any{"to": probe, "input": "0x1234"}, "latest",
		map[string]any{"tracer": "callTracer", "stateOverrides": overrides})
	var frame struct {
		Type, To, Input, Output string
	}
	if err := json.Unmarshal(out, &frame); err != nil {
		t.Fatal(err)
	}
	if frame.Type != "CALL" || !strings.EqualFold(frame.To, probe.Hex()) || frame.Input != "0x1234" || frame.Output != hexutil.Encode(make([]byte, 32)) {
		t.Errorf("callTracer frame %s", out)
	}
}

// TestTraceErrors checks the error answers (go-ethereum's texts and codes).
func TestTraceErrors(t *testing.T) {
	genesisFile, blocks := fixtureBlocks(t)
	n := openTraceNode(t, genesisFile, blocks)
	tx := blocks[busiestBlock(blocks)].Transactions()[0]
	unknown := common.HexToHash("0x01")
	for _, tc := range []struct {
		method string
		params []any
		code   int
		msg    string
	}{
		{"debug_traceTransaction", []any{unknown}, -32000, "transaction not found"},
		{"debug_traceBlockByHash", []any{unknown}, -32000, "block " + unknown.Hex() + " not found"},
		{"debug_traceBlockByNumber", []any{"0x0"}, -32000, "genesis is not traceable"},
		{"debug_traceBlockByNumber", []any{"0x10000"}, -32000, "block #65536 not found"},
		{"debug_traceBlockByNumber", []any{}, -32602, "missing value for required argument 0"},
		{"debug_traceBlockByNumber", []any{"0x1", nil, 1}, -32602, "too many arguments, want at most 2"},
		{"debug_traceTransaction", []any{tx.Hash(), map[string]any{"tracer": "nope"}}, -32000, `tracer "nope" not found (JavaScript tracers are not supported)`},
		{"debug_traceTransaction", []any{tx.Hash(), map[string]any{"tracer": "muxTracer", "tracerConfig": map[string]any{"nope": nil}}}, -32000, `tracer "nope" not found (JavaScript tracers are not supported)`},
		{"debug_traceTransaction", []any{tx.Hash(), map[string]any{"timeout": "soon"}}, -32000, `time: invalid duration "soon"`},
		{"debug_traceTransaction", []any{tx.Hash(), map[string]any{"timeout": "1ns"}}, -32000, "execution timeout"},
		{"debug_traceCall", []any{map[string]any{}}, -32602, "missing value for required argument 1"},
		{"debug_traceCall", []any{map[string]any{}, "latest", map[string]any{"txIndex": "0x999"}}, -32000,
			fmt.Sprintf("transaction index 2457 out of range for block %#x", n.chain.Head().Hash())},
		{"debug_traceCall", []any{map[string]any{"gasPrice": "0x1", "maxFeePerGas": "0x1"}, "latest"}, -32000,
			"both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified"},
	} {
		ans := n.call(t, tc.method, tc.params...)
		if ans.Error == nil || ans.Error.Code != tc.code || ans.Error.Message != tc.msg {
			t.Errorf("%s %v = %s %+v, want %d %q", tc.method, tc.params, ans.Result, ans.Error, tc.code, tc.msg)
		}
	}
}

// TestTraceAgainstGeth requires byte-identical traces from this node and
// go-ethereum (PRECONF_GETH) for every transaction of the fixture chain
// under every tracer configuration, and for calls at several blocks.
func TestTraceAgainstGeth(t *testing.T) {
	genesisFile, blocks := fixtureBlocks(t)
	gethBin := peers.GethForTest(t)
	chainFile := filepath.Join(filepath.Dir(genesisFile), "chain.rlp")
	gethURL := startGeth(t, gethBin, genesisFile, chainFile)
	nd := startFixtureNode(t, genesisFile, chainFile)
	config := nd.Chain.Config()
	client := conformance.NewClient()
	post := func(url, method string, params ...any) []byte {
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		if err != nil {
			t.Fatal(err)
		}
		return postBody(t, client, url, body)
	}
	compared, errorAnswers, signer := 0, 0, types.LatestSigner(config)
	same := func(method string, params ...any) {
		t.Helper()
		want, got := post(gethURL, method, params...), post(nd.URL(), method, params...)
		var w, g bytes.Buffer
		if json.Compact(&w, want) != nil || json.Compact(&g, got) != nil {
			t.Fatalf("%s %v: invalid JSON", method, params)
		}
		compared++
		if sameErrorCode(want, got) {
			errorAnswers++
			return
		}
		if !bytes.Equal(w.Bytes(), g.Bytes()) {
			t.Errorf("%s %v:\n got %.600s\nwant %.600s", method, params, g.Bytes(), w.Bytes())
		}
	}
	for _, b := range blocks {
		if len(b.Transactions()) == 0 {
			continue
		}
		for _, cfg := range traceConfigs {
			same("debug_traceBlockByNumber", withConfig([]any{hexutil.EncodeUint64(b.NumberU64())}, cfg)...)
		}
		same("debug_traceBlockByHash", b.Hash(), map[string]any{"tracer": "callTracer"})
		for _, tx := range b.Transactions() {
			same("debug_traceTransaction", tx.Hash(), map[string]any{"tracer": "callTracer", "tracerConfig": map[string]any{"withLog": true}})
			same("debug_traceTransaction", tx.Hash(), map[string]any{"tracer": "prestateTracer", "tracerConfig": map[string]any{"diffMode": true}})
		}
		// Each transaction replayed as a call on the state before it.
		for i, tx := range b.Transactions() {
			from, err := types.Sender(signer, tx)
			if err != nil {
				t.Fatal(err)
			}
			args := map[string]any{"from": from, "to": tx.To(), "input": hexutil.Bytes(tx.Data()), "value": (*hexutil.Big)(tx.Value()), "gas": hexutil.Uint64(tx.Gas())}
			same("debug_traceCall", args, hexutil.EncodeUint64(b.NumberU64()), map[string]any{"txIndex": hexutil.Uint(i)})
			same("debug_traceCall", args, b.Hash(), map[string]any{"tracer": "callTracer", "txIndex": hexutil.Uint(i)})
			same("debug_traceCall", args, "latest", map[string]any{"tracer": "prestateTracer"})
		}
	}
	same("debug_traceBlockByNumber", "0x0")
	same("debug_traceTransaction", common.HexToHash("0x01"))
	t.Logf("%d requests compared: %d identical results, %d errors with the same code", compared, compared-errorAnswers, errorAnswers)
	if errorAnswers > 2 {
		t.Errorf("%d error answers; want only the two error cases", errorAnswers)
	}
}
