package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/conformance"
	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
)

// emitter is a contract that logs LOG2("emit", calldata[0:32]) with the
// 32 calldata bytes as data.
var (
	emitter     = common.HexToAddress("0x00000000000000000000000000000000000e0001")
	emitterCode = common.FromHex("0x6020600060003760005163656d697460206000a200")
	topicEmit   = common.BytesToHash([]byte("emit"))
	readsTip    = big.NewInt(3 * params.GWei)
)

func emitWord(i int) common.Hash { return common.BigToHash(big.NewInt(int64(1000 + i))) }

// readsFixture is a dev chain of four blocks; block i (1-based) holds a
// call to the emitter with emitWord(i) and a value transfer.
type readsFixture struct {
	api    *API
	chain  *chain.Chain
	src    *pending.Source
	blocks []*types.Block
}

func newReadsFixture(t testing.TB) *readsFixture {
	t.Helper()
	makeGenesis := func() *core.Genesis {
		g := chain.DevGenesis()
		g.Alloc[emitter] = types.Account{Code: emitterCode, Balance: new(big.Int)}
		return g
	}
	genesis := makeGenesis()
	signer := types.LatestSigner(genesis.Config)
	_, blocks, _ := core.GenerateChainWithGenesis(genesis, beacon.New(ethash.NewFaker()), 4, func(i int, g *core.BlockGen) {
		// The chain maker sets a parent beacon root but only runs the
		// EIP-4788 system call when asked to.
		g.SetParentBeaconRoot(common.Hash{})
		feeCap := new(big.Int).Add(g.BaseFee(), readsTip)
		word := emitWord(i + 1)
		for _, data := range []types.TxData{
			&types.DynamicFeeTx{ChainID: genesis.Config.ChainID, Nonce: g.TxNonce(testAddr), GasTipCap: readsTip, GasFeeCap: feeCap, Gas: 100000, To: &emitter, Data: word[:]},
			&types.DynamicFeeTx{ChainID: genesis.Config.ChainID, Nonce: g.TxNonce(testAddr) + 1, GasTipCap: readsTip, GasFeeCap: feeCap, Gas: 21000, To: &testTo, Value: big.NewInt(1)},
		} {
			tx, err := types.SignNewTx(testKey, signer, data)
			if err != nil {
				t.Fatal(err)
			}
			g.AddTx(tx)
		}
	})
	c, err := chain.Open(chain.Config{Genesis: makeGenesis()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var buf bytes.Buffer
	for _, b := range blocks {
		if err := rlp.Encode(&buf, b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Import(&buf); err != nil {
		t.Fatal(err)
	}
	src := new(pending.Source)
	return &readsFixture{api: mustNew(t, localChain{c}, Config{Pending: src}), chain: c, src: src, blocks: blocks}
}

// publishPending publishes a snapshot over the head holding one more
// emitter call (word 0xbeef) whose receipt carries its log.
func (f *readsFixture) publishPending(t testing.TB) (*pending.Snapshot, *types.Transaction) {
	t.Helper()
	parent := f.chain.Head()
	cfg := f.chain.Config()
	header := &types.Header{
		ParentHash: parent.Hash(), Number: new(big.Int).Add(parent.Number, common.Big1), GasLimit: parent.GasLimit,
		Time: parent.Time + 1, Difficulty: new(big.Int), BaseFee: big.NewInt(7), Coinbase: common.Address{0xfe},
	}
	word := common.HexToHash("0xbeef")
	tx, err := types.SignNewTx(testKey, types.LatestSigner(cfg), &types.DynamicFeeTx{
		ChainID: cfg.ChainID, Nonce: 8, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(100), Gas: 100000, To: &emitter, Data: word[:]})
	if err != nil {
		t.Fatal(err)
	}
	receipt := &types.Receipt{Type: tx.Type(), Status: 1, CumulativeGasUsed: 30000, GasUsed: 30000, TxHash: tx.Hash(),
		BlockNumber: header.Number, Logs: []*types.Log{{Address: emitter, Topics: []common.Hash{topicEmit, word}, Data: word[:],
			BlockNumber: header.Number.Uint64(), TxHash: tx.Hash()}}}
	receipt.Bloom = types.CreateBloom(receipt)
	snap := (&pending.Snapshot{Parent: parent, Header: header, Txs: types.Transactions{tx}, Receipts: types.Receipts{receipt}}).Seal()
	f.src.Publish(snap)
	return snap, tx
}

// call runs a handler with JSON parameters and returns its JSON answer.
func call(t *testing.T, h rpc.Handler, params ...string) (string, error) {
	t.Helper()
	p := make(rpc.Params, len(params))
	for i, s := range params {
		p[i] = json.RawMessage(s)
	}
	res, err := h(context.Background(), p)
	if err != nil {
		return "", err
	}
	if raw, ok := res.(json.RawMessage); ok {
		if !json.Valid(raw) {
			t.Fatalf("invalid JSON answer: %s", raw)
		}
		return string(raw), nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), nil
}

func mustCall(t *testing.T, h rpc.Handler, params ...string) string {
	t.Helper()
	out, err := call(t, h, params...)
	if err != nil {
		t.Fatalf("%v: %v", params, err)
	}
	return out
}

func field(t *testing.T, obj, key string) string {
	t.Helper()
	return string(decodeObject(t, []byte(obj))[key])
}

func quoted(s string) string { return `"` + s + `"` }

func TestBlockSelectors(t *testing.T) {
	f := newReadsFixture(t)
	a := f.api
	b2 := f.blocks[1]
	tests := []struct {
		name   string
		h      rpc.Handler
		params []string
		want   string // "" = check only that it is not null
		code   int    // expected error code (0 = no error)
	}{
		{"by number", a.getBlockByNumber, []string{`"0x2"`, `false`}, "", 0},
		{"by hash", a.getBlockByHash, []string{quoted(b2.Hash().Hex()), `true`}, "", 0},
		{"unknown number is null", a.getBlockByNumber, []string{`"0x9"`, `false`}, "null", 0},
		{"unknown hash is null", a.getBlockByHash, []string{quoted(common.Hash{1}.Hex()), `false`}, "null", 0},
		{"fullTx required", a.getBlockByNumber, []string{`"0x2"`}, "", rpc.CodeInvalidParams},
		{"null fullTx is false", a.getBlockByNumber, []string{`"0x2"`, `null`}, "", 0},
		{"null filter is latest", a.getLogs, []string{`null`}, "", 0},
		{"null proof keys", a.getProof, []string{quoted(testAddr.Hex()), `null`}, "", 0},
		{"no arguments taken", a.gasPrice, []string{`1`}, "", rpc.CodeInvalidParams},
		{"bad number", a.getBlockByNumber, []string{`"2"`, `false`}, "", rpc.CodeInvalidParams},
		{"too many args", a.getBlockByNumber, []string{`"0x2"`, `false`, `1`}, "", rpc.CodeInvalidParams},
		{"tx count", a.countHandler(numberParam, txCount), []string{`"0x2"`}, `"0x2"`, 0},
		{"tx count by hash", a.countHandler(hashParam, txCount), []string{quoted(b2.Hash().Hex())}, `"0x2"`, 0},
		{"tx count unknown", a.countHandler(numberParam, txCount), []string{`"0x99"`}, "null", 0},
		{"uncle count", a.countHandler(numberParam, uncleCount), []string{`"latest"`}, `"0x0"`, 0},
		{"uncle count by hash unknown", a.countHandler(hashParam, uncleCount), []string{quoted(common.Hash{2}.Hex())}, "null", 0},
		{"tx by index", a.txByIndex(numberParam), []string{`"0x2"`, `"0x1"`}, "", 0},
		{"tx by index past end", a.txByIndex(numberParam), []string{`"0x2"`, `"0x2"`}, "null", 0},
		{"tx by hash and index", a.txByIndex(hashParam), []string{quoted(b2.Hash().Hex()), `"0x0"`}, "", 0},
		{"receipts by number", a.getBlockReceipts, []string{`"0x2"`}, "", 0},
		{"receipts by EIP-1898 hash", a.getBlockReceipts, []string{`{"blockHash":"` + b2.Hash().Hex() + `","requireCanonical":true}`}, "", 0},
		{"receipts of unknown block", a.getBlockReceipts, []string{`"0x77"`}, "null", 0},
		{"raw header unknown number", a.rawEncoder("header #%d not found", rawHeader), []string{`"0x77"`}, `"0x"`, 0},
		{"raw block unknown hash", a.rawEncoder("block #%d not found", rawBody), []string{quoted(common.Hash{3}.Hex())}, "", rpc.CodeServer},
		{"raw receipts unknown hash", a.debugGetRawReceipts, []string{quoted(common.Hash{3}.Hex())}, "[]", 0},
		{"raw receipts unknown number", a.debugGetRawReceipts, []string{`"0x77"`}, "null", 0},
		{"raw tx unknown", a.debugGetRawTransaction, []string{quoted(common.Hash{3}.Hex())}, `"0x"`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := call(t, tc.h, tc.params...)
			if tc.code != 0 {
				var re rpc.Error
				if !errors.As(err, &re) || re.ErrorCode() != tc.code {
					t.Fatalf("got %s, %v; want error code %d", got, err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
			if tc.want == "" && got == "null" {
				t.Fatal("got null")
			}
		})
	}
	// The block selected by hash and by number is the same object.
	byNum := mustCall(t, a.getBlockByNumber, `"0x2"`, `true`)
	byHash := mustCall(t, a.getBlockByHash, quoted(b2.Hash().Hex()), `true`)
	if byNum != byHash {
		t.Errorf("by number and by hash differ:\n%s\n%s", byNum, byHash)
	}
	if got := field(t, byNum, "hash"); got != quoted(b2.Hash().Hex()) {
		t.Errorf("hash = %s", got)
	}
	// Without a snapshot, pending is latest.
	if p, l := mustCall(t, a.getBlockByNumber, `"pending"`, `false`), mustCall(t, a.getBlockByNumber, `"latest"`, `false`); p != l {
		t.Errorf("pending without snapshot differs from latest")
	}
}

func TestSealedTxAndReceipt(t *testing.T) {
	f := newReadsFixture(t)
	a := f.api
	tx := f.blocks[2].Transactions()[0]
	got := mustCall(t, a.getTransactionByHash, quoted(tx.Hash().Hex()))
	byIndex := mustCall(t, a.txByIndex(numberParam), `"0x3"`, `"0x0"`)
	if got != byIndex {
		t.Errorf("by hash and by index differ:\n%s\n%s", got, byIndex)
	}
	wantPrice := new(big.Int).Add(f.blocks[2].BaseFee(), readsTip)
	if p := field(t, got, "gasPrice"); p != string(ethjson.AppendBig(nil, wantPrice)) {
		t.Errorf("gasPrice = %s, want base fee + tip %s", p, wantPrice)
	}
	r := mustCall(t, a.getTransactionReceipt, quoted(tx.Hash().Hex()))
	for k, want := range map[string]string{
		"blockHash": quoted(f.blocks[2].Hash().Hex()), "blockNumber": `"0x3"`, "status": `"0x1"`,
		"effectiveGasPrice": string(ethjson.AppendBig(nil, wantPrice)), "from": quoted(strings.ToLower(testAddr.Hex())),
	} {
		if g := field(t, r, k); g != want {
			t.Errorf("receipt %s = %s, want %s", k, g, want)
		}
	}
	all := mustCall(t, a.getBlockReceipts, `"0x3"`)
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(all), &list); err != nil || len(list) != 2 || string(list[0]) != r {
		t.Errorf("block receipts[0] differs from the receipt by hash: %s", all)
	}
	if got := mustCall(t, a.getTransactionReceipt, quoted(common.Hash{9}.Hex())); got != "null" {
		t.Errorf("unknown receipt = %s", got)
	}
	raw := mustCall(t, a.debugGetRawTransaction, quoted(tx.Hash().Hex()))
	enc, _ := tx.MarshalBinary()
	if raw != string(ethjson.AppendHexBytes(nil, enc)) {
		t.Errorf("raw tx = %s", raw)
	}
}

func TestPendingReads(t *testing.T) {
	f := newReadsFixture(t)
	a := f.api
	snap, tx := f.publishPending(t)
	pendingHash := snap.Block().Hash()

	blk := mustCall(t, a.getBlockByNumber, `"pending"`, `true`)
	for k, want := range map[string]string{"hash": "null", "miner": "null", "nonce": "null", "number": `"0x5"`} {
		if g := field(t, blk, k); g != want {
			t.Errorf("pending block %s = %s, want %s", k, g, want)
		}
	}
	var txs []json.RawMessage
	if err := json.Unmarshal([]byte(field(t, blk, "transactions")), &txs); err != nil || len(txs) != 1 {
		t.Fatalf("pending transactions: %v", err)
	}
	byHash := mustCall(t, a.getTransactionByHash, quoted(tx.Hash().Hex()))
	if byHash != string(txs[0]) {
		t.Errorf("pre-confirmed tx by hash differs from the pending block's:\n%s\n%s", byHash, txs[0])
	}
	for k, want := range map[string]string{"blockHash": quoted(pendingHash.Hex()), "blockNumber": `"0x5"`, "transactionIndex": `"0x0"`, "gasPrice": `"0x8"`} {
		if g := field(t, byHash, k); g != want {
			t.Errorf("pre-confirmed tx %s = %s, want %s", k, g, want)
		}
	}
	r := mustCall(t, a.getTransactionReceipt, quoted(tx.Hash().Hex()))
	for k, want := range map[string]string{"blockHash": quoted(pendingHash.Hex()), "blockNumber": `"0x5"`, "effectiveGasPrice": `"0x8"`} {
		if g := field(t, r, k); g != want {
			t.Errorf("pre-confirmed receipt %s = %s, want %s", k, g, want)
		}
	}
	if !strings.Contains(field(t, r, "logs"), `"blockHash":"`+pendingHash.Hex()+`"`) {
		t.Errorf("pre-confirmed log lacks the pending block hash: %s", field(t, r, "logs"))
	}
	if got := mustCall(t, a.getBlockReceipts, `"pending"`); got != "["+r+"]" {
		t.Errorf("pending block receipts = %s", got)
	}
	if got := mustCall(t, a.countHandler(numberParam, txCount), `"pending"`); got != `"0x1"` {
		t.Errorf("pending tx count = %s", got)
	}
	if _, err := call(t, a.getProof, quoted(testAddr.Hex()), `[]`, `"pending"`); err == nil {
		t.Error("proof at pending: want an error")
	}

	// A snapshot over an older head is stale: pending falls back to latest
	// and its transactions are no longer found.
	stale := *snap
	stale.Parent = f.chain.HeaderByNumber(3)
	f.src.Publish((&stale).Seal())
	if got := mustCall(t, a.getTransactionByHash, quoted(tx.Hash().Hex())); got != "null" {
		t.Errorf("tx of a stale snapshot = %s", got)
	}
	if got := field(t, mustCall(t, a.getBlockByNumber, `"pending"`, `false`), "number"); got != `"0x4"` {
		t.Errorf("pending over a stale snapshot = block %s", got)
	}
}

// TestPendingBlockFollowsTheSnapshot: the pending block objects are kept per
// snapshot: byte for byte what is written afresh (the kept view dropped),
// and a new snapshot answers its own block.
func TestPendingBlockFollowsTheSnapshot(t *testing.T) {
	f := newReadsFixture(t)
	a := f.api
	snap, _ := f.publishPending(t)
	next := *snap
	header := *snap.Header
	header.Time++
	next.Header = &header
	answers := map[string]string{}
	for i, s := range []*pending.Snapshot{snap, (&next).Seal()} {
		f.src.Publish(s)
		kept := map[string][]string{}
		for range 2 {
			for _, full := range []string{"false", "true"} {
				kept[full] = append(kept[full], mustCall(t, a.getBlockByNumber, `"pending"`, full))
			}
		}
		for _, full := range []string{"false", "true"} {
			a.cache.pending.Store(nil)
			fresh := mustCall(t, a.getBlockByNumber, `"pending"`, full)
			for _, got := range kept[full] {
				if got != fresh {
					t.Errorf("snapshot %d, full %s: kept\n%s\nwant\n%s", i, full, got, fresh)
				}
			}
			if want := fmt.Sprintf(`"0x%x"`, s.Header.Time); field(t, fresh, "timestamp") != want {
				t.Errorf("snapshot %d, full %s: timestamp %s, want %s", i, full, field(t, fresh, "timestamp"), want)
			}
			answers[fmt.Sprint(i, full)] = fresh
		}
	}
	if answers["0false"] == answers["1false"] || answers["0true"] == answers["1true"] {
		t.Error("a new snapshot answered the previous one's block")
	}
}

// executionAPIsChain opens the execution-apis test chain (pre-merge blocks
// with uncles, every transaction type); without the fixtures it skips, or
// fails under CI (conformance.Fixtures).
func executionAPIsChain(t *testing.T) (*API, *chain.Chain) {
	t.Helper()
	dir := conformance.Fixtures(t)
	g, err := chain.LoadGenesis(filepath.Join(dir, "genesis.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := chain.Open(chain.Config{Genesis: g})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.ImportFile(filepath.Join(dir, "chain.rlp")); err != nil {
		t.Fatal(err)
	}
	return mustNew(t, localChain{c}, Config{Pending: new(pending.Source)}), c
}

func TestHeadersAndUncles(t *testing.T) {
	a, c := executionAPIsChain(t)
	uncles := 0
	for n := uint64(0); n <= c.Head().Number.Uint64(); n++ {
		num := fmt.Sprintf(`"0x%x"`, n)
		block := decodeObject(t, []byte(mustCall(t, a.getBlockByNumber, num, `false`)))
		header := decodeObject(t, []byte(mustCall(t, a.headerHandler(numberParam), num)))
		// The header object is the block object without its body fields.
		for _, k := range []string{"size", "transactions", "uncles", "withdrawals"} {
			delete(block, k)
		}
		if fmt.Sprint(block) != fmt.Sprint(header) {
			t.Fatalf("block %d: header object differs from block object:\n%v\n%v", n, header, block)
		}
		b := c.BlockByNumber(n)
		for i, u := range b.Uncles() {
			uncles++
			got := mustCall(t, a.uncleHandler(numberParam), num, fmt.Sprintf(`"0x%x"`, i))
			m := decodeObject(t, []byte(got))
			if string(m["hash"]) != quoted(u.Hash().Hex()) || m["transactions"] != nil || string(m["uncles"]) != "[]" ||
				string(m["size"]) != string(ethjson.AppendU64(nil, types.NewBlockWithHeader(u).Size())) {
				t.Errorf("block %d uncle %d: %s", n, i, got)
			}
			byHash := mustCall(t, a.uncleHandler(hashParam), quoted(b.Hash().Hex()), fmt.Sprintf(`"0x%x"`, i))
			if byHash != got {
				t.Errorf("uncle by hash differs")
			}
		}
		if got := mustCall(t, a.uncleHandler(numberParam), num, `"0x5"`); got != "null" {
			t.Errorf("uncle past end = %s", got)
		}
		if got := mustCall(t, a.countHandler(numberParam, uncleCount), num); got != fmt.Sprintf(`"0x%x"`, len(b.Uncles())) {
			t.Errorf("uncle count = %s", got)
		}
		for i, tx := range b.Transactions() {
			enc, _ := tx.MarshalBinary()
			if got := mustCall(t, a.rawTxByIndex(numberParam), num, fmt.Sprintf(`"0x%x"`, i)); got != string(ethjson.AppendHexBytes(nil, enc)) {
				t.Errorf("raw tx %d/%d = %s", n, i, got)
			}
		}
	}
	if uncles == 0 {
		t.Error("the test chain has no uncles to check")
	}
	if got := mustCall(t, a.headerHandler(hashParam), quoted(common.Hash{5}.Hex())); got != "null" {
		t.Errorf("unknown header = %s", got)
	}
	if got := mustCall(t, a.rawTxByIndex(numberParam), `"0x1"`, `"0x50"`); got != `"0x"` {
		t.Errorf("raw tx past end = %s", got)
	}
}

func BenchmarkPendingReceiptByHash(b *testing.B) {
	f := newReadsFixture(b)
	_, tx := f.publishPending(b)
	p := rpc.Params{json.RawMessage(quoted(tx.Hash().Hex()))}
	ctx := context.Background()
	b.ReportAllocs()
	var buf []byte // as the transport's pooled answer buffer
	for b.Loop() {
		out, err := f.api.getTransactionReceipt(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		buf = appendResult(buf[:0], out)
	}
}

func BenchmarkSealedBlockFullTx(b *testing.B) {
	benchmarkBlock(b, `"0x3"`, `true`)
}

// The bench workload's call: the latest block with transaction hashes.
func BenchmarkLatestBlock(b *testing.B) {
	benchmarkBlock(b, `"latest"`, `false`)
}

// The pending block as flashblocks apps poll it, with transaction hashes.
func BenchmarkPendingBlock(b *testing.B) {
	benchmarkBlock(b, `"pending"`, `false`)
}

func benchmarkBlock(b *testing.B, params ...string) {
	f := newReadsFixture(b)
	f.publishPending(b)
	p := make(rpc.Params, len(params))
	for i, s := range params {
		p[i] = json.RawMessage(s)
	}
	ctx := context.Background()
	b.ReportAllocs()
	var buf []byte // as the transport's pooled answer buffer
	for b.Loop() {
		out, err := f.api.getBlockByNumber(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		buf = appendResult(buf[:0], out)
	}
}

// appendResult writes a handler's result as the transport does.
func appendResult(b []byte, out any) []byte {
	switch r := out.(type) {
	case rpc.Appender:
		return r.AppendJSON(b)
	case json.RawMessage:
		return append(b, r...)
	}
	panic(fmt.Sprintf("result of type %T", out))
}

// A pre-confirmed transaction whose receipt the snapshot does not hold yet
// is found, and its receipt is null rather than an error.
func TestPreconfirmedWithoutReceipt(t *testing.T) {
	f := newReadsFixture(t)
	snap, tx := f.publishPending(t)
	bare := *snap
	bare.Receipts = nil
	f.src.Publish((&bare).Seal())
	if got := mustCall(t, f.api.getTransactionByHash, quoted(tx.Hash().Hex())); got == "null" {
		t.Error("pre-confirmed tx not found")
	}
	if got := mustCall(t, f.api.getTransactionReceipt, quoted(tx.Hash().Hex())); got != "null" {
		t.Errorf("receipt = %s, want null", got)
	}
}

// TestLatestFollowsTheHead: "latest" and the head's number answer from a
// view cached per head, which keeps the block objects once written: byte
// for byte the block by hash (written afresh), with hashes or transaction
// objects and as a header, the first time and from the cache, and again
// after the head moves (here a rewind, which replaces the head pointer).
func TestLatestFollowsTheHead(t *testing.T) {
	f := newReadsFixture(t)
	header := f.api.headerHandler(numberParam)
	for _, n := range []uint64{4, 2} {
		if n < f.chain.Head().Number.Uint64() {
			if err := f.chain.SetHead(n); err != nil {
				t.Fatal(err)
			}
		}
		num := fmt.Sprintf(`"0x%x"`, n)
		hash := quoted(f.chain.BlockByNumber(n).Hash().Hex())
		for _, full := range []string{"false", "true"} {
			want := mustCall(t, f.api.getBlockByHash, hash, full) // written afresh
			for i := range 2 {
				for _, sel := range []string{`"latest"`, num} {
					if got := mustCall(t, f.api.getBlockByNumber, sel, full); got != want {
						t.Errorf("head %d, full %s, read %d: %s\n%s\nwant\n%s", n, full, i, sel, got, want)
					}
				}
			}
		}
		if got, want := mustCall(t, header, `"latest"`), mustCall(t, header, num); got != want {
			t.Errorf("head %d: latest header\n%s\nwant\n%s", n, got, want)
		}
	}
}
