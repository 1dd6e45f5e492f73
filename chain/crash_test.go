package chain

import (
	"log/slog"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"
)

// sealNext seals a block on the head as the sequencer does (a state change,
// the block, InsertSealed) and returns it with its state root.
func sealNext(t *testing.T, c *Chain) (*types.Block, common.Hash) {
	t.Helper()
	parent := c.Head()
	statedb, err := c.StateAt(parent)
	if err != nil {
		t.Fatal(err)
	}
	n := new(big.Int).Add(parent.Number, common.Big1)
	statedb.AddBalance(common.BigToAddress(n), uint256.NewInt(n.Uint64()), tracing.BalanceChangeUnspecified)
	header := &types.Header{
		ParentHash: parent.Hash(), Number: n, GasLimit: parent.GasLimit, Time: parent.Time + 1,
		Difficulty: new(big.Int), BaseFee: parent.BaseFee, Root: statedb.IntermediateRoot(true),
	}
	block := types.NewBlock(header, &types.Body{}, nil, trie.NewStackTrie(nil), c.Config())
	root, err := c.InsertSealed(block, types.Receipts{}, statedb)
	if err != nil {
		t.Fatal(err)
	}
	return block, root
}

// TestCrashBeforeFlushKeepsHead: a crash after InsertSealed and before
// Flush, long after the last restart, must not take the head back more than
// the caller's log covers (the sequencer's WAL keeps the last flushed block
// and the one being sealed). The crash is simulated by reopening the store
// the first chain wrote, without closing it: every write reached the store,
// nothing held in memory (dirty trie nodes, snapshot diff layers, the
// snapshot journal) did.
//
// go-ethereum repairs a head without state by rewinding to the snapshot's
// disk layer, which is not one block behind the head: the snapshot tree
// flattens older diff layers into an in-memory accumulator that reaches the
// disk only past 4 MiB (or while a snapshot is generated). A head without
// state therefore went back to the first block sealed after the last
// restart, dropping every block after it.
func TestCrashBeforeFlushKeepsHead(t *testing.T) {
	db := rawdb.NewMemoryDatabase()
	logger := slog.New(slog.DiscardHandler)
	c, err := open(db, DevGenesis(), logger)
	if err != nil {
		t.Fatal(err)
	}
	const flushed = 20
	var blocks []*types.Block
	for i := 0; i < flushed; i++ {
		b, root := sealNext(t, c)
		if err := c.Flush(root); err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, b)
	}
	last, _ := sealNext(t, c) // sealed, not flushed: the crash comes now
	blocks = append(blocks, last)

	reopened, err := open(db, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	head := reopened.Head()
	if head.Number.Uint64() < flushed {
		t.Fatalf("head %d after the crash: blocks %d..%d, flushed before it, are gone", head.Number, head.Number.Uint64()+1, flushed)
	}
	if head.Hash() != blocks[flushed-1].Hash() {
		t.Fatalf("head %d %v after the crash, want the last flushed block %v", head.Number, head.Hash(), blocks[flushed-1].Hash())
	}
	for _, b := range blocks[:head.Number.Uint64()] {
		if got := reopened.BlockByNumber(b.NumberU64()); got == nil || got.Hash() != b.Hash() {
			t.Fatalf("block %d: %v, was %v", b.NumberU64(), got, b.Hash())
		}
	}
	if _, err := reopened.StateReader(head.Root); err != nil {
		t.Fatalf("state of head %d: %v", head.Number, err)
	}
	// The snapshot is rebuilt at the repaired head and follows the blocks
	// sealed on it (a snapshot left behind would never be updated again).
	for i := 0; i < 3; i++ {
		_, root := sealNext(t, reopened)
		if err := reopened.Flush(root); err != nil {
			t.Fatal(err)
		}
		if reopened.bc.Snapshots().Snapshot(root) == nil {
			t.Fatalf("no snapshot layer for block %d", reopened.Head().Number)
		}
	}
}
