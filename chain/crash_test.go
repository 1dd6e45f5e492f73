package chain

import (
	"log/slog"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/holiman/uint256"
)

// sealNext seals a block on the head as the sequencer does (a state change,
// the block, InsertSealed) and returns it with its state root.
func sealNext(t *testing.T, c *Chain) (*types.Block, common.Hash) {
	t.Helper()
	return sealWith(t, c, &types.Body{}, func(statedb *state.StateDB, n uint64) {
		statedb.AddBalance(common.BigToAddress(new(big.Int).SetUint64(n)), uint256.NewInt(n), tracing.BalanceChangeUnspecified)
	})
}

// sealWith seals the head's next block with body, its state the head's
// changed by change (given the new block's number): the block and
// InsertSealed's root.
func sealWith(tb testing.TB, c *Chain, body *types.Body, change func(statedb *state.StateDB, n uint64)) (*types.Block, common.Hash) {
	tb.Helper()
	parent := c.Head()
	statedb, err := c.StateAt(parent)
	if err != nil {
		tb.Fatal(err)
	}
	n := new(big.Int).Add(parent.Number, common.Big1)
	change(statedb, n.Uint64())
	header := &types.Header{
		ParentHash: parent.Hash(), Number: n, GasLimit: parent.GasLimit, Time: parent.Time + 1,
		Difficulty: new(big.Int), BaseFee: parent.BaseFee, Root: statedb.IntermediateRoot(true),
	}
	block := types.NewBlock(header, body, nil, trie.NewStackTrie(nil), c.Config())
	root, err := c.InsertSealed(block, types.Receipts{}, statedb)
	if err != nil {
		tb.Fatal(err)
	}
	return block, root
}

// TestCrashKeepsHead: a crash after InsertSealed, before or during Flush,
// long after the last restart, must not take the head back more than the
// caller's log covers (the sequencer's WAL keeps the last flushed block and
// the one being sealed). The crash is simulated by reopening the store the
// first chain wrote, without closing it: every write reached the store,
// nothing held in memory (dirty trie nodes, snapshot diff layers, the
// snapshot journal) did.
//
// go-ethereum repairs a head without state by rewinding to the snapshot's
// disk layer, which is not one block behind the head: the snapshot tree
// flattens older diff layers into an in-memory accumulator that reaches the
// disk only past 4 MiB (or while a snapshot is generated). A head without
// state therefore went back to the first block sealed after the last
// restart, dropping every block after it ("before Flush" and "during the
// state commit" fail so without forgetSnapshotOfStatelessHead).
func TestCrashKeepsHead(t *testing.T) {
	const flushed = 20
	for _, tc := range []struct {
		name  string
		crash func(t *testing.T, c *Chain, db ethdb.Database, root common.Hash)
		head  uint64 // the head after the restart
	}{
		{"before Flush", func(*testing.T, *Chain, ethdb.Database, common.Hash) {}, flushed},
		// hashdb's Commit writes a node after its children, in order: a
		// kill mid-commit leaves the block's trie without its root.
		{"during the state commit", func(t *testing.T, c *Chain, db ethdb.Database, root common.Hash) {
			if err := c.bc.TrieDB().Commit(root, false); err != nil {
				t.Fatal(err)
			}
			rawdb.DeleteLegacyTrieNode(db, root)
		}, flushed},
		// The state is written; the snapshot was not capped, nothing synced.
		{"after the state commit", func(t *testing.T, c *Chain, _ ethdb.Database, root common.Hash) {
			if err := c.bc.TrieDB().Commit(root, false); err != nil {
				t.Fatal(err)
			}
		}, flushed + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := rawdb.NewMemoryDatabase()
			logger := slog.New(slog.DiscardHandler)
			c, err := open(db, DevGenesis(), logger, false)
			if err != nil {
				t.Fatal(err)
			}
			var blocks []*types.Block
			for i := 0; i < flushed; i++ {
				b, root := sealNext(t, c)
				if err := c.Flush(root); err != nil {
					t.Fatal(err)
				}
				blocks = append(blocks, b)
			}
			last, root := sealNext(t, c) // sealed, not flushed: the crash comes now
			blocks = append(blocks, last)
			tc.crash(t, c, db, root)

			reopened, err := open(db, DevGenesis(), logger, false) // the chain it was created with (nil is the OP-stack dev chain)
			if err != nil {
				t.Fatal(err)
			}
			defer reopened.Close()
			head := reopened.Head()
			if head.Number.Uint64() < flushed {
				t.Fatalf("head %d after the crash: blocks %d..%d, flushed before it, are gone", head.Number, head.Number.Uint64()+1, flushed)
			}
			if want := blocks[tc.head-1]; head.Hash() != want.Hash() {
				t.Fatalf("head %d %v after the crash, want block %d %v", head.Number, head.Hash(), tc.head, want.Hash())
			}
			for _, b := range blocks[:tc.head] {
				if got := reopened.BlockByNumber(b.NumberU64()); got == nil || got.Hash() != b.Hash() {
					t.Fatalf("block %d: %v, was %v", b.NumberU64(), got, b.Hash())
				}
			}
			checkState(t, reopened, head)
			// The snapshot is rebuilt at the repaired head and follows the
			// blocks sealed on it (a snapshot left behind would never be
			// updated again).
			for i := 0; i < 3; i++ {
				_, root := sealNext(t, reopened)
				if err := reopened.Flush(root); err != nil {
					t.Fatal(err)
				}
				if reopened.bc.Snapshots().Snapshot(root) == nil {
					t.Fatalf("no snapshot layer for block %d", reopened.Head().Number)
				}
				checkState(t, reopened, reopened.Head())
			}
		})
	}
}

// checkState checks the balances sealNext credited up to head, read at
// head (through its snapshot layer when it has one).
func checkState(t *testing.T, c *Chain, head *types.Header) {
	t.Helper()
	r, err := c.StateReader(head.Root)
	if err != nil {
		t.Fatalf("state of head %d: %v", head.Number, err)
	}
	for n := uint64(1); n <= head.Number.Uint64(); n++ {
		acct, err := r.Account(common.BigToAddress(new(big.Int).SetUint64(n)))
		if err != nil || acct == nil || acct.Balance.Uint64() != n {
			t.Fatalf("head %d: account %d is %v (%v), want balance %d", head.Number, n, acct, err, n)
		}
	}
}

// TestSnapshotGeneratedInBackground: after a crash the state snapshot has
// no journal and is generated again; the store opens without waiting for
// that, SnapshotGenerating says so meanwhile, and reads (from the trie
// then) are right before, during and after it.
func TestSnapshotGeneratedInBackground(t *testing.T) {
	const accounts = 20000 // enough for the generation to outlast the first checks
	g := DevGenesis()
	for i := range accounts {
		g.Alloc[common.BigToAddress(big.NewInt(int64(0xb16000+i)))] = types.Account{Balance: big.NewInt(int64(1e6 + i))}
	}
	check := func(t *testing.T, c *Chain) {
		t.Helper()
		r, err := c.StateReader(c.Head().Root)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < accounts; i += 997 {
			acct, err := r.Account(common.BigToAddress(big.NewInt(int64(0xb16000 + i))))
			if err != nil || acct == nil || acct.Balance.Uint64() != uint64(1e6+i) {
				t.Fatalf("account %d: %v (%v), want balance %d", i, acct, err, 1e6+i)
			}
		}
	}
	done := func(c *Chain) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for c.SnapshotGenerating() {
			if time.Now().After(deadline) {
				t.Fatal("the snapshot is still being generated after 2 minutes")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	db := rawdb.NewMemoryDatabase()
	logger := slog.New(slog.DiscardHandler)
	c, err := open(db, g, logger, false)
	if err != nil {
		t.Fatal(err)
	}
	done(c) // the genesis state's, generated in the background too
	check(t, c)
	sealNext(t, c)
	if _, root := sealNext(t, c); c.Flush(root) != nil {
		t.Fatal("flush")
	}

	// The crash: the store reopened as the first chain left it, without the
	// snapshot journal its Close would have written.
	reopened, err := open(db, g, logger, false)
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	if !reopened.SnapshotGenerating() {
		t.Fatal("the snapshot is not being generated after the crash (or the store waited for it)")
	}
	check(t, reopened)
	done(reopened)
	check(t, reopened)
	if reopened.Head().Number.Uint64() != 2 {
		t.Fatalf("head %d after the crash, want the flushed block 2", reopened.Head().Number)
	}
}
