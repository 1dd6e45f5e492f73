package api_test

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/internal/peers"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/opstack"
	"github.com/preconf/preconf/sequencer"
	"github.com/preconf/preconf/simulate"
)

// TestDiffSequencedAgainstOpGeth runs this node's sequencer on the OP-stack
// dev chain at Jovian (--hardfork jovian) with every kind of traffic — transactions of
// each type paying the L1 data and operator fees, a contract with storage
// and logs, a withdrawal through the L2ToL1MessagePasser, injected
// deposits (minting, failing, creating a contract) — then imports the
// blocks it sealed into op-geth, which validates every one, and requires
// the answers of both nodes on that chain to be byte-identical (the
// requests of opRequests, plus eth_simulateV1 with a withdrawal). The
// receipts this node pre-confirmed, before each block was sealed, must equal
// op-geth's receipts of the sealed block (block hash aside), and so must
// the pre-confirmed transactions.
func TestDiffSequencedAgainstOpGeth(t *testing.T) {
	bin := peers.OpGethForTest(t)
	dir := t.TempDir()
	// At Jovian, op-geth's last rules (it does not execute Karst).
	g, err := chain.DevL2GenesisAt(forkrules.Jovian)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := chain.DevL2SystemConfig()
	if err != nil {
		t.Fatal(err)
	}
	// A nonzero operator fee, so its receipt fields and charges are checked
	// too (the dev chain's default has none, as Base).
	l1 := &opstack.DevL1{Batcher: sc.Batcher, BaseFeeScalar: sc.BaseFeeScalar, BlobBaseFeeScalar: sc.BlobBaseFeeScalar,
		BaseFee: big.NewInt(2 * params.GWei), BlobBaseFee: big.NewInt(3), OperatorFeeScalar: 1_500_000, OperatorFeeConstant: 200}
	seqCfg := node.Config{DataDir: dir, Genesis: g,
		Sequencer: &sequencer.Config{BlockTime: time.Second, Interval: 100 * time.Millisecond, L1: l1, L1BlockTime: 2 * time.Second}}
	n, err := node.New(seqCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(nil); err != nil {
		n.Close()
		t.Fatal(err)
	}
	w := newWorkload(t, n.URL(), g.Config.ChainID)
	w.run()
	head := n.Chain.Head().Number.Uint64()
	var buf bytes.Buffer
	var blocks types.Blocks
	for i := uint64(1); i <= head; i++ {
		b := n.Chain.BlockByNumber(i)
		blocks = append(blocks, b)
		if err := rlp.Encode(&buf, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	genesisFile, chainFile := filepath.Join(t.TempDir(), "genesis.json"), filepath.Join(t.TempDir(), "chain.rlp")
	gj, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(genesisFile, gj, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(chainFile, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	opURL := startGeth(t, bin, genesisFile, chainFile) // op-geth validates every block on import

	// The sequencer's own datadir, served without sequencing (so latest
	// stays the exported head), with exact simulated state roots.
	sim := simulate.DefaultOptions()
	sim.Roots = simulate.RootCompute
	ours, err := node.New(node.Config{DataDir: dir, Simulate: &sim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ours.Close() })
	if err := ours.Start(nil); err != nil {
		t.Fatal(err)
	}
	if h := ours.Chain.Head().Number.Uint64(); h != head {
		t.Fatalf("reopened at head %d, exported %d", h, head)
	}

	accounts := []string{w.depositor.Hex(), w.store.Hex(), strings.ToLower(params.OptimismL2ToL1MessagePasser.Hex())}
	reqs, deposits, userTxs := opRequests(t, blocks, accounts)
	add := func(method string, params ...any) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		reqs = append(reqs, b)
	}
	// A simulated Isthmus block's withdrawals root is the message passer's
	// storage root: a withdrawal changes it.
	from := chain.DevAccounts()[3]
	for _, validation := range []bool{false, true} {
		add("eth_simulateV1", map[string]any{"validation": validation, "blockStateCalls": []any{map[string]any{"calls": []any{
			map[string]any{"from": from, "to": params.OptimismL2ToL1MessagePasser, "value": "0x10", "data": hexutil.Bytes(withdrawalCall(from)), "maxFeePerGas": "0x174876e800", "maxPriorityFeePerGas": "0x1"},
			map[string]any{"from": from, "to": w.store, "data": hexutil.Bytes(storeCall(3, 4)), "maxFeePerGas": "0x174876e800", "maxPriorityFeePerGas": "0x1"},
		}}}}, "latest")
	}
	add("eth_call", map[string]any{"from": from, "to": w.store, "data": hexutil.Bytes(storeCall(5, 6))}, "latest")
	add("eth_estimateGas", map[string]any{"from": from, "to": params.OptimismL2ToL1MessagePasser, "value": "0x10", "data": hexutil.Bytes(withdrawalCall(from))}, "latest")

	same := diffAnswers(t, reqs, ours.URL(), opURL, "op-geth")
	t.Logf("%d of %d answers identical to op-geth's on the chain this node sequenced (%d blocks, %d deposits of which %d injected, %d user transactions)",
		same, len(reqs), len(blocks), deposits, deposits-len(blocks), userTxs)

	// What was pre-confirmed is what op-geth serves for the sealed block.
	client := &http.Client{Timeout: 30 * time.Second}
	matched := 0
	for hash, pre := range w.preconfirmed {
		for _, m := range []struct {
			method string
			pre    json.RawMessage
		}{{"eth_getTransactionReceipt", pre.receipt}, {"eth_getTransactionByHash", pre.tx}} {
			req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": m.method, "params": []any{hash}})
			var ans struct{ Result json.RawMessage }
			if err := json.Unmarshal(postBody(t, client, opURL, req), &ans); err != nil {
				t.Fatal(err)
			}
			a, b := withoutBlockHash(t, m.pre), withoutBlockHash(t, ans.Result)
			if a != b {
				t.Errorf("%s %s: pre-confirmed\n%s\nop-geth, sealed\n%s", m.method, hash, a, b)
				continue
			}
			matched++
		}
	}
	t.Logf("%d of %d pre-confirmed transactions and receipts equal op-geth's sealed ones (block hash aside)", matched, 2*len(w.preconfirmed))
	if len(w.preconfirmed) != len(w.sent) {
		t.Errorf("%d of the %d transactions sent were seen pre-confirmed", len(w.preconfirmed), len(w.sent))
	}
}

// withoutBlockHash is a JSON object with its blockHash fields (its own and
// its logs') removed, re-encoded with sorted keys.
func withoutBlockHash(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return string(raw)
	}
	delete(m, "blockHash")
	if logs, ok := m["logs"].([]any); ok {
		for _, l := range logs {
			if lm, ok := l.(map[string]any); ok {
				delete(lm, "blockHash")
			}
		}
	}
	out, _ := json.Marshal(m)
	return string(out)
}

// workload drives a sequencing node over JSON-RPC.
type workload struct {
	t         *testing.T
	url       string
	chainID   *big.Int
	signer    types.Signer
	keys      []*ecdsa.PrivateKey
	nonces    map[common.Address]uint64
	store     common.Address
	depositor common.Address
	sent      []common.Hash
	// preconfirmed holds each transaction's receipt and object as seen at
	// pending, before its block was sealed.
	preconfirmed map[common.Hash]preconf
}

type preconf struct{ receipt, tx json.RawMessage }

func newWorkload(t *testing.T, url string, chainID *big.Int) *workload {
	w := &workload{t: t, url: url, chainID: chainID, signer: types.LatestSignerForChainID(chainID),
		nonces: map[common.Address]uint64{}, depositor: common.HexToAddress("0x00000000000000000000000000000000000de905"),
		preconfirmed: map[common.Hash]preconf{}}
	for _, k := range chain.DevKeys {
		key, _ := crypto.HexToECDSA(k)
		w.keys = append(w.keys, key)
	}
	return w
}

// storeInit deploys a contract that stores calldata[32:64] at slot
// calldata[0:32] and logs the slot: SSTORE then LOG1.
var storeInit = common.FromHex("0x601080600c6000396000f300" + "602035600035556000356000600" + "0a100")

func storeCall(slot, value int64) []byte {
	return append(common.BigToHash(big.NewInt(slot)).Bytes(), common.BigToHash(big.NewInt(value)).Bytes()...)
}

// withdrawalCall is L2ToL1MessagePasser.initiateWithdrawal(to, 100000, "").
func withdrawalCall(to common.Address) []byte {
	data := append(crypto.Keccak256([]byte("initiateWithdrawal(address,uint256,bytes)"))[:4], common.LeftPadBytes(to.Bytes(), 32)...)
	data = append(data, common.BigToHash(big.NewInt(100_000)).Bytes()...)
	data = append(data, common.BigToHash(big.NewInt(0x60)).Bytes()...)
	return append(data, make([]byte, 32)...)
}

func (w *workload) call(method string, params ...any) json.RawMessage {
	w.t.Helper()
	res, err := rpcTry(w.url, method, params...)
	if err != nil {
		w.t.Fatal(err)
	}
	return res
}

// send signs inner with key i and sends it.
func (w *workload) send(i int, inner types.TxData) common.Hash {
	w.t.Helper()
	tx := types.MustSignNewTx(w.keys[i], w.signer, inner)
	raw, _ := tx.MarshalBinary()
	w.call("eth_sendRawTransaction", hexutil.Bytes(raw))
	w.sent = append(w.sent, tx.Hash())
	return tx.Hash()
}

func (w *workload) nonce(i int) uint64 {
	a := crypto.PubkeyToAddress(w.keys[i].PublicKey)
	n := w.nonces[a]
	w.nonces[a]++
	return n
}

// deposit injects a deposit (anvil --optimism's eth_sendTransaction fields).
func (w *workload) deposit(req map[string]any) common.Hash {
	w.t.Helper()
	var h common.Hash
	if err := json.Unmarshal(w.call("eth_sendTransaction", req), &h); err != nil {
		w.t.Fatal(err)
	}
	w.sent = append(w.sent, h)
	return h
}

// run sends the traffic in three rounds, each waiting for pre-confirmation
// (recording what pending shows) and sealing.
func (w *workload) run() {
	cid := w.chainID
	tip, cap := big.NewInt(params.GWei), big.NewInt(50*params.GWei)
	deployer := crypto.PubkeyToAddress(w.keys[0].PublicKey)
	w.store = crypto.CreateAddress(deployer, 0)
	rounds := []func(){
		func() {
			w.send(0, &types.DynamicFeeTx{ChainID: cid, Nonce: w.nonce(0), GasTipCap: tip, GasFeeCap: cap, Gas: 200_000, Data: storeInit})
			w.deposit(map[string]any{"from": w.depositor, "to": chain.DevAccounts()[9], "value": "0x2386f26fc10000", "mint": "0xde0b6b3a7640000", "gas": "0x186a0"})
			for i := 1; i <= 3; i++ {
				to := common.BigToAddress(big.NewInt(int64(0x7700 + i)))
				w.send(i, &types.DynamicFeeTx{ChainID: cid, Nonce: w.nonce(i), GasTipCap: tip, GasFeeCap: cap, Gas: 40_000, To: &to, Value: big.NewInt(int64(i)), Data: bytes.Repeat([]byte{byte(i), 0}, 40)})
			}
		},
		func() {
			to := common.Address{0x77}
			w.send(4, &types.LegacyTx{Nonce: w.nonce(4), GasPrice: cap, Gas: 30_000, To: &to, Value: big.NewInt(5), Data: []byte{1, 2, 3}})
			w.send(5, &types.AccessListTx{ChainID: cid, Nonce: w.nonce(5), GasPrice: cap, Gas: 60_000, To: &w.store, Data: storeCall(1, 11),
				AccessList: types.AccessList{{Address: w.store, StorageKeys: []common.Hash{common.BigToHash(big.NewInt(1))}}}})
			w.send(2, &types.DynamicFeeTx{ChainID: cid, Nonce: w.nonce(2), GasTipCap: tip, GasFeeCap: cap, Gas: 200_000, To: &params.OptimismL2ToL1MessagePasser, Value: big.NewInt(1000), Data: withdrawalCall(common.Address{0x99})})
			w.send(1, &types.DynamicFeeTx{ChainID: cid, Nonce: w.nonce(1), GasTipCap: tip, GasFeeCap: cap, Gas: 60_000, To: &w.store, Data: storeCall(2, 22)})
			// A deposit that runs out of gas in the SSTORE (its mint stays),
			// and one creating a contract.
			w.deposit(map[string]any{"from": w.depositor, "to": w.store, "mint": "0x3e8", "value": "0xa", "gas": "0x61a8", "input": hexutil.Bytes(storeCall(7, 7))})
			w.deposit(map[string]any{"from": w.depositor, "mint": "0x0", "gas": "0x30d40", "input": hexutil.Bytes(storeInit)})
		},
		func() {
			k6 := w.keys[6]
			auth, err := types.SignSetCode(k6, types.SetCodeAuthorization{ChainID: *uint256.MustFromBig(cid), Address: w.store, Nonce: w.nonces[crypto.PubkeyToAddress(k6.PublicKey)] + 1})
			if err != nil {
				w.t.Fatal(err)
			}
			w.send(6, &types.SetCodeTx{ChainID: uint256.MustFromBig(cid), Nonce: w.nonce(6), GasTipCap: uint256.NewInt(params.GWei), GasFeeCap: uint256.NewInt(50 * params.GWei),
				Gas: 100_000, To: w.store, Data: storeCall(3, 33), AuthList: []types.SetCodeAuthorization{auth}})
			for i := 7; i <= 9; i++ {
				w.send(i, &types.DynamicFeeTx{ChainID: cid, Nonce: w.nonce(i), GasTipCap: big.NewInt(int64(i)), GasFeeCap: cap, Gas: 60_000, To: &w.store, Data: storeCall(int64(i), int64(i))})
			}
			w.deposit(map[string]any{"from": chain.DevAccounts()[8], "to": w.store, "type": "0x7e", "gas": "0xea60", "input": hexutil.Bytes(storeCall(8, 88))})
		},
	}
	for _, round := range rounds {
		first := len(w.sent)
		round()
		w.watch(w.sent[first:])
	}
	// One more block, so the last round's block is sealed and followed.
	var head hexutil.Uint64
	json.Unmarshal(w.call("eth_blockNumber"), &head)
	w.waitFor("another block", func() bool {
		var h hexutil.Uint64
		json.Unmarshal(w.call("eth_blockNumber"), &h)
		return h > head
	})
}

// watch records each transaction's receipt and object at pending, until
// every one of hashes is sealed.
func (w *workload) watch(hashes []common.Hash) {
	w.waitFor("sealing", func() bool {
		sealed := true
		var latest hexutil.Uint64
		json.Unmarshal(w.call("eth_blockNumber"), &latest)
		for _, h := range hashes {
			r := w.call("eth_getTransactionReceipt", h)
			if string(r) == "null" {
				sealed = false
				continue
			}
			var loc struct{ BlockNumber hexutil.Uint64 }
			json.Unmarshal(r, &loc)
			if uint64(loc.BlockNumber) > uint64(latest) { // pre-confirmed, not sealed yet
				w.preconfirmed[h] = preconf{receipt: r, tx: w.call("eth_getTransactionByHash", h)}
				sealed = false
			}
		}
		return sealed
	})
	for _, h := range hashes {
		if _, ok := w.preconfirmed[h]; !ok {
			w.t.Logf("transaction %s was sealed before it was seen pre-confirmed", h)
		}
	}
}

func (w *workload) waitFor(what string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
