package seqapi_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/seqapi"
	"github.com/preconf/preconf/sequencer"
)

func TestSendRawTransactionErrors(t *testing.T) {
	h, srv := newAPIHarness(t, testBlockTime)
	defer h.stop()
	key := h.keys[0]
	mk := func(nonce, gas uint64, feeCap int64, value *big.Int) *types.Transaction {
		return h.sign(key, &types.DynamicFeeTx{ChainID: h.chain.Config().ChainID, Nonce: nonce, Gas: gas, GasFeeCap: big.NewInt(feeCap), GasTipCap: big.NewInt(1), To: &common.Address{1}, Value: value})
	}
	ok := mk(0, 21000, 100*params.GWei, nil)
	if r := call(t, srv, "eth_sendRawTransaction", raw(t, ok)); r.Error != nil || string(r.Result) != fmt.Sprintf("%q", ok.Hash().Hex()) {
		t.Fatalf("send: %s %+v", r.Result, r.Error)
	}
	h.waitFor("pre-confirmation", func() bool { return h.preconfirmed(ok) })
	huge := new(big.Int).Mul(big.NewInt(1e6), big.NewInt(params.Ether))
	wrongChain, _ := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(1)), &types.DynamicFeeTx{ChainID: big.NewInt(1), Nonce: 1, Gas: 21000, GasFeeCap: big.NewInt(100 * params.GWei), To: &common.Address{}})
	tests := []struct {
		name  string
		input any
		code  int
		msg   string
	}{
		{"nonce too low", raw(t, mk(0, 21000, 100*params.GWei, nil)), -32000, "nonce too low: next nonce 1, tx nonce 0"},
		{"intrinsic gas", raw(t, mk(1, 20000, 100*params.GWei, nil)), -32000, "intrinsic gas too low: gas 20000, minimum needed 21000"},
		{"insufficient funds", raw(t, mk(1, 21000, 100*params.GWei, huge)), -32000, "insufficient funds for gas * price + value"},
		{"fee cap below base fee", raw(t, mk(1, 21000, 1, nil)), -32000, "max fee per gas less than block base fee"},
		{"wrong chain", raw(t, wrongChain), -32000, "invalid sender: invalid chain id for signer"},
		{"garbage", hexutil.Bytes{0x02}, -32000, "typed transaction too short"},
		{"not hex", "zz", -32602, "invalid argument 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(t, srv, "eth_sendRawTransaction", tt.input)
			if r.Error == nil {
				t.Fatalf("accepted: %s", r.Result)
			}
			if r.Error.Code != tt.code || !strings.HasPrefix(r.Error.Message, tt.msg) {
				t.Errorf("error %d %q, want %d %q…", r.Error.Code, r.Error.Message, tt.code, tt.msg)
			}
		})
	}
	// Replacement needs a fee bump.
	a := mk(5, 21000, 100*params.GWei, nil)
	call(t, srv, "eth_sendRawTransaction", raw(t, a))
	b := h.sign(key, &types.DynamicFeeTx{ChainID: h.chain.Config().ChainID, Nonce: 5, Gas: 21000, GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(1), To: &common.Address{2}})
	if r := call(t, srv, "eth_sendRawTransaction", raw(t, b)); r.Error == nil || r.Error.Message != "replacement transaction underpriced" {
		t.Errorf("replacement: %+v", r.Error)
	}
	// The gapped one is queued.
	var status map[string]hexutil.Uint
	json.Unmarshal(call(t, srv, "txpool_status").Result, &status)
	if status["queued"] != 1 || status["pending"] != 0 {
		t.Errorf("txpool_status %v, want 1 queued", status)
	}
	var content map[string]map[string]map[string]map[string]any
	json.Unmarshal(call(t, srv, "txpool_content").Result, &content)
	from := crypto.PubkeyToAddress(key.PublicKey).Hex()
	if q := content["queued"][from]["5"]; q == nil || q["hash"] != a.Hash().Hex() || q["blockNumber"] != nil {
		t.Errorf("txpool_content queued: %v", content["queued"])
	}
	var inspect map[string]map[string]map[string]string
	json.Unmarshal(call(t, srv, "txpool_inspect").Result, &inspect)
	if s := inspect["queued"][from]["5"]; !strings.Contains(s, "21000 gas") {
		t.Errorf("txpool_inspect: %q", s)
	}
}

func TestSendRawTransactionSync(t *testing.T) {
	h, srv := newAPIHarness(t, 2*time.Second)
	defer h.stop()
	key := h.keys[1]
	tx := h.sign(key, &types.DynamicFeeTx{ChainID: h.chain.Config().ChainID, Nonce: 0, Gas: 21000, GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(1), To: &common.Address{9}, Value: big.NewInt(7)})
	r := call(t, srv, "eth_sendRawTransactionSync", raw(t, tx), "0x2710")
	if r.Error != nil {
		t.Fatalf("sync: %+v", r.Error)
	}
	var rec struct {
		TransactionHash common.Hash    `json:"transactionHash"`
		Status          hexutil.Uint64 `json:"status"`
		BlockNumber     hexutil.Uint64 `json:"blockNumber"`
	}
	if err := json.Unmarshal(r.Result, &rec); err != nil {
		t.Fatal(err)
	}
	snap := h.src.Current()
	if rec.TransactionHash != tx.Hash() || rec.Status != 1 {
		t.Errorf("receipt %s", r.Result)
	}
	// The receipt names the block it lands in: pending's number, not sealed
	// yet (unless the 2 s block happened to seal meanwhile).
	if uint64(rec.BlockNumber) != h.chain.Head().Number.Uint64()+1 && !h.sealed(tx) {
		t.Errorf("receipt block %d, head %d", rec.BlockNumber, h.chain.Head().Number)
	}
	if _, _, _, ok := snap.Tx(tx.Hash()); !ok && !h.sealed(tx) {
		t.Error("sync answered before the transaction was visible")
	}
	// Visible at pending right away.
	var bal hexutil.Big
	json.Unmarshal(call(t, srv, "eth_getBalance", common.Address{9}, "pending").Result, &bal)
	if bal.ToInt().Int64() != 7 {
		t.Errorf("pending balance %v", bal.ToInt())
	}
	// Same transaction again: the same receipt.
	if r2 := call(t, srv, "eth_sendRawTransactionSync", raw(t, tx)); r2.Error != nil {
		t.Errorf("resend: %+v", r2.Error)
	}
	// A nonce gap answers at once with the expected nonce.
	gap := h.sign(key, &types.DynamicFeeTx{ChainID: h.chain.Config().ChainID, Nonce: 3, Gas: 21000, GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(1), To: &common.Address{9}})
	r = call(t, srv, "eth_sendRawTransactionSync", raw(t, gap), 100)
	if r.Error == nil || r.Error.Code != -32000 || string(r.Error.Data) != `"0x1"` || !strings.HasPrefix(r.Error.Message, "nonce too high") {
		t.Errorf("gap: %+v", r.Error)
	}
}

func TestSendTransactionDevAccounts(t *testing.T) {
	h, srv := newAPIHarness(t, testBlockTime)
	defer h.stop()
	var accounts []common.Address
	json.Unmarshal(call(t, srv, "eth_accounts").Result, &accounts)
	if len(accounts) != 10 || accounts[0] != common.HexToAddress("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266") {
		t.Fatalf("eth_accounts %v", accounts)
	}
	to := common.HexToAddress("0x1234")
	r := call(t, srv, "eth_sendTransaction", map[string]any{"from": accounts[3], "to": to, "value": "0x64"})
	if r.Error != nil {
		t.Fatalf("send: %+v", r.Error)
	}
	var hash common.Hash
	json.Unmarshal(r.Result, &hash)
	h.waitFor("sealed", func() bool {
		_, _, _, _, ok := h.chain.TxLookup(hash)
		return ok
	})
	tx, _, _, _, _ := h.chain.TxLookup(hash)
	if tx.Type() != types.DynamicFeeTxType || tx.Gas() != 21000 || tx.Value().Int64() != 100 {
		t.Errorf("built tx: type %d gas %d value %v", tx.Type(), tx.Gas(), tx.Value())
	}
	// Contract creation: gas comes from eth_estimateGas.
	r = call(t, srv, "eth_sendTransaction", map[string]any{"from": accounts[3], "input": "0x600e80600c6000396000f300600035600155600160006000a100"}) // a contract that logs and stores its calldata
	if r.Error != nil {
		t.Fatalf("deploy: %+v", r.Error)
	}
	// Legacy when gasPrice is given.
	r = call(t, srv, "eth_signTransaction", map[string]any{"from": accounts[3], "to": to, "gasPrice": "0x174876e800", "gas": "0x5208", "nonce": "0x9"})
	var signed struct {
		Raw hexutil.Bytes `json:"raw"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &signed) != nil {
		t.Fatalf("signTransaction: %+v", r.Error)
	}
	stx := new(types.Transaction)
	if err := stx.UnmarshalBinary(signed.Raw); err != nil || stx.Type() != types.LegacyTxType || stx.Nonce() != 9 {
		t.Errorf("signed: %v type %d nonce %d", err, stx.Type(), stx.Nonce())
	}
	if r := call(t, srv, "eth_sendTransaction", map[string]any{"from": common.Address{5}, "to": to}); r.Error == nil || r.Error.Message != "unknown account" {
		t.Errorf("unknown account: %+v", r.Error)
	}
	// personal_sign / eth_sign recover to the account.
	msg := hexutil.Bytes("hello")
	for _, m := range []struct {
		method string
		params []any
	}{{"personal_sign", []any{msg, accounts[2]}}, {"eth_sign", []any{accounts[2], msg}}} {
		var sig hexutil.Bytes
		r := call(t, srv, m.method, m.params...)
		if r.Error != nil || json.Unmarshal(r.Result, &sig) != nil || len(sig) != 65 {
			t.Fatalf("%s: %+v %s", m.method, r.Error, r.Result)
		}
		sig[64] -= 27
		pub, err := crypto.SigToPub(crypto.Keccak256([]byte("\x19Ethereum Signed Message:\n5hello")), sig)
		if err != nil || crypto.PubkeyToAddress(*pub) != accounts[2] {
			t.Errorf("%s signature recovers to %v (%v)", m.method, pub, err)
		}
	}
}

func TestDisabled(t *testing.T) {
	srv := rpc.NewServer(rpc.Options{})
	seqapi.RegisterDisabled(srv)
	r := call(t, srv, "eth_sendRawTransaction", "0x00")
	if r.Error == nil || r.Error.Code != -32000 || !strings.Contains(r.Error.Message, "--no-sequencer") {
		t.Errorf("%+v", r.Error)
	}
	if r := call(t, srv, "txpool_status"); string(r.Result) != `{"pending":"0x0","queued":"0x0"}` {
		t.Errorf("txpool_status %s", r.Result)
	}
}

// TestSendTransactionEstimateErrors: when eth_sendTransaction estimates the
// gas, an estimation failure answers exactly what eth_estimateGas answers
// for the same call at pending (code, message and data).
func TestSendTransactionEstimateErrors(t *testing.T) {
	h, srv := newAPIHarness(t, testBlockTime)
	defer h.stop()
	from := crypto.PubkeyToAddress(h.keys[4].PublicKey)
	for name, args := range map[string]map[string]any{
		"revert":             {"from": from, "input": "0x60006000fd"},           // creation reverting without data
		"revert with data":   {"from": from, "input": "0x602a60005260206000fd"}, // creation reverting with a word
		"insufficient funds": {"from": from, "to": common.Address{9}, "value": "0xffffffffffffffffffffffffffffffff"},
	} {
		want := call(t, srv, "eth_estimateGas", args, "pending")
		if want.Error == nil {
			t.Fatalf("%s: eth_estimateGas succeeded: %s", name, want.Result)
		}
		got := call(t, srv, "eth_sendTransaction", args)
		if got.Error == nil {
			t.Fatalf("%s: eth_sendTransaction succeeded: %s", name, got.Result)
		}
		if got.Error.Code != want.Error.Code || got.Error.Message != want.Error.Message || string(got.Error.Data) != string(want.Error.Data) {
			t.Errorf("%s: eth_sendTransaction error %+v (data %s), eth_estimateGas %+v (data %s)", name, got.Error, got.Error.Data, want.Error, want.Error.Data)
		}
	}
}

// TestPendingNonceCountsPool: transactions waiting in the pool (manual
// mining without flashblocks: none executes) count in the nonce at
// "pending" and in the one eth_sendTransaction fills in; "latest" does not
// move until the block is mined.
func TestPendingNonceCountsPool(t *testing.T) {
	h, srv := serve(newManualHarness(t, 0))
	defer h.stop()
	from := crypto.PubkeyToAddress(h.keys[2].PublicKey)
	for i := range 3 {
		h.transfer(2, common.Address{0xb1}, int64(i+1))
	}
	nonce := func(tag string) string {
		t.Helper()
		r := call(t, srv, "eth_getTransactionCount", from, tag)
		if r.Error != nil {
			t.Fatal(r.Error.Message)
		}
		return string(r.Result)
	}
	if p, l := nonce("pending"), nonce("latest"); p != `"0x3"` || l != `"0x0"` {
		t.Fatalf("nonce at pending %s, latest %s: want 0x3 and 0x0", p, l)
	}
	r := call(t, srv, "eth_sendTransaction", map[string]any{"from": from, "to": common.Address{0xb1}, "value": "0x1"})
	if r.Error != nil {
		t.Fatal(r.Error.Message)
	}
	var hash common.Hash
	json.Unmarshal(r.Result, &hash)
	if e := h.seq.Pool().Get(hash); e == nil || e.Tx.Nonce() != 3 {
		t.Fatalf("eth_sendTransaction pooled %+v, want nonce 3", e)
	}
	if p := nonce("pending"); p != `"0x4"` {
		t.Errorf("nonce at pending %s after eth_sendTransaction, want 0x4", p)
	}
	if r := call(t, srv, "evm_mine"); r.Error != nil {
		t.Fatal(r.Error.Message)
	}
	if p, l := nonce("pending"), nonce("latest"); p != `"0x4"` || l != `"0x4"` {
		t.Errorf("after evm_mine: nonce at pending %s, latest %s, want 0x4", p, l)
	}
}

// TestNonceTakenByPreconfirmed: a nonce taken by a pre-confirmed
// transaction that no sealed block holds yet is "nonce too low" naming the
// pending nonce and where to read it (a client reading nonces at "latest",
// as cast does, is a block behind); once the block is sealed the answer is
// go-ethereum's plain one.
func TestNonceTakenByPreconfirmed(t *testing.T) {
	h, srv := serve(newManualHarness(t, testInterval))
	defer h.stop()
	key := h.keys[3]
	from := crypto.PubkeyToAddress(key.PublicKey)
	first := h.transfer(3, common.Address{0xc1}, 1)
	h.waitFor("pre-confirmation", func() bool { return h.preconfirmed(first) })
	again := h.sign(key, &types.DynamicFeeTx{ChainID: h.chain.Config().ChainID, Nonce: 0, Gas: 21000,
		GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(params.GWei), To: &common.Address{0xc2}})
	r := call(t, srv, "eth_sendRawTransaction", raw(t, again))
	want := fmt.Sprintf(`nonce too low: next nonce 1, tx nonce 0: nonce 0 is taken by a pre-confirmed transaction not yet in a sealed block (latest is block 0, where the account's nonce is still 0); read the next nonce at the "pending" block tag: eth_getTransactionCount(%s, "pending") = 1 (cast nonce --block pending)`, from.Hex())
	if r.Error == nil || r.Error.Code != -32000 || r.Error.Message != want {
		t.Fatalf("resend of a pre-confirmed nonce: %+v\nwant %s", r.Error, want)
	}
	if _, err := h.seq.Admit(again); !errors.Is(err, core.ErrNonceTooLow) {
		t.Errorf("Admit: %v, want a core.ErrNonceTooLow", err)
	}
	if r := call(t, srv, "evm_mine"); r.Error != nil {
		t.Fatal(r.Error.Message)
	}
	r = call(t, srv, "eth_sendRawTransaction", raw(t, again))
	if r.Error == nil || r.Error.Message != "nonce too low: next nonce 1, tx nonce 0" {
		t.Errorf("resend of a sealed nonce: %+v, want go-ethereum's message", r.Error)
	}
}

// TestFillTransaction: eth_fillTransaction answers go-ethereum's {raw, tx}
// for the unsigned transaction with what was left out filled in at pending:
// the pool nonce, the gas estimated at pending, the fees and the chain id.
func TestFillTransaction(t *testing.T) {
	h, srv := serve(newManualHarness(t, 0))
	defer h.stop()
	from := crypto.PubkeyToAddress(h.keys[5].PublicKey)
	to := common.Address{0xd1}
	h.transfer(5, to, 1)
	h.transfer(5, to, 2) // two pooled: the filled nonce is 2
	baseFee := h.src.Current().Header.BaseFee
	fill := func(args map[string]any) (*types.Transaction, map[string]any, *rpcResult) {
		t.Helper()
		r := call(t, srv, "eth_fillTransaction", args)
		if r.Error != nil {
			return nil, nil, &r
		}
		var res struct {
			Raw hexutil.Bytes  `json:"raw"`
			Tx  map[string]any `json:"tx"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil {
			t.Fatal(err)
		}
		tx := new(types.Transaction)
		if err := tx.UnmarshalBinary(res.Raw); err != nil {
			t.Fatalf("raw %x: %v", res.Raw, err)
		}
		if res.Tx["hash"] != tx.Hash().Hex() {
			t.Errorf("tx.hash %v, raw hashes to %v", res.Tx["hash"], tx.Hash())
		}
		return tx, res.Tx, nil
	}
	tx, obj, errRes := fill(map[string]any{"from": from, "to": to, "value": "0x5"})
	if errRes != nil {
		t.Fatalf("fill: %+v", errRes.Error)
	}
	wantCap := new(big.Int).Add(new(big.Int).Mul(baseFee, big.NewInt(2)), seqapi.DefaultTip)
	if tx.Type() != types.DynamicFeeTxType || tx.Nonce() != 2 || tx.Gas() != 21000 || tx.ChainId().Cmp(h.chain.Config().ChainID) != 0 ||
		tx.GasTipCap().Cmp(seqapi.DefaultTip) != 0 || tx.GasFeeCap().Cmp(wantCap) != 0 || tx.Value().Int64() != 5 || *tx.To() != to {
		t.Errorf("filled %s", obj)
	}
	if v, r, s := tx.RawSignatureValues(); v.Sign() != 0 || r.Sign() != 0 || s.Sign() != 0 {
		t.Errorf("the filled transaction is signed: v %v r %v s %v", v, r, s)
	}
	if _, ok := obj["from"]; ok {
		t.Errorf("tx carries \"from\" (go-ethereum's has none): %v", obj)
	}
	// No key needed, no sender: the zero address's nonce.
	if tx, _, errRes = fill(map[string]any{"to": to}); errRes != nil || tx.Nonce() != 0 {
		t.Errorf("fill without from: %v %+v", tx, errRes)
	}
	// A gas price alone makes a legacy transaction.
	if tx, _, errRes = fill(map[string]any{"from": from, "to": to, "gasPrice": "0x3b9aca00"}); errRes != nil || tx.Type() != types.LegacyTxType || tx.GasPrice().Int64() != params.GWei {
		t.Errorf("fill with gasPrice: %v %+v", tx, errRes)
	}
	// Errors: as go-ethereum's, and an estimate's as eth_estimateGas's.
	if _, _, errRes = fill(map[string]any{"from": from}); errRes == nil || errRes.Error.Message != "contract creation without any data provided" {
		t.Errorf("creation without data: %+v", errRes)
	}
	revert := map[string]any{"from": from, "input": "0x602a60005260206000fd"}
	want := call(t, srv, "eth_estimateGas", revert, "pending")
	if _, _, errRes = fill(revert); errRes == nil || want.Error == nil || errRes.Error.Code != want.Error.Code || string(errRes.Error.Data) != string(want.Error.Data) {
		t.Errorf("reverting creation: %+v, eth_estimateGas %+v", errRes, want.Error)
	}
}

// TestTxpoolContentFrom: txpool_contentFrom is txpool_content for one
// sender (nonce → go-ethereum's pending RPC transaction object), empty maps
// for a sender with nothing pooled; txpool_status counts both.
func TestTxpoolContentFrom(t *testing.T) {
	h, srv := serve(newManualHarness(t, 0))
	defer h.stop()
	key := h.keys[6]
	from := crypto.PubkeyToAddress(key.PublicKey)
	tx0 := h.transfer(6, common.Address{0xe1}, 1)
	gapped := h.sign(key, &types.DynamicFeeTx{ChainID: h.chain.Config().ChainID, Nonce: 5, Gas: 21000,
		GasFeeCap: big.NewInt(100 * params.GWei), GasTipCap: big.NewInt(params.GWei), To: &common.Address{0xe2}})
	if _, err := h.seq.Admit(gapped); err != nil {
		t.Fatal(err)
	}
	h.transfer(7, common.Address{0xe3}, 1)
	if r := call(t, srv, "txpool_status"); string(r.Result) != `{"pending":"0x2","queued":"0x1"}` {
		t.Errorf("txpool_status %s %+v", r.Result, r.Error)
	}
	var got struct {
		Pending, Queued map[string]map[string]any
	}
	r := call(t, srv, "txpool_contentFrom", from)
	if r.Error != nil || json.Unmarshal(r.Result, &got) != nil {
		t.Fatalf("txpool_contentFrom: %s %+v", r.Result, r.Error)
	}
	p0, q5 := got.Pending["0"], got.Queued["5"]
	if len(got.Pending) != 1 || len(got.Queued) != 1 || p0 == nil || q5 == nil {
		t.Fatalf("txpool_contentFrom: %s", r.Result)
	}
	if p0["hash"] != tx0.Hash().Hex() || p0["blockHash"] != nil || p0["transactionIndex"] != nil || p0["from"] != strings.ToLower(from.Hex()) ||
		p0["gasPrice"] != hexutil.EncodeBig(tx0.GasFeeCap()) || p0["maxFeePerGas"] != hexutil.EncodeBig(tx0.GasFeeCap()) || q5["hash"] != gapped.Hash().Hex() {
		t.Errorf("txpool_contentFrom entries: pending 0 %v, queued 5 %v", p0, q5)
	}
	// The same objects as txpool_content's.
	var all struct {
		Pending, Queued map[string]map[string]map[string]any
	}
	json.Unmarshal(call(t, srv, "txpool_content").Result, &all)
	if fmt.Sprint(all.Pending[from.Hex()]) != fmt.Sprint(got.Pending) || fmt.Sprint(all.Queued[from.Hex()]) != fmt.Sprint(got.Queued) {
		t.Errorf("txpool_content for %v differs from txpool_contentFrom", from)
	}
	if r := call(t, srv, "txpool_contentFrom", common.Address{}); r.Error != nil || string(r.Result) != `{"pending":{},"queued":{}}` {
		t.Errorf("nothing pooled: %s %+v", r.Result, r.Error)
	}
	if r := call(t, srv, "txpool_contentFrom"); r.Error == nil || r.Error.Code != -32602 {
		t.Errorf("no address: %+v", r.Error)
	}
}

// TestDepositRequests: eth_sendTransaction with anvil --optimism's deposit
// fields injects a user deposit (any sender, minted value), which lands in
// the next block after the L1-attributes deposit and reads back with its
// deposit fields; a raw deposit, a system deposit and a signed one are
// refused; the plain-Ethereum chain refuses deposits altogether.
func TestDepositRequests(t *testing.T) {
	h, srv := newAPIHarness(t, testBlockTime)
	defer h.stop()
	from, to := common.Address{0xd1}, common.Address{0xd2}
	r := call(t, srv, "eth_sendTransaction", map[string]any{"from": from, "to": to, "value": "0x64", "gas": "0x5208", "mint": "0x3e8"})
	if r.Error != nil {
		t.Fatalf("deposit: %+v", r.Error)
	}
	var hash common.Hash
	json.Unmarshal(r.Result, &hash)
	// Without gas: estimated (a plain transfer here).
	r2 := call(t, srv, "eth_sendTransaction", map[string]any{"from": to, "to": from, "value": "0x1", "mint": "0x1", "type": "0x7e"})
	if r2.Error != nil {
		t.Fatalf("deposit without gas: %+v", r2.Error)
	}
	var hash2 common.Hash
	json.Unmarshal(r2.Result, &hash2)
	h.waitFor("deposits sealed", func() bool {
		_, _, _, _, ok1 := h.chain.TxLookup(hash)
		_, _, _, _, ok2 := h.chain.TxLookup(hash2)
		return ok1 && ok2
	})
	var tx map[string]any
	json.Unmarshal(call(t, srv, "eth_getTransactionByHash", hash).Result, &tx)
	if tx["type"] != "0x7e" || tx["mint"] != "0x3e8" || tx["from"] != strings.ToLower(from.Hex()) || tx["sourceHash"] == nil || tx["transactionIndex"] != "0x1" || tx["depositReceiptVersion"] != "0x1" {
		t.Errorf("deposit transaction %v", tx)
	}
	var rc map[string]any
	json.Unmarshal(call(t, srv, "eth_getTransactionReceipt", hash).Result, &rc)
	if rc["status"] != "0x1" || rc["depositNonce"] != "0x0" || rc["l1Fee"] != nil {
		t.Errorf("deposit receipt %v", rc)
	}
	var bal hexutil.Big
	json.Unmarshal(call(t, srv, "eth_getBalance", to, "latest").Result, &bal)
	if bal.ToInt().Int64() != 100 {
		t.Errorf("recipient balance %v, want 100 (the first deposit's value; the second sent its minted wei on)", bal.ToInt())
	}
	var tx2 map[string]any
	json.Unmarshal(call(t, srv, "eth_getTransactionByHash", hash2).Result, &tx2)
	if tx2["gas"] != "0x5208" {
		t.Errorf("estimated deposit gas %v, want 0x5208", tx2["gas"])
	}

	dep := types.NewTx(&types.DepositTx{From: from, To: &to, Mint: big.NewInt(1), Value: new(big.Int), Gas: 21000})
	for _, tc := range []struct {
		method string
		param  any
		code   int
		msg    string
	}{
		{"eth_sendRawTransaction", raw(t, dep), -32000, "transaction type not supported: deposit transactions (type 0x7e) come from L1"},
		{"eth_sendRawTransactionSync", raw(t, dep), -32000, "transaction type not supported: deposit transactions (type 0x7e) come from L1"},
		{"eth_sendTransaction", map[string]any{"from": from, "to": to, "gas": "0x5208", "mint": "0x1", "isSystemTx": true}, -32602, "system deposits (isSystemTx) are disabled since Regolith"},
		{"eth_sendTransaction", map[string]any{"from": from, "to": to, "gas": "0x5207", "mint": "0x1"}, -32000, "deposit gas 20999 is below the portal's minimum of 21000"},
		{"eth_signTransaction", map[string]any{"from": chainDev(0), "to": to, "gas": "0x5208", "mint": "0x1"}, -32000, "deposit transactions are not signed"},
	} {
		r := call(t, srv, tc.method, tc.param)
		if r.Error == nil || r.Error.Code != tc.code || !strings.HasPrefix(r.Error.Message, tc.msg) {
			t.Errorf("%s %v: %s %+v, want %d %q", tc.method, tc.param, r.Result, r.Error, tc.code, tc.msg)
		}
	}

	// The plain-Ethereum dev chain.
	l1 := newHarness(t, chain.DevGenesis(), sequencer.Config{Interval: testInterval, BlockTime: testBlockTime})
	defer l1.stop()
	srv1 := rpc.NewServer(rpc.Options{})
	seqapi.Register(srv1, l1.seq, nil, nil)
	if r := call(t, srv1, "eth_sendTransaction", map[string]any{"from": from, "to": to, "gas": "0x5208", "mint": "0x1"}); r.Error == nil || !strings.HasPrefix(r.Error.Message, "deposit transactions need an OP-stack chain") {
		t.Errorf("deposit on the l1 chain: %+v", r.Error)
	}
	if r := call(t, srv1, "eth_sendRawTransaction", raw(t, dep)); r.Error == nil || r.Error.Message != "transaction type not supported" {
		t.Errorf("raw deposit on the l1 chain: %+v", r.Error)
	}
}
