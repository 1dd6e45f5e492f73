package chain

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"
)

// TestInsertSealedAndFlush seals a block over the dev genesis the way the
// sequencer does (a state change, the block, InsertSealed, Flush) and checks
// that it is the head with its state, and that after Flush the datadir holds
// it on its own: a reopened chain starts from it.
func TestInsertSealedAndFlush(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(Config{Dir: dir, Genesis: DevGenesis()})
	if err != nil {
		t.Fatal(err)
	}
	parent := c.Head()
	statedb, err := c.StateAt(parent)
	if err != nil {
		t.Fatal(err)
	}
	who := common.Address{0x42}
	statedb.AddBalance(who, uint256.NewInt(7), tracing.BalanceChangeUnspecified)
	header := &types.Header{
		ParentHash: parent.Hash(), Number: big.NewInt(1), GasLimit: parent.GasLimit, Time: parent.Time + 2,
		Difficulty: new(big.Int), BaseFee: parent.BaseFee, Root: statedb.IntermediateRoot(true),
	}
	block := types.NewBlock(header, &types.Body{}, nil, trie.NewStackTrie(nil), c.Config())
	root, err := c.InsertSealed(block, types.Receipts{}, statedb)
	if err != nil {
		t.Fatal(err)
	}
	if root != header.Root {
		t.Fatalf("committed root %v, block says %v", root, header.Root)
	}
	if h := c.Head(); h.Hash() != block.Hash() {
		t.Fatalf("head %d %v, want the sealed block %v", h.Number, h.Hash(), block.Hash())
	}
	if got := c.BlockByNumber(1); got == nil || got.Hash() != block.Hash() {
		t.Fatalf("block 1 = %v", got)
	}
	balance := func(c *Chain) uint64 {
		t.Helper()
		r, err := c.StateReader(c.Head().Root)
		if err != nil {
			t.Fatal(err)
		}
		acct, err := r.Account(who)
		if err != nil || acct == nil {
			t.Fatalf("account: %v %v", acct, err)
		}
		return acct.Balance.Uint64()
	}
	if b := balance(c); b != 7 {
		t.Fatalf("balance %d, want 7", b)
	}
	if err := c.Flush(root); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, err = Open(Config{Dir: dir, Genesis: DevGenesis()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if h := c.Head(); h.Hash() != block.Hash() {
		t.Fatalf("reopened head %d %v, want the sealed block %v", h.Number, h.Hash(), block.Hash())
	}
	if b := balance(c); b != 7 {
		t.Fatalf("reopened balance %d, want 7", b)
	}
}
