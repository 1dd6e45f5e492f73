package flashblock

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/pending"
)

var (
	beaconRoot = common.HexToHash("0x2222222222222222222222222222222222222222222222222222222222222222")
	parentHash = common.HexToHash("0x3333333333333333333333333333333333333333333333333333333333333333")
	feeRecip   = common.HexToAddress("0x4200000000000000000000000000000000000011")
	randao     = common.HexToHash("0x4444444444444444444444444444444444444444444444444444444444444444")
	stateRoot  = common.HexToHash("0x5555555555555555555555555555555555555555555555555555555555555555")
	rcptRoot   = common.HexToHash("0x6666666666666666666666666666666666666666666666666666666666666666")
	wdRoot     = common.HexToHash("0x8888888888888888888888888888888888888888888888888888888888888888")
	balanceOf  = common.HexToAddress("0x00000000000000000000000000000000000000bb")
	logAddr    = common.HexToAddress("0x00000000000000000000000000000000000000aa")
	logTopic   = common.HexToHash("0xa1")
)

// fixture is the format note's example message as a snapshot: block 100,
// gas limit 30M, timestamp 1752000000, base fee 1 gwei, one EIP-1559
// transaction with one log, and a new balance for 0x…bb.
func fixture(t *testing.T, index uint64) (*pending.Snapshot, *types.Transaction) {
	t.Helper()
	key, _ := crypto.HexToECDSA(chain.DevKeys[0])
	to := common.HexToAddress("0xbb")
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(1337)), &types.DynamicFeeTx{
		ChainID: big.NewInt(1337), Nonce: 0, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(2e9), Gas: 50000, To: &to, Value: big.NewInt(10),
	})
	if err != nil {
		t.Fatal(err)
	}
	blobGas := uint64(0)
	h := &types.Header{
		ParentHash: parentHash, Coinbase: feeRecip, Root: stateRoot, ReceiptHash: rcptRoot, Number: big.NewInt(100),
		GasLimit: 30_000_000, GasUsed: 50_000, Time: 1_752_000_000, Extra: []byte{0, 1, 2}, MixDigest: randao,
		BaseFee: big.NewInt(1_000_000_000), WithdrawalsHash: &wdRoot, BlobGasUsed: &blobGas, ParentBeaconRoot: &beaconRoot,
		Difficulty: new(big.Int),
	}
	r := &types.Receipt{Type: types.DynamicFeeTxType, Status: 1, CumulativeGasUsed: 50_000, GasUsed: 50_000, TxHash: tx.Hash(),
		Logs: []*types.Log{{Address: logAddr, Topics: []common.Hash{logTopic}, Data: []byte{1, 2}}}}
	r.Bloom = types.CreateBloom(r)
	h.Bloom = r.Bloom
	d := pending.NewDiff()
	d.Accounts[balanceOf] = &types.StateAccount{Balance: uint256.NewInt(0x2540be400), Root: types.EmptyRootHash, CodeHash: types.EmptyCodeHash[:]}
	return &pending.Snapshot{
		Header: h, Index: index, PayloadID: [8]byte{0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a},
		NewTxs: 1, Txs: types.Transactions{tx}, Receipts: types.Receipts{r}, Diff: d,
	}, tx
}

// keys lists an object's keys in wire order.
func keys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	var out []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestEncodeIndex0(t *testing.T) {
	snap, tx := fixture(t, 0)
	msg, err := EncodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatalf("invalid JSON %s: %v", msg, err)
	}
	// Key order as Base's builders write it (format note, op-rbuilder's pinned bytes).
	for _, tc := range []struct {
		raw  json.RawMessage
		want string
	}{
		{msg, "payload_id index base diff metadata"},
		{m["base"], "parent_beacon_block_root parent_hash fee_recipient prev_randao block_number gas_limit timestamp extra_data base_fee_per_gas"},
		{m["diff"], "state_root receipts_root logs_bloom gas_used block_hash transactions withdrawals withdrawals_root blob_gas_used"},
		{m["metadata"], "block_number new_account_balances receipts"},
	} {
		if got := strings.Join(keys(t, tc.raw), " "); got != tc.want {
			t.Errorf("keys %q, want %q", got, tc.want)
		}
	}
	wantBase := `{"parent_beacon_block_root":"0x2222222222222222222222222222222222222222222222222222222222222222",` +
		`"parent_hash":"0x3333333333333333333333333333333333333333333333333333333333333333",` +
		`"fee_recipient":"0x4200000000000000000000000000000000000011",` +
		`"prev_randao":"0x4444444444444444444444444444444444444444444444444444444444444444",` +
		`"block_number":"0x64","gas_limit":"0x1c9c380","timestamp":"0x686d6600","extra_data":"0x000102","base_fee_per_gas":"0x3b9aca00"}`
	if string(m["base"]) != wantBase {
		t.Errorf("base:\n got %s\nwant %s", m["base"], wantBase)
	}
	if string(m["payload_id"]) != `"0x0a0a0a0a0a0a0a0a"` || string(m["index"]) != "0" {
		t.Errorf("payload_id %s index %s", m["payload_id"], m["index"])
	}
	raw, _ := tx.MarshalBinary()
	hash := snap.Header.Hash()
	wantDiff := `{"state_root":"0x5555555555555555555555555555555555555555555555555555555555555555",` +
		`"receipts_root":"0x6666666666666666666666666666666666666666666666666666666666666666",` +
		`"logs_bloom":"` + hexutil.Encode(snap.Header.Bloom[:]) + `","gas_used":"0xc350",` +
		`"block_hash":"` + hash.Hex() + `","transactions":["` + hexutil.Encode(raw) + `"],"withdrawals":[],` +
		`"withdrawals_root":"0x8888888888888888888888888888888888888888888888888888888888888888","blob_gas_used":"0x0"}`
	if string(m["diff"]) != wantDiff {
		t.Errorf("diff:\n got %s\nwant %s", m["diff"], wantDiff)
	}
	if raw[0] != types.DynamicFeeTxType {
		t.Errorf("transaction not EIP-2718 typed: first byte %#x", raw[0])
	}
	wantMeta := `{"block_number":100,"new_account_balances":{"0x00000000000000000000000000000000000000bb":"0x2540be400"},` +
		`"receipts":{"` + tx.Hash().Hex() + `":{"type":"0x2","status":"0x1","cumulativeGasUsed":"0xc350",` +
		`"logs":[{"address":"0x00000000000000000000000000000000000000aa","topics":["0x00000000000000000000000000000000000000000000000000000000000000a1"],"data":"0x0102"}]}}}`
	if string(m["metadata"]) != wantMeta {
		t.Errorf("metadata:\n got %s\nwant %s", m["metadata"], wantMeta)
	}
}

func TestEncodeLaterIndexOmitsBase(t *testing.T) {
	snap, _ := fixture(t, 3)
	snap.Header.BlobGasUsed = nil
	msg, err := EncodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys(t, msg), " "); got != "payload_id index diff metadata" {
		t.Fatalf("keys %q: base must be absent after index 0", got)
	}
	var m struct {
		Index uint64          `json:"index"`
		Diff  json.RawMessage `json:"diff"`
	}
	if err := json.Unmarshal(msg, &m); err != nil || m.Index != 3 {
		t.Fatalf("index: %v %d", err, m.Index)
	}
	if strings.Contains(string(m.Diff), "blob_gas_used") {
		t.Fatalf("blob_gas_used must be absent when unknown: %s", m.Diff)
	}
}

func TestEncodeOnlyNewTransactions(t *testing.T) {
	snap, tx := fixture(t, 1)
	key, _ := crypto.HexToECDSA(chain.DevKeys[1])
	tx2, _ := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(1337)), &types.LegacyTx{Nonce: 0, GasPrice: big.NewInt(2e9), Gas: 21000, To: &balanceOf})
	snap.Txs = types.Transactions{tx, tx2}
	snap.Receipts = append(snap.Receipts, &types.Receipt{Type: types.LegacyTxType, Status: 0, CumulativeGasUsed: 71_000})
	snap.NewTxs = 1
	msg, err := EncodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Diff struct {
			Transactions []hexutil.Bytes `json:"transactions"`
		} `json:"diff"`
		Metadata struct {
			Receipts map[common.Hash]json.RawMessage `json:"receipts"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Diff.Transactions) != 1 || len(m.Metadata.Receipts) != 1 {
		t.Fatalf("want only the new transaction: %s", msg)
	}
	var dec types.Transaction
	if err := dec.UnmarshalBinary(m.Diff.Transactions[0]); err != nil || dec.Hash() != tx2.Hash() {
		t.Fatalf("transaction does not decode to the new one: %v", err)
	}
	if got := string(m.Metadata.Receipts[tx2.Hash()]); got != `{"type":"0x0","status":"0x0","cumulativeGasUsed":"0x11558","logs":[]}` {
		t.Fatalf("legacy receipt: %s", got)
	}
}

// TestEncodeDepositReceipt: an OP-stack block's flashblock 0 carries its
// L1-attributes deposit, whose metadata receipt has the deposit's nonce and
// receipt version, as in Base's pinned fixtures
// ({"type":"0x7e",…,"depositNonce":"0x7","depositReceiptVersion":"0x1"}).
func TestEncodeDepositReceipt(t *testing.T) {
	snap, _ := fixture(t, 0)
	to := common.HexToAddress("0x4200000000000000000000000000000000000015")
	dep := types.NewTx(&types.DepositTx{SourceHash: common.Hash{1}, From: common.HexToAddress("0xdeaddeaddeaddeaddeaddeaddeaddeaddead0001"), To: &to, Value: new(big.Int), Gas: 1_000_000, Data: []byte{0x09, 0x89, 0x99, 0xbe}})
	nonce, version := uint64(7), uint64(1)
	r := &types.Receipt{Type: types.DepositTxType, Status: 1, CumulativeGasUsed: 50_000, GasUsed: 50_000, TxHash: dep.Hash(), DepositNonce: &nonce, DepositReceiptVersion: &version}
	snap.Txs, snap.Receipts, snap.NewTxs = types.Transactions{dep}, types.Receipts{r}, 1
	msg, err := EncodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Diff struct {
			Transactions []hexutil.Bytes `json:"transactions"`
		} `json:"diff"`
		Metadata struct {
			Receipts map[common.Hash]json.RawMessage `json:"receipts"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatal(err)
	}
	raw, _ := dep.MarshalBinary()
	if len(m.Diff.Transactions) != 1 || !bytes.Equal(m.Diff.Transactions[0], raw) || raw[0] != types.DepositTxType {
		t.Fatalf("transactions %x", m.Diff.Transactions)
	}
	want := `{"type":"0x7e","status":"0x1","cumulativeGasUsed":"0xc350","logs":[],"depositNonce":"0x7","depositReceiptVersion":"0x1"}`
	if got := string(m.Metadata.Receipts[dep.Hash()]); got != want {
		t.Fatalf("deposit receipt\n got %s\nwant %s", got, want)
	}
}
