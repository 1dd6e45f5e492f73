package api_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
)

// TestSimulateWithdrawalsRootZeroMode: without state roots (the default),
// a simulated Isthmus block's withdrawals root — the message passer's
// storage root — is still exact while the calls leave the passer alone
// (the parent's at latest, the pending block's at pending), and zero once a
// call enters it, as the state root. (Compute mode gives op-geth's exact
// roots: the op-geth differential tests.)
func TestSimulateWithdrawalsRootZeroMode(t *testing.T) {
	n, err := node.New(node.Config{Sequencer: &sequencer.Config{BlockTime: 10 * time.Second}}) // one pending block for the whole test
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	url := n.URL()
	from := chain.DevAccounts()[2]
	// A withdrawal pre-confirmed in the pending block moves its root.
	rpcCall(t, url, "eth_sendTransaction", map[string]any{"from": from, "to": params.OptimismL2ToL1MessagePasser, "value": "0x1", "gas": "0x30d40",
		"data": hexutil.Bytes(withdrawalCall(from))})
	type block struct {
		Number          hexutil.Uint64 `json:"number"`
		StateRoot       common.Hash    `json:"stateRoot"`
		WithdrawalsRoot common.Hash    `json:"withdrawalsRoot"`
		Transactions    []any          `json:"transactions"`
	}
	var pend block
	deadline := time.Now().Add(30 * time.Second)
	for len(pend.Transactions) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("withdrawal never pre-confirmed")
		}
		json.Unmarshal(rpcCall(t, url, "eth_getBlockByNumber", "pending", false), &pend)
		time.Sleep(10 * time.Millisecond)
	}
	var latest block
	json.Unmarshal(rpcCall(t, url, "eth_getBlockByNumber", "latest", false), &latest)
	if pend.WithdrawalsRoot == latest.WithdrawalsRoot {
		t.Fatal("the pending withdrawal did not change the pending block's withdrawals root")
	}
	simulate := func(tag string, call map[string]any) block {
		var out []block
		json.Unmarshal(rpcCall(t, url, "eth_simulateV1", map[string]any{"blockStateCalls": []any{map[string]any{"calls": []any{call}}}}, tag), &out)
		if len(out) != 1 {
			t.Fatalf("simulate at %s: %d blocks", tag, len(out))
		}
		return out[0]
	}
	plain := map[string]any{"from": from, "to": common.Address{0x42}, "value": "0x1"}
	withdraw := map[string]any{"from": from, "to": params.OptimismL2ToL1MessagePasser, "value": "0x1", "data": hexutil.Bytes(withdrawalCall(from))}
	for _, tc := range []struct {
		tag  string
		call map[string]any
		want common.Hash
	}{
		{"latest", plain, latest.WithdrawalsRoot},
		{"pending", plain, pend.WithdrawalsRoot},
		{"latest", withdraw, common.Hash{}},
		{"pending", withdraw, common.Hash{}},
	} {
		b := simulate(tc.tag, tc.call)
		if b.StateRoot != (common.Hash{}) || b.WithdrawalsRoot != tc.want {
			t.Errorf("simulate at %s (block %d): stateRoot %s withdrawalsRoot %s, want %s", tc.tag, b.Number, b.StateRoot, b.WithdrawalsRoot, tc.want)
		}
	}
}
