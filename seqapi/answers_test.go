package seqapi_test

import (
	"fmt"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/preconf/preconf/anvil"
	"github.com/preconf/preconf/sequencer"
)

// TestErrorAnswers pins the code and the whole message of the intake,
// mining and testing_buildBlockV1 errors that come from the sequencer, as
// the node answered them before the JSON-RPC methods left the sequencer
// package.
func TestErrorAnswers(t *testing.T) {
	h, srv := serve(newManualHarness(t, 0)) // the plain-Ethereum dev chain
	defer h.stop()
	head := h.chain.Head()
	from, to := chainDev(0), common.Address{0xd2}
	attrs := func(ts uint64) map[string]any {
		return map[string]any{"timestamp": hexutil.EncodeUint64(ts), "prevRandao": common.Hash{}, "suggestedFeeRecipient": common.Address{},
			"withdrawals": []any{}, "parentBeaconBlockRoot": common.Hash{1}}
	}
	gapped := h.sign(h.keys[1], &types.DynamicFeeTx{ChainID: h.chain.Config().ChainID, Nonce: 7, Gas: 21000, GasFeeCap: big.NewInt(100 * params.GWei), To: &to})
	unknown := common.Hash{0xee}
	tests := []struct {
		method string
		params []any
		code   int
		msg    string
	}{
		{"evm_mine", []any{0}, -32602, fmt.Sprintf("timestamp 0 is not after the latest block's (%d, block 0)", head.Time)},
		{"anvil_mine", []any{anvil.MaxMineBlocks + 1}, -32602, "100001 blocks asked, at most 100000 per call"},
		{"evm_mine", []any{"0xzz"}, -32602, "invalid timestamp: json: cannot unmarshal invalid hex string into Go value of type hexutil.Uint64"},
		{"testing_buildBlockV1", []any{unknown, attrs(head.Time + 1)}, -32000, "unknown parent block " + unknown.Hex()},
		{"testing_buildBlockV1", []any{head.Hash(), attrs(head.Time)}, -32000, fmt.Sprintf("invalid timestamp, parent %d given %d", head.Time, head.Time)},
		{"testing_buildBlockV1", []any{head.Hash(), attrs(head.Time + 1), []any{raw(t, gapped)}}, -32000, fmt.Sprintf("nonce too high: address %v, tx: 7 state: 0", chainDev(1))},
		{"eth_sendTransaction", []any{map[string]any{"from": from, "to": to, "gas": "0x5208", "mint": "0x1"}}, -32000, sequencer.ErrNotOPStack.Error()},
		{"eth_sendTransaction", []any{map[string]any{"from": common.Address{0xaa}, "to": to}}, -32000, "unknown account"},
		{"eth_sendTransaction", []any{map[string]any{"to": to}}, -32602, `missing "from"`},
		{"eth_sendTransaction", []any{map[string]any{"from": from}}, -32000, "contract creation without any data provided"},
		{"eth_sendTransaction", []any{map[string]any{"from": from, "to": to, "type": "0x3"}}, -32000, "transaction type not supported: a blob transaction (type 3) needs its blobs: sign it with its sidecar and send it with eth_sendRawTransaction"},
		{"eth_sendTransaction", []any{map[string]any{"from": from, "to": to, "type": "zz"}}, -32602, `invalid "type": json: cannot unmarshal hex string without 0x prefix into Go value of type hexutil.Uint64`},
		{"eth_sendTransaction", []any{map[string]any{"from": from, "to": to, "chainId": "0x1"}}, -32602, fmt.Sprintf("chainId does not match node's (have=1, want=%v)", h.chain.Config().ChainID)},
		{"eth_sendTransaction", []any{map[string]any{"from": from, "to": to, "data": "0x01", "input": "0x02"}}, -32602, `both "data" and "input" are set and not equal. Please use "input" to pass transaction call data`},
		{"eth_signTransaction", []any{map[string]any{"from": from, "input": "0x00", "gas": "0x10000", "type": "0x4"}}, -32000, "EIP-7702 transaction cannot be used to create contract"},
		{"eth_signTransaction", []any{map[string]any{"from": from, "to": to, "gas": "0x5208", "mint": "0x1"}}, -32000, "deposit transactions are not signed: send the request with eth_sendTransaction"},
		{"eth_sign", []any{common.Address{0xaa}, "0x01"}, -32000, "unknown account"},
		{"eth_sendRawTransactionSync", []any{raw(t, gapped)}, -32000, "nonce too high: tx nonce 7, expected nonce 0 (the transaction is queued until the gap is filled)"},
		{"eth_sendRawTransactionSync", []any{raw(t, gapped), -1}, -32602, "invalid argument 1: timeout must be milliseconds"},
		{"eth_sendRawTransaction", []any{"0x02"}, -32000, "typed transaction too short"},
	}
	for _, tt := range tests {
		r := call(t, srv, tt.method, tt.params...)
		if r.Error == nil || r.Error.Code != tt.code || r.Error.Message != tt.msg {
			t.Errorf("%s %v: %s %+v, want %d %q", tt.method, tt.params, r.Result, r.Error, tt.code, tt.msg)
		}
	}

	// A timestamp for a block that already pre-confirmed transactions.
	h2, srv2 := serve(newManualHarness(t, testInterval))
	defer h2.stop()
	tx := h2.transfer(0, to, 1)
	h2.waitFor("pre-confirmation", func() bool { return h2.preconfirmed(tx) })
	snap := h2.src.Current()
	want := fmt.Sprintf("the pending block %d already pre-confirmed 1 transactions executed at timestamp %d; a timestamp can be chosen only for a block without pre-confirmed transactions (start with --flashblock-interval 0 to keep transactions unexecuted until mined)", snap.Header.Number, snap.Header.Time)
	if r := call(t, srv2, "evm_mine", snap.Header.Time+100); r.Error == nil || r.Error.Code != -32000 || r.Error.Message != want {
		t.Errorf("evm_mine at another time: %s %+v, want -32000 %q", r.Result, r.Error, want)
	}
}
