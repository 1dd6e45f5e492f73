package anvil_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/anvil"
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
)

// mineNode is a node on the plain-Ethereum dev chain with scfg's
// sequencer, called without HTTP (n.RPC.Handle), closed when the test ends.
func mineNode(t *testing.T, scfg sequencer.Config) (*node.Node, func(method string, params ...any) answer) {
	t.Helper()
	n, err := node.New(node.Config{DataDir: t.TempDir(), Genesis: chain.DevGenesis(), Sequencer: &scfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n, func(method string, params ...any) answer {
		t.Helper()
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		var a answer
		if err := json.Unmarshal(n.RPC.Handle(context.Background(), req), &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
}

// TestMineMethods: evm_mine's and anvil_mine's parameters and answers as
// anvil's (hardhat_mine is anvil_mine).
func TestMineMethods(t *testing.T) {
	n, call := mineNode(t, sequencer.Config{Mining: sequencer.ManualMining, Interval: sequencer.NoFlashblocks})
	future := uint64(time.Now().Unix()) + 1_000_000
	tests := []struct {
		method string
		params []any
		result string // "" for an error
		blocks uint64
	}{
		{"evm_mine", nil, `"0x0"`, 1},
		{"evm_mine", []any{nil}, `"0x0"`, 1},
		{"evm_mine", []any{future}, `"0x0"`, 1},
		{"evm_mine", []any{hexutil.EncodeUint64(future + 10)}, `"0x0"`, 1},
		{"evm_mine", []any{map[string]any{"timestamp": future + 20, "blocks": 2}}, `"0x0"`, 2},
		{"evm_mine", []any{map[string]any{"blocks": "0x2"}}, `"0x0"`, 2},
		{"evm_mine", []any{"abc"}, "", 0},
		{"evm_mine", []any{1, 2}, "", 0},
		{"evm_mine", []any{future}, "", 0}, // not after the head's time
		{"anvil_mine", nil, "null", 1},
		{"anvil_mine", []any{3}, "null", 3},
		{"anvil_mine", []any{"0x2", "0x1"}, "null", 2},
		{"anvil_mine", []any{0}, "null", 0},
		{"anvil_mine", []any{nil, 5}, "null", 1},
		{"anvil_mine", []any{-1}, "", 0},
		{"anvil_mine", []any{1.5}, "", 0},
		{"anvil_mine", []any{anvil.MaxMineBlocks + 1}, "", 0},
		{"hardhat_mine", []any{"0x2"}, "null", 2},
	}
	for _, tt := range tests {
		before := n.Chain.Head().Number.Uint64()
		res := call(tt.method, tt.params...)
		switch {
		case tt.result == "" && (res.Error == nil || res.Error.Code != -32602):
			t.Errorf("%s %v: %s %+v, want -32602", tt.method, tt.params, res.Result, res.Error)
		case tt.result != "" && (res.Error != nil || string(res.Result) != tt.result):
			t.Errorf("%s %v: %s %+v, want %s", tt.method, tt.params, res.Result, res.Error, tt.result)
		}
		if got := n.Chain.Head().Number.Uint64() - before; got != tt.blocks {
			t.Errorf("%s %v sealed %d blocks, want %d", tt.method, tt.params, got, tt.blocks)
		}
	}
}

// TestEvmMine: evm_mine on a timed schedule seals the pooled transaction
// now, and the next block opens on the mined one.
func TestEvmMine(t *testing.T) {
	n, call := mineNode(t, sequencer.Config{BlockTime: 30 * time.Second, Interval: 20 * time.Millisecond}) // the schedule would not seal during the test
	head := n.Chain.Head().Number.Uint64()
	r := call("eth_sendTransaction", map[string]any{"from": chain.DevAccounts()[0], "to": common.Address{7}, "value": "0x5"})
	var hash common.Hash
	if r.Error != nil || json.Unmarshal(r.Result, &hash) != nil {
		t.Fatalf("send: %s %+v", r.Result, r.Error)
	}
	if r := call("evm_mine"); r.Error != nil || string(r.Result) != `"0x0"` {
		t.Fatalf("evm_mine: %s %+v", r.Result, r.Error)
	}
	if got := n.Chain.Head().Number.Uint64(); got != head+1 {
		t.Fatalf("head %d after evm_mine, want %d", got, head+1)
	}
	if _, _, _, _, ok := n.Chain.TxLookup(hash); !ok {
		t.Error("pooled transaction not in the mined block")
	}
	// The next block is open on top of the mined one (a tick may already
	// have added a flashblock).
	if snap := n.Pending.Current(); snap.Parent.Hash() != n.Chain.Head().Hash() && n.Chain.Head().Number.Uint64() == head+1 {
		t.Errorf("pending after evm_mine builds on %v, head is %v", snap.Parent.Number, n.Chain.Head().Number)
	}
}
