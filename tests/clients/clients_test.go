// Package clients_test runs real Ethereum clients against a built preconf
// binary: foundry's cast, viem, ethers v6 and web3.js v4 (installed with the
// Node.js they run on by scripts/setup-clients), plus Go checks of the
// websocket subscriptions and the flashblocks feed end to end. Without the
// npm tooling the client tests are skipped, except under CI=true, where
// missing tooling fails.
package clients_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
)

// cast send with dev key 0, then cast balance --block pending sees it.
func TestCast(t *testing.T) {
	needNode(t)
	cast := castBin(t)
	to := "0x00000000000000000000000000000000000000c0"
	balance := func() *big.Int {
		out := strings.TrimSpace(run(t, cast, []string{"balance", "--block", "pending", "--rpc-url", shared.http, to}))
		v, ok := new(big.Int).SetString(out, 10)
		if !ok {
			t.Fatalf("cast balance printed %q", out)
		}
		return v
	}
	before := balance()
	out := run(t, cast, []string{"send", "--rpc-url", shared.http, "--private-key", devKey(0), to, "--value", "12345"})
	if !regexpLine(out, "status", "1 (success)") {
		t.Fatalf("cast send did not report success:\n%s", out)
	}
	if diff := new(big.Int).Sub(balance(), before); diff.Int64() != 12345 {
		t.Fatalf("pending balance grew by %s, want 12345", diff)
	}
}

func regexpLine(out, key, value string) bool {
	for line := range strings.SplitSeq(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key && strings.Join(f[1:], " ") == value {
			return true
		}
	}
	return false
}

// viem, ethers v6 and web3.js v4 test files under Node's test runner.
func TestNodeClients(t *testing.T) {
	nodeTests(t, needNode(t), []string{"viem.test.mjs", "ethers.test.mjs", "web3.test.mjs"},
		map[string]int{"VIEM": 1, "ETHERS": 2, "WEB3": 5})
}

// wsConn is a minimal JSON-RPC websocket client.
type wsConn struct {
	t *testing.T
	c *websocket.Conn
}

func dialWS(t *testing.T, url string) *wsConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return &wsConn{t: t, c: c}
}

func (w *wsConn) next(timeout time.Duration) []byte {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, data, err := w.c.Read(ctx)
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	return data
}

func (w *wsConn) subscribe(params string) string {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":`+params+`}`)); err != nil {
		w.t.Fatal(err)
	}
	var resp struct {
		Result string          `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(w.next(10*time.Second), &resp); err != nil || resp.Result == "" {
		w.t.Fatalf("subscribe %s: %v %s", params, err, resp.Error)
	}
	return resp.Result
}

type notification struct {
	Params struct {
		Subscription string          `json:"subscription"`
		Result       json.RawMessage `json:"result"`
	} `json:"params"`
}

func sendRaw(t *testing.T, tx *types.Transaction) {
	t.Helper()
	raw, _ := tx.MarshalBinary()
	body := `{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["` + hexutil.Encode(raw) + `"]}`
	resp, err := http.Post(shared.http, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result common.Hash      `json:"result"`
		Error  *json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Error != nil || out.Result != tx.Hash() {
		t.Fatalf("eth_sendRawTransaction: %v %s", err, *out.Error)
	}
}

func nonceAt(t *testing.T, addr common.Address) uint64 {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionCount","params":["` + addr.Hex() + `","pending"]}`
	resp, err := http.Post(shared.http, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result hexutil.Uint64 `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return uint64(out.Result)
}

// A transaction sent over HTTP shows up, pre-confirmed, on every stream:
// newFlashblockTransactions, newFlashblocks, newPendingTransactions over
// JSON-RPC websocket, and the /flashblocks feed (JSON and brotli); its block
// then arrives on newHeads.
func TestStreamsEndToEnd(t *testing.T) {
	needNode(t)
	rpcWS := dialWS(t, shared.ws)
	txSub := rpcWS.subscribe(`["newFlashblockTransactions", true]`)
	blockSub := rpcWS.subscribe(`["newFlashblocks"]`)
	poolSub := rpcWS.subscribe(`["newPendingTransactions"]`)
	headSub := rpcWS.subscribe(`["newHeads"]`)
	feedWS := dialWS(t, shared.ws+"/flashblocks")
	feedWS.next(60 * time.Second) // registered: flashblocks come every interval, empty or not

	key, _ := crypto.HexToECDSA(chain.DevKeys[3])
	from := crypto.PubkeyToAddress(key.PublicKey)
	to := common.HexToAddress("0xc3")
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(chain.DevChainID)), &types.DynamicFeeTx{
		ChainID: big.NewInt(chain.DevChainID), Nonce: nonceAt(t, from), GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9), Gas: 21000, To: &to, Value: big.NewInt(5),
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tx.MarshalBinary()
	sent := time.Now()
	sendRaw(t, tx)

	// The feed: a flashblock whose new transactions hold ours.
	deadline := time.Now().Add(60 * time.Second)
	var fbNumber uint64
	for fbNumber == 0 {
		if time.Now().After(deadline) {
			t.Fatal("transaction never appeared on /flashblocks")
		}
		var msg struct {
			PayloadID string `json:"payload_id"`
			Index     uint64 `json:"index"`
			Diff      struct {
				Transactions []hexutil.Bytes `json:"transactions"`
				BlockHash    common.Hash     `json:"block_hash"`
			} `json:"diff"`
			Metadata struct {
				BlockNumber uint64                     `json:"block_number"`
				Receipts    map[string]json.RawMessage `json:"receipts"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(feedWS.next(60*time.Second), &msg); err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(msg.Diff.Transactions, func(b hexutil.Bytes) bool { return bytes.Equal(b, raw) }) {
			if _, ok := msg.Metadata.Receipts[tx.Hash().Hex()]; !ok {
				t.Fatalf("feed message lacks the receipt of %s", tx.Hash())
			}
			fbNumber = msg.Metadata.BlockNumber
			t.Logf("send → /flashblocks: %v (block %d, index %d)", time.Since(sent), msg.Metadata.BlockNumber, msg.Index)
		}
	}

	// The subscriptions.
	var gotTx, gotBlock, gotPool, gotHead bool
	for !(gotTx && gotBlock && gotPool && gotHead) {
		if time.Now().After(deadline) {
			t.Fatalf("missing notifications: tx %v block %v pool %v head %v", gotTx, gotBlock, gotPool, gotHead)
		}
		var n notification
		if err := json.Unmarshal(rpcWS.next(60*time.Second), &n); err != nil {
			t.Fatal(err)
		}
		switch n.Params.Subscription {
		case txSub:
			var full struct {
				Hash        common.Hash    `json:"hash"`
				BlockNumber hexutil.Uint64 `json:"blockNumber"`
				Status      string         `json:"status"`
			}
			if json.Unmarshal(n.Params.Result, &full) == nil && full.Hash == tx.Hash() {
				if full.Status != "0x1" || uint64(full.BlockNumber) != fbNumber {
					t.Fatalf("newFlashblockTransactions: %s", n.Params.Result)
				}
				gotTx = true
				t.Logf("send → newFlashblockTransactions: %v", time.Since(sent))
			}
		case blockSub:
			if strings.Contains(string(n.Params.Result), tx.Hash().Hex()) {
				gotBlock = true
			}
		case poolSub:
			if string(n.Params.Result) == `"`+tx.Hash().Hex()+`"` {
				gotPool = true
			}
		case headSub:
			var h struct {
				Number hexutil.Uint64 `json:"number"`
			}
			if json.Unmarshal(n.Params.Result, &h) == nil && uint64(h.Number) == fbNumber {
				gotHead = true
				t.Logf("send → newHeads of its block: %v", time.Since(sent))
			}
		}
	}

	// Brotli feed: binary frames that decompress to the JSON messages.
	br := dialWS(t, shared.ws+"/flashblocks?compress=brotli")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() { // make sure some flashblock carries something
		time.Sleep(300 * time.Millisecond)
		tx2, _ := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(chain.DevChainID)), &types.DynamicFeeTx{
			ChainID: big.NewInt(chain.DevChainID), Nonce: tx.Nonce() + 1, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9), Gas: 21000, To: &to, Value: big.NewInt(5),
		})
		raw2, _ := tx2.MarshalBinary()
		body := `{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["` + hexutil.Encode(raw2) + `"]}`
		if resp, err := http.Post(shared.http, "application/json", strings.NewReader(body)); err == nil {
			resp.Body.Close()
		}
	}()
	typ, data, err := br.c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if typ != websocket.MessageBinary || len(data) == 0 || data[0] == '{' {
		t.Fatalf("brotli feed sent a %v frame starting %q", typ, data[:min(len(data), 8)])
	}
}

// A log emitted by a pre-confirmed transaction arrives on pendingLogs, then,
// once its block is sealed, on logs with the sealed block's hash.
func TestLogsEndToEnd(t *testing.T) {
	needNode(t)
	topic := crypto.Keccak256Hash([]byte("preconf clients test"), []byte(time.Now().String()))
	w := dialWS(t, shared.ws)
	pendingSub := w.subscribe(`["pendingLogs", {"topics":["` + topic.Hex() + `"]}]`)
	logsSub := w.subscribe(`["logs", {"topics":["` + topic.Hex() + `"]}]`)
	headSub := w.subscribe(`["newHeads"]`)

	// Init code: LOG1(topic) with no data, deploy nothing.
	initCode := append(append([]byte{0x7f}, topic[:]...), 0x60, 0x00, 0x60, 0x00, 0xa1, 0x00)
	key, _ := crypto.HexToECDSA(chain.DevKeys[4])
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(chain.DevChainID)), &types.DynamicFeeTx{
		ChainID: big.NewInt(chain.DevChainID), Nonce: nonceAt(t, crypto.PubkeyToAddress(key.PublicKey)),
		GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(100e9), Gas: 100000, Data: initCode,
	})
	if err != nil {
		t.Fatal(err)
	}
	sendRaw(t, tx)

	type logJSON struct {
		TxHash      common.Hash    `json:"transactionHash"`
		BlockHash   common.Hash    `json:"blockHash"`
		BlockNumber hexutil.Uint64 `json:"blockNumber"`
		Topics      []common.Hash  `json:"topics"`
		Removed     bool           `json:"removed"`
	}
	var pendingLog, sealedLog *logJSON
	heads := map[uint64]common.Hash{}
	deadline := time.Now().Add(90 * time.Second)
	for pendingLog == nil || sealedLog == nil || heads[uint64(sealedLog.BlockNumber)] == (common.Hash{}) {
		if time.Now().After(deadline) {
			t.Fatalf("missing: pendingLogs %v, logs %v", pendingLog != nil, sealedLog != nil)
		}
		var n notification
		if err := json.Unmarshal(w.next(90*time.Second), &n); err != nil {
			t.Fatal(err)
		}
		switch n.Params.Subscription {
		case pendingSub, logsSub:
			l := new(logJSON)
			if err := json.Unmarshal(n.Params.Result, l); err != nil {
				t.Fatal(err)
			}
			if l.TxHash != tx.Hash() || len(l.Topics) != 1 || l.Topics[0] != topic || l.Removed {
				t.Fatalf("unexpected log: %s", n.Params.Result)
			}
			if n.Params.Subscription == pendingSub {
				if sealedLog != nil {
					t.Fatal("logs delivered the log before pendingLogs")
				}
				pendingLog = l
			} else {
				sealedLog = l
			}
		case headSub:
			var h struct {
				Number hexutil.Uint64 `json:"number"`
				Hash   common.Hash    `json:"hash"`
			}
			if err := json.Unmarshal(n.Params.Result, &h); err != nil {
				t.Fatal(err)
			}
			heads[uint64(h.Number)] = h.Hash
		}
	}
	if pendingLog.BlockNumber != sealedLog.BlockNumber {
		t.Fatalf("pre-confirmed in block %d, sealed in %d", pendingLog.BlockNumber, sealedLog.BlockNumber)
	}
	if want := heads[uint64(sealedLog.BlockNumber)]; sealedLog.BlockHash != want {
		t.Fatalf("sealed log's block hash %s, newHeads says %s", sealedLog.BlockHash, want)
	}
}
