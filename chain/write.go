package chain

import (
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/state/snapshot"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb"
)

// Blocks this node seals (the sequencer's) are written here; imported blocks
// go through Import and the safe and finalized markers through SetSafe and
// SetFinalized. No other package writes the store.

// InsertSealed stores a block built and sealed by this node: the block and
// its receipts, its state committed from statedb to the trie database (in
// memory), and the block made the canonical head. It returns the state root,
// which the caller hands to Flush once it may afford the disk work.
//
// Until Flush(root) returns, the block survives a crash only through the
// caller's own log (the sequencer's WAL).
func (c *Chain) InsertSealed(block *types.Block, receipts types.Receipts, statedb *state.StateDB) (common.Hash, error) {
	batch := c.db.NewBatch()
	rawdb.WriteBlock(batch, block)
	rawdb.WriteReceipts(batch, block.Hash(), block.NumberU64(), receipts)
	if err := batch.Write(); err != nil {
		return common.Hash{}, fmt.Errorf("write block %d: %w", block.NumberU64(), err)
	}
	root, err := statedb.Commit(block.NumberU64(), c.config.IsEIP158(block.Number()), c.config.IsCancun(block.Number(), block.Time()))
	if err != nil {
		return common.Hash{}, fmt.Errorf("commit state of block %d: %w", block.NumberU64(), err)
	}
	if _, err := c.bc.SetCanonical(block); err != nil {
		return common.Hash{}, fmt.Errorf("set head %d: %w", block.NumberU64(), err)
	}
	return root, nil
}

// snapshotLayers is how many blocks' state changes the state snapshot keeps
// in memory above its accumulator, as geth keeps its last 128 states. A
// rewind (evm_revert, anvil_reset) to one of them merges it and the layers
// below into the disk layer at once; a rewind further back regenerates the
// whole snapshot from the trie in the background, reads going to the trie
// meanwhile. On a copy of the million-account bench store, four rounds of
// evm_snapshot, three evm_mine and evm_revert: with one layer kept (the
// value before), 73–75 s each until /readyz answered again and 94 s of
// CPU in all; with 128, 0.010–0.015 s and 0.6 s. The price is memory under
// sustained load: after 270 s at 3,000 transfers/s (go run ./bench
// -writeload) the node's RSS was 414 MB against 294 MB, its reads' rate and
// p99 unchanged. While a generation runs, go-ethereum keeps at most 8.
const snapshotLayers = 128

// Flush writes the state at root (a block given to InsertSealed) to disk
// (archive), caps the state snapshot's diff layers and syncs the store.
//
// A crash before Flush(root) returns leaves a head whose state may not be
// on disk; Open then rewinds it to the newest block with state, the one
// flushed before (see forgetSnapshotOfStatelessHead), never further.
func (c *Chain) Flush(root common.Hash) error { return c.FlushAll([]common.Hash{root}) }

// FlushAll is Flush of the blocks with state roots roots, in their order,
// with one sync of the store at the end (the sequencer flushes the blocks
// mined back to back together: one sync where each Flush would sync).
func (c *Chain) FlushAll(roots []common.Hash) error {
	if c.memory || len(roots) == 0 {
		// Nothing to make durable. Committing would copy the block's trie
		// nodes from the trie database's dirty cache, in memory, into the
		// store, in memory too, and into the clean cache: about 0.3 ms of
		// CPU per automine block (go test ./chain -bench SealBlock/memory).
		// The nodes stay in the dirty cache, which readers consult first,
		// and are never dereferenced: every block's state is kept, as on
		// disk (evm_revert, reads at any height).
		return nil
	}
	start := time.Now()
	for _, root := range roots {
		if err := c.bc.TrieDB().Commit(root, false); err != nil {
			return fmt.Errorf("flush state %v: %w", root, err)
		}
		// Keep snapshotLayers diff layers; older ones merge into
		// go-ethereum's accumulator, which goes to disk only past 4 MiB.
		// So the snapshot's disk layer lags: Open keeps it out of the
		// crash repair.
		if snaps := c.bc.Snapshots(); snaps != nil {
			if err := snaps.Cap(root, snapshotLayers); err != nil {
				c.log.Debug("snapshot flatten", "root", root, "err", err)
			}
		}
	}
	if syncer, ok := c.db.(ethdb.KeyValueSyncer); ok {
		if err := syncer.SyncKeyValue(); err != nil {
			return fmt.Errorf("sync database: %w", err)
		}
	}
	c.log.Debug("flushed sealed state", "blocks", len(roots), "root", roots[len(roots)-1], "elapsed", time.Since(start))
	return nil
}

// SetHead rewinds the chain to its block n (evm_revert, anvil_reset): the
// blocks above stop being canonical and are deleted with their
// transaction lookups, and the state at n (every block's is kept) is the
// head's again. The state snapshot is flattened onto n's root, or rebuilt
// from it when it no longer covers it (reads meanwhile go to the trie). The rewind is synced
// before SetHead returns. The caller (the sequencer) drops whatever it
// built on the old head.
func (c *Chain) SetHead(n uint64) error {
	if err := c.SetHeadUnsynced(n); err != nil {
		return err
	}
	return c.Sync()
}

// SetHeadUnsynced is SetHead without the sync: a crash may leave the store
// anywhere between the old head and n, so the caller must log the rewind
// durably first and redo it on recovery until it calls Sync (the
// sequencer's rewind record stays in its WAL until then). A block above n
// that was never flushed leaves nothing to undo on disk: its state never
// got there.
func (c *Chain) SetHeadUnsynced(n uint64) error {
	head := c.Head().Number.Uint64()
	if n > head {
		return fmt.Errorf("set head to %d: the head is %d", n, head)
	}
	target := c.HeaderByNumber(n)
	if target == nil {
		return fmt.Errorf("set head to %d: no such block", n)
	}
	if n < head {
		batch := c.db.NewBatch()
		for k := n + 1; k <= head; k++ {
			if b := c.bc.GetBlockByNumber(k); b != nil {
				for _, tx := range b.Transactions() {
					rawdb.DeleteTxLookupEntry(batch, tx.Hash())
				}
			}
		}
		if err := batch.Write(); err != nil {
			return fmt.Errorf("set head to %d: %w", n, err)
		}
		if err := c.bc.SetHead(n); err != nil {
			return fmt.Errorf("set head to %d: %w", n, err)
		}
		if got := c.Head(); got.Hash() != target.Hash() {
			return fmt.Errorf("set head to %d: the chain went to block %d (%v) instead: its state is missing", n, got.Number, got.Hash())
		}
	}
	// The state snapshot follows the head: flattened onto n's state, or
	// rebuilt from it, so that no layer above n is read again.
	if snaps := c.bc.Snapshots(); snaps != nil {
		if snaps.Snapshot(target.Root) == nil {
			c.stopGenerator(snaps)
			snaps.Rebuild(target.Root)
		} else if err := snaps.Cap(target.Root, 0); err != nil {
			c.log.Debug("snapshot flatten", "root", target.Root, "err", err) // n's is the disk layer already
		}
	}
	return nil
}

// Sync makes everything written to the store so far durable (a no-op in
// memory).
func (c *Chain) Sync() error {
	if c.memory {
		return nil
	}
	if syncer, ok := c.db.(ethdb.KeyValueSyncer); ok {
		if err := syncer.SyncKeyValue(); err != nil {
			return fmt.Errorf("sync database: %w", err)
		}
	}
	return nil
}

// releaseRoot is a state root no trie has (the hash of this text): the
// snapshot's disk layer is flattened onto it only to stop its generator.
var releaseRoot = crypto.Keccak256Hash([]byte("preconf: stop the state snapshot generator"))

// stopGenerator stops the goroutine of the snapshot's generator, running or
// done, before a Rebuild. go-ethereum's generator keeps its two database
// iterators open after it finishes, until it is told to stop, and Rebuild
// tells only one still running (it checks the generation marker). A done
// one was left holding them for the life of the process, pinning Pebble's
// old files, and Close waited pebblestore.CloseWait for them and failed
// (TestSetHeadRebuildsOverFinishedGenerator; CI saw it after two rewinds).
// Measured without this on a dev node, 100 nested evm_snapshot/evm_revert
// pairs (the inner reverted, then the outer): 100 generator goroutines and
// 200 iterators left open, and shutdown took 10.0 s and exited 1.
//
// Merging a diff layer into the disk layer tells its generator to stop
// whether it is running or done, as no exported call does, and restarts a
// running one on the merged root, where it finds no trie and waits to be
// told again, which Rebuild then does. Asking first whether it is done and
// telling it through Journal left a window: a generation that ended between
// the question and Rebuild's own check still leaked (1 in 1,000 pairs).
// The empty layer's root reaches the store as the snapshot's until Rebuild
// writes the target's; a crash in between rebuilds the snapshot at start,
// as any crash does.
func (c *Chain) stopGenerator(snaps *snapshot.Tree) {
	disk := snaps.DiskRoot()
	if disk == (common.Hash{}) {
		return
	}
	if err := snaps.Update(releaseRoot, disk, nil, nil); err != nil {
		c.log.Debug("snapshot generator stop", "root", disk, "err", err)
		return
	}
	if err := snaps.Cap(releaseRoot, 0); err != nil {
		c.log.Debug("snapshot generator stop", "root", disk, "err", err)
	}
}
