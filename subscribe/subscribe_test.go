package subscribe

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
)

type env struct {
	svc  *Service
	src  *pending.Source
	ch   *chain.Chain
	srv  *rpc.Server
	url  string
	keys []*ecdsa.PrivateKey
}

func newEnv(t testing.TB, ws rpc.WSOptions) *env {
	t.Helper()
	// The plain-Ethereum dev chain: the tests generate its blocks.
	c, err := chain.Open(chain.Config{Genesis: chain.DevGenesis()})
	if err != nil {
		t.Fatal(err)
	}
	src := new(pending.Source)
	svc := New(c, src, nil)
	srv := rpc.NewServer(rpc.Options{})
	svc.Register(srv)
	svc.Start()
	wsh := srv.WSHandler(ws)
	hs := httptest.NewServer(srv.HTTPHandler(rpc.HTTPOptions{Other: wsh}))
	t.Cleanup(func() {
		wsh.Close()
		hs.Close()
		svc.Close()
		c.Close()
	})
	e := &env{svc: svc, src: src, ch: c, srv: srv, url: "ws" + strings.TrimPrefix(hs.URL, "http")}
	for _, k := range chain.DevKeys {
		key, _ := crypto.HexToECDSA(k)
		e.keys = append(e.keys, key)
	}
	return e
}

// client is a websocket JSON-RPC client that sorts notifications by
// subscription id.
type client struct {
	t testing.TB
	c *websocket.Conn
}

type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Params struct {
		Subscription string          `json:"subscription"`
		Result       json.RawMessage `json:"result"`
	} `json:"params"`
}

func (e *env) dial(t testing.TB) *client {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, e.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return &client{t: t, c: c}
}

func (c *client) read() message {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, data, err := c.c.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatalf("bad message %s: %v", data, err)
	}
	return m
}

// call sends a request and returns its answer (no notification may come first).
func (c *client) call(req string) message {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.c.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
		c.t.Fatal(err)
	}
	return c.read()
}

// subscribe subscribes with params (a JSON array) and returns the id.
func (c *client) subscribe(params string) string {
	c.t.Helper()
	m := c.call(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":` + params + `}`)
	var id string
	if m.Error != nil || json.Unmarshal(m.Result, &id) != nil {
		c.t.Fatalf("subscribe %s: %+v", params, m)
	}
	return id
}

// collect reads notifications until want(id) of each id has arrived.
func (c *client) collect(want map[string]int) map[string][]json.RawMessage {
	c.t.Helper()
	got := make(map[string][]json.RawMessage)
	done := func() bool {
		for id, n := range want {
			if len(got[id]) < n {
				return false
			}
		}
		return true
	}
	for !done() {
		m := c.read()
		if m.Method != "eth_subscription" {
			c.t.Fatalf("unexpected message %+v", m)
		}
		if _, ok := want[m.Params.Subscription]; !ok {
			c.t.Fatalf("notification for unexpected subscription %s: %s", m.Params.Subscription, m.Params.Result)
		}
		got[m.Params.Subscription] = append(got[m.Params.Subscription], m.Params.Result)
	}
	for id, n := range want {
		if len(got[id]) != n {
			c.t.Fatalf("subscription %s: %d notifications, want %d", id, len(got[id]), n)
		}
	}
	return got
}

var (
	topicA = common.HexToHash("0xaa")
	topicB = common.HexToHash("0xbb")
	to     = common.HexToAddress("0x00000000000000000000000000000000000000bb")
	emit   = common.HexToAddress("0x00000000000000000000000000000000000000ee")
)

func (e *env) transfer(t testing.TB, key int, nonce uint64) *types.Transaction {
	t.Helper()
	tx, err := types.SignNewTx(e.keys[key], types.LatestSigner(e.ch.Config()), &types.DynamicFeeTx{
		ChainID: e.ch.Config().ChainID, Nonce: nonce, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(2e9),
		Gas: 21000, To: &to, Value: big.NewInt(1000),
	})
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// snapshot builds a flashblock over the genesis block: all txs so far, the
// last newTxs of them new, each given a receipt (the ones in withLog emit a
// log from `emit` with topics[i]).
func (e *env) snapshot(index uint64, txs types.Transactions, newTxs int, logTopics map[int]common.Hash) *pending.Snapshot {
	parent := e.ch.Head()
	h := &types.Header{
		ParentHash: parent.Hash(), Number: big.NewInt(1), Time: parent.Time + 2, GasLimit: parent.GasLimit,
		BaseFee: big.NewInt(params.InitialBaseFee), Coinbase: common.HexToAddress("0xc0"), Difficulty: common.Big0,
		GasUsed: uint64(21000 * len(txs)),
	}
	receipts := make(types.Receipts, len(txs))
	logIndex := uint(0)
	for i, tx := range txs {
		r := &types.Receipt{Type: tx.Type(), Status: 1, GasUsed: 21000, CumulativeGasUsed: uint64(21000 * (i + 1)), TxHash: tx.Hash(),
			BlockNumber: h.Number, TransactionIndex: uint(i)}
		if topic, ok := logTopics[i]; ok {
			r.Logs = []*types.Log{{Address: emit, Topics: []common.Hash{topic}, Data: []byte{1, 2}, BlockNumber: 1, TxHash: tx.Hash(), TxIndex: uint(i), Index: logIndex}}
			logIndex++
		}
		r.Bloom = types.CreateBloom(r)
		receipts[i] = r
	}
	return &pending.Snapshot{Parent: parent, Header: h, Index: index, PayloadID: [8]byte{1}, NewTxs: newTxs, Txs: txs, Receipts: receipts}
}

func errorOf(t *testing.T, m message) (int, string) {
	t.Helper()
	if m.Error == nil {
		t.Fatalf("expected an error, got %+v", m)
	}
	return m.Error.Code, m.Error.Message
}

func TestSubscribeErrors(t *testing.T) {
	e := newEnv(t, rpc.WSOptions{})
	resp := e.srv.Handle(rpc.WithTransport(context.Background(), "http"), []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`))
	if want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"notifications not supported"}}`; string(resp) != want {
		t.Fatalf("over HTTP: %s", resp)
	}
	c := e.dial(t)
	for _, tc := range []struct {
		params string
		code   int
		msg    string
	}{
		{`["nope"]`, -32601, `no "nope" subscription in eth namespace`},
		{`[]`, -32602, "expected subscription name as first argument"},
		{`[1]`, -32602, "expected subscription name as first argument"},
		{`["newHeads", true]`, -32602, "too many arguments, want at most 1"},
		{`["logs", {"fromBlock":"pending"}]`, -32602, "pending logs are not supported"},
		{`["logs", {"topics":[[],[],[],[],[]]}]`, -32602, "invalid argument 1: exceed max topics"},
		{`["newPendingTransactions", "yes"]`, -32602, ""},
		{`["newFlashblockTransactions", 3]`, -32602, ""},
	} {
		code, msg := errorOf(t, c.call(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":`+tc.params+`}`))
		if code != tc.code || (tc.msg != "" && msg != tc.msg) {
			t.Errorf("%s: got %d %q, want %d %q", tc.params, code, msg, tc.code, tc.msg)
		}
	}
	if code, msg := errorOf(t, c.call(`{"jsonrpc":"2.0","id":2,"method":"eth_unsubscribe","params":["0x1"]}`)); code != -32000 || msg != "subscription not found" {
		t.Errorf("unsubscribe unknown: %d %q", code, msg)
	}
	if n := e.svc.Count(""); n != 0 {
		t.Fatalf("failed subscriptions left %d behind", n)
	}
}

func TestFlashblockKinds(t *testing.T) {
	e := newEnv(t, rpc.WSOptions{})
	c := e.dial(t)
	ids := map[string]string{
		"blocks":    c.subscribe(`["newFlashblocks"]`),
		"hashes":    c.subscribe(`["newFlashblockTransactions"]`),
		"full":      c.subscribe(`["newFlashblockTransactions", true]`),
		"filtered":  c.subscribe(`["newFlashblockTransactions", {"topics":["` + topicB.Hex() + `"]}]`),
		"logs":      c.subscribe(`["pendingLogs", {"address":"` + emit.Hex() + `"}]`),
		"logsB":     c.subscribe(`["pendingLogs", {"topics":[["` + topicB.Hex() + `"]]}]`),
		"pool":      c.subscribe(`["newPendingTransactions"]`),
		"poolFull":  c.subscribe(`["newPendingTransactions", true]`),
		"unrelated": c.subscribe(`["pendingLogs", {"address":"0x0000000000000000000000000000000000000001"}]`),
	}
	tx0, tx1, tx2 := e.transfer(t, 0, 0), e.transfer(t, 1, 0), e.transfer(t, 0, 1)
	e.src.Publish(e.snapshot(0, types.Transactions{tx0}, 1, map[int]common.Hash{0: topicA}))
	snap1 := e.snapshot(1, types.Transactions{tx0, tx1, tx2}, 2, map[int]common.Hash{0: topicA, 2: topicB})
	e.src.Publish(snap1)

	got := c.collect(map[string]int{
		ids["blocks"]: 2, ids["hashes"]: 3, ids["full"]: 3, ids["filtered"]: 1,
		ids["logs"]: 2, ids["logsB"]: 1, ids["pool"]: 3, ids["poolFull"]: 3,
	})
	// newFlashblocks: the pending block so far, with its hash and full transactions.
	var blk struct {
		Number       string            `json:"number"`
		Hash         common.Hash       `json:"hash"`
		Transactions []json.RawMessage `json:"transactions"`
	}
	if err := json.Unmarshal(got[ids["blocks"]][1], &blk); err != nil {
		t.Fatal(err)
	}
	if blk.Number != "0x1" || blk.Hash != snap1.Header.Hash() || len(blk.Transactions) != 3 {
		t.Fatalf("newFlashblocks[1]: number %s hash %s (want %s) %d txs", blk.Number, blk.Hash, snap1.Header.Hash(), len(blk.Transactions))
	}
	// Hashes in order, one per message.
	for i, tx := range []*types.Transaction{tx0, tx1, tx2} {
		if want := `"` + tx.Hash().Hex() + `"`; string(got[ids["hashes"]][i]) != want || string(got[ids["pool"]][i]) != want {
			t.Fatalf("hash %d: %s / %s, want %s", i, got[ids["hashes"]][i], got[ids["pool"]][i], want)
		}
	}
	// Full form: the transaction located in the pending block, plus receipt fields and logs.
	var full struct {
		Hash              common.Hash     `json:"hash"`
		BlockHash         common.Hash     `json:"blockHash"`
		BlockNumber       string          `json:"blockNumber"`
		TransactionIndex  string          `json:"transactionIndex"`
		From              common.Address  `json:"from"`
		GasUsed           string          `json:"gasUsed"`
		Status            string          `json:"status"`
		CumulativeGasUsed string          `json:"cumulativeGasUsed"`
		ContractAddress   *common.Address `json:"contractAddress"`
		LogsBloom         string          `json:"logsBloom"`
		Logs              []types.Log     `json:"logs"`
	}
	if err := json.Unmarshal(got[ids["full"]][2], &full); err != nil {
		t.Fatal(err)
	}
	if full.Hash != tx2.Hash() || full.BlockHash != snap1.Header.Hash() || full.BlockNumber != "0x1" || full.TransactionIndex != "0x2" ||
		full.From != crypto.PubkeyToAddress(e.keys[0].PublicKey) || full.GasUsed != "0x5208" || full.Status != "0x1" ||
		full.CumulativeGasUsed != "0xf618" || full.ContractAddress != nil || len(full.LogsBloom) != 2+512 ||
		len(full.Logs) != 1 || full.Logs[0].Topics[0] != topicB || full.Logs[0].BlockHash != snap1.Header.Hash() {
		t.Fatalf("full transaction: %s", got[ids["full"]][2])
	}
	if !strings.Contains(string(got[ids["filtered"]][0]), tx2.Hash().Hex()) {
		t.Fatalf("filtered: %s", got[ids["filtered"]][0])
	}
	// newPendingTransactions full: pool-style object, no location.
	var pool struct {
		Hash      common.Hash  `json:"hash"`
		BlockHash *common.Hash `json:"blockHash"`
	}
	if err := json.Unmarshal(got[ids["poolFull"]][1], &pool); err != nil || pool.Hash != tx1.Hash() || pool.BlockHash != nil {
		t.Fatalf("newPendingTransactions full: %s (%v)", got[ids["poolFull"]][1], err)
	}
	// pendingLogs: only the new transactions' logs, stamped with the pending block.
	var l0, l1 types.Log
	if json.Unmarshal(got[ids["logs"]][0], &l0) != nil || json.Unmarshal(got[ids["logs"]][1], &l1) != nil {
		t.Fatal("bad log")
	}
	if l0.TxHash != tx0.Hash() || l1.TxHash != tx2.Hash() || l1.BlockHash != snap1.Header.Hash() || l1.BlockNumber != 1 || l1.Topics[0] != topicB || l1.Removed {
		t.Fatalf("pendingLogs: %s / %s", got[ids["logs"]][0], got[ids["logs"]][1])
	}
	if !strings.Contains(string(got[ids["logsB"]][0]), tx2.Hash().Hex()) {
		t.Fatalf("pendingLogs by topic: %s", got[ids["logsB"]][0])
	}

	// Unsubscribing stops delivery; the others go on.
	if m := c.call(`{"jsonrpc":"2.0","id":9,"method":"eth_unsubscribe","params":["` + ids["hashes"] + `"]}`); string(m.Result) != "true" {
		t.Fatalf("unsubscribe: %+v", m)
	}
	e.src.Publish(e.snapshot(2, types.Transactions{tx0, tx1, tx2, e.transfer(t, 2, 0)}, 1, nil))
	c.collect(map[string]int{ids["blocks"]: 1, ids["full"]: 1, ids["pool"]: 1, ids["poolFull"]: 1})
}

// logEmitter is init code that emits LOG1(topic) with no data and deploys nothing.
func logEmitter(topic common.Hash) []byte {
	code := append([]byte{0x7f}, topic[:]...)
	return append(code, 0x60, 0x00, 0x60, 0x00, 0xa1, 0x00)
}

func TestNewHeadsAndLogs(t *testing.T) {
	e := newEnv(t, rpc.WSOptions{})
	c := e.dial(t)
	heads := c.subscribe(`["newHeads"]`)
	all := c.subscribe(`["logs"]`)
	onlyB := c.subscribe(`["logs", {"topics":["` + topicB.Hex() + `"]}]`)

	genesis := chain.DevGenesis()
	signer := types.LatestSigner(genesis.Config)
	_, blocks, _ := core.GenerateChainWithGenesis(genesis, beacon.New(ethash.NewFaker()), 2, func(i int, g *core.BlockGen) {
		g.SetParentBeaconRoot(common.Hash{}) // runs the EIP-4788 system call, as the importer does
		topic := topicA
		if i == 1 {
			topic = topicB
		}
		tx, err := types.SignNewTx(e.keys[0], signer, &types.DynamicFeeTx{
			ChainID: genesis.Config.ChainID, Nonce: uint64(i), GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(1e10),
			Gas: 100000, Data: logEmitter(topic),
		})
		if err != nil {
			t.Fatal(err)
		}
		g.AddTx(tx)
	})
	if _, err := e.ch.BlockChain().InsertChain(blocks); err != nil {
		t.Fatal(err)
	}
	got := c.collect(map[string]int{heads: 2, all: 2, onlyB: 1})
	for i, b := range blocks {
		var h struct {
			Hash   common.Hash `json:"hash"`
			Number string      `json:"number"`
		}
		if err := json.Unmarshal(got[heads][i], &h); err != nil || h.Hash != b.Hash() {
			t.Fatalf("newHeads %d: %s, want hash %s", i, got[heads][i], b.Hash())
		}
		var l types.Log
		if err := json.Unmarshal(got[all][i], &l); err != nil || l.BlockHash != b.Hash() || l.TxHash != b.Transactions()[0].Hash() || l.Removed {
			t.Fatalf("logs %d: %s", i, got[all][i])
		}
	}
	var l types.Log
	if err := json.Unmarshal(got[onlyB][0], &l); err != nil || l.BlockHash != blocks[1].Hash() || l.Topics[0] != topicB {
		t.Fatalf("filtered logs: %s", got[onlyB][0])
	}
}

// A subscriber that stops reading is dropped; publishing never waits for
// it, and a subscriber that reads gets every flashblock meanwhile.
func TestSlowSubscriberDoesNotSlowOthers(t *testing.T) {
	e := newEnv(t, rpc.WSOptions{StreamOptions: rpc.StreamOptions{QueueLen: 256, QueueBytes: 16 << 20}})
	slow, fast := e.dial(t), e.dial(t)
	slow.subscribe(`["newFlashblocks"]`)
	fastID := fast.subscribe(`["newFlashblocks"]`)
	var txs types.Transactions
	for i := range 200 {
		txs = append(txs, e.transfer(t, i%10, uint64(i/10)))
	}
	const n = 250 // ~140 KiB each, ~35 MiB in all: beyond socket buffers plus the 16 MiB queue
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			e.src.Publish(e.snapshot(uint64(i), txs, 0, nil))
			time.Sleep(5 * time.Millisecond) // pace the publisher so the reader keeps up
		}
	}()
	got := fast.collect(map[string]int{fastID: n})
	<-done
	if len(got[fastID]) != n {
		t.Fatalf("reading subscriber got %d of %d", len(got[fastID]), n)
	}
	deadline := time.Now().Add(20 * time.Second)
	for e.svc.Count("newFlashblocks") != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if k := e.svc.Count("newFlashblocks"); k != 1 {
		t.Fatalf("%d newFlashblocks subscriptions left; the slow one should be dropped", k)
	}
}

// A malformed snapshot is skipped (and logged); delivery goes on.
func TestMalformedSnapshotSkipped(t *testing.T) {
	e := newEnv(t, rpc.WSOptions{})
	c := e.dial(t)
	id := c.subscribe(`["newFlashblockTransactions", true]`)
	tx0, tx1 := e.transfer(t, 0, 0), e.transfer(t, 1, 0)
	bad := e.snapshot(0, types.Transactions{tx0}, 1, nil)
	bad.Header.Number = nil
	e.src.Publish(bad)
	e.src.Publish(e.snapshot(1, types.Transactions{tx0, tx1}, 1, nil))
	got := c.collect(map[string]int{id: 1})
	if !strings.Contains(string(got[id][0]), tx1.Hash().Hex()) {
		t.Fatalf("expected the good flashblock's transaction, got %s", got[id][0])
	}
}
