package fork_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/fork"
	"github.com/preconf/preconf/internal/testchain"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
)

// A fork of an OP-stack chain runs by its rules (given with --genesis, as
// it is outside the registry) and seals block after block on it.
func TestForkOPStack(t *testing.T) {
	c, err := testchain.DevL2(3, nil) // with a contract: not the built-in dev chain (TestForkDevL2)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "chain.rlp")
	if err := os.WriteFile(file, c.RLP(), 0o600); err != nil {
		t.Fatal(err)
	}
	up := startNode(t, node.Config{Genesis: c.Genesis, Imports: []string{file}, HTTPAddr: "127.0.0.1", Logger: quiet()})

	// Without its rules: refused, not guessed.
	if _, err := forkNode(t, t.TempDir(), up.URL(), nil); err == nil || !strings.Contains(err.Error(), "--genesis") {
		t.Fatalf("an OP-stack chain outside the registry without --genesis: %v", err)
	}
	n, err := node.New(node.Config{
		DataDir: t.TempDir(), HTTPAddr: "127.0.0.1", Genesis: c.Genesis,
		Sequencer: &sequencer.Config{BlockTime: 300 * time.Millisecond, Interval: 100 * time.Millisecond},
		Fork:      &fork.Config{URL: up.URL(), Client: fastClient}, Logger: quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Start(nil); err != nil {
		t.Fatal(err)
	}
	if n.Fork.Config().Optimism == nil || !strings.Contains(n.Fork.Rules(), "--genesis") {
		t.Fatalf("rules %q, optimism %v", n.Fork.Rules(), n.Fork.Config().Optimism)
	}
	tx := send(t, n.URL(), devKey(t, 0), chain.DevChainID, append(selSet, arg(1)...))
	r := sealed(t, n.URL(), tx)
	if _, ok := r["l1Fee"]; !ok || r["status"] != "0x1" {
		t.Fatalf("receipt %v: want a successful OP-stack receipt", r)
	}
	// The dev sequencer does not simulate the upstream's L1 (sequencer.Config.Fork):
	// a local block holds no deposit, and none can be injected.
	var blk struct {
		Transactions []struct {
			Type hexutil.Uint64 `json:"type"`
		} `json:"transactions"`
	}
	if err := call(n.URL(), &blk, "eth_getBlockByHash", r["blockHash"], true); err != nil {
		t.Fatal(err)
	}
	for i, tx := range blk.Transactions {
		if tx.Type == types.DepositTxType {
			t.Fatalf("local block %v holds a deposit at index %d", r["blockNumber"], i)
		}
	}
	from := crypto.PubkeyToAddress(devKey(t, 0).PublicKey)
	if err := call(n.URL(), new(common.Hash), "eth_sendTransaction", map[string]any{"from": from, "to": from, "mint": "0x1", "gas": "0x30d40"}); err == nil || !strings.Contains(err.Error(), "nor a fork") {
		t.Fatalf("a deposit injection on a fork: %v", err)
	}
	var head hexutil.Uint64
	for deadline := time.Now().Add(10 * time.Second); uint64(head) < c.Blocks[len(c.Blocks)-1].NumberU64()+4 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		call(n.URL(), &head, "eth_blockNumber")
	}
	if err := n.Sequencer.Err(); err != nil {
		t.Fatalf("sequencer stopped: %v", err)
	}
	if uint64(head) < c.Blocks[len(c.Blocks)-1].NumberU64()+4 {
		t.Fatalf("head %d: local blocks did not go on", head)
	}
}

// A fork of the built-in OP-stack dev chain (a preconf dev node, its
// blocks opening with deposits) needs no --genesis: the upstream's genesis
// hash names the rules.
func TestForkDevL2(t *testing.T) {
	up := startNode(t, node.Config{HTTPAddr: "127.0.0.1", Sequencer: &sequencer.Config{BlockTime: 200 * time.Millisecond, Interval: 100 * time.Millisecond}, Logger: quiet()})
	var head hexutil.Uint64
	for deadline := time.Now().Add(10 * time.Second); head < 2 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		call(up.URL(), &head, "eth_blockNumber")
	}
	// Manual mining: the two transactions below share a block.
	n := startNode(t, node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1", Sequencer: &sequencer.Config{Mining: sequencer.ManualMining, Interval: sequencer.NoFlashblocks},
		Fork: &fork.Config{URL: up.URL(), Client: fastClient}, Logger: quiet()})
	if n.Fork.ForkBlock().Number.Uint64() < 2 {
		t.Fatalf("forked block %d: want one that opens with a deposit", n.Fork.ForkBlock().Number)
	}
	dev, err := chain.DevL2Genesis()
	if err != nil {
		t.Fatal(err)
	}
	if got := n.Fork.Config(); got.Optimism == nil || got.IsthmusTime == nil || *got.IsthmusTime != *dev.Config.IsthmusTime ||
		!strings.Contains(n.Fork.Rules(), "built-in OP-stack dev chain") {
		t.Fatalf("rules %q, config %+v", n.Fork.Rules(), got)
	}
	// A local block of two transactions has receipts, though op-geth
	// derives none for an OP-stack block without L1-attributes deposit
	// (fork.Chain derives them without the L1 fee fields).
	a := send(t, n.URL(), devKey(t, 1), chain.DevChainID, nil)
	b := send(t, n.URL(), devKey(t, 2), chain.DevChainID, nil)
	if err := call(n.URL(), nil, "evm_mine"); err != nil {
		t.Fatal(err)
	}
	ra, rb := sealed(t, n.URL(), a), sealed(t, n.URL(), b)
	if ra["status"] != "0x1" || rb["status"] != "0x1" || ra["blockHash"] != rb["blockHash"] || ra["l1Fee"] != nil {
		t.Fatalf("receipts %v, %v: want both successful, in one block, without L1 fee fields", ra, rb)
	}
	var rs []map[string]any
	if err := call(n.URL(), &rs, "eth_getBlockReceipts", ra["blockHash"]); err != nil || len(rs) != 2 {
		t.Fatalf("block receipts %v (%v)", rs, err)
	}
}
