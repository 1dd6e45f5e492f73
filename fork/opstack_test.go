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
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/opstack/testchain"
	"github.com/preconf/preconf/sequencer"
)

// A fork of an OP-stack chain runs by its rules (given with --genesis, as
// it is outside the registry) and seals block after block on it.
func TestForkOPStack(t *testing.T) {
	c, err := testchain.DevL2(3, nil)
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
		DataDir: t.TempDir(), HTTPAddr: "127.0.0.1", BlockTime: 300 * time.Millisecond, Genesis: c.Genesis,
		Sequencer: sequencer.Config{Interval: 100 * time.Millisecond},
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
