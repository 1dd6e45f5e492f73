package chain

import (
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
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

// Flush writes the state at root (a block given to InsertSealed) to disk
// (archive), caps the state snapshot's diff layers and syncs the store.
//
// A crash before Flush(root) returns leaves a head whose state may not be
// on disk; Open then rewinds it to the newest block with state, the one
// flushed before (see forgetSnapshotOfStatelessHead), never further.
func (c *Chain) Flush(root common.Hash) error {
	start := time.Now()
	if err := c.bc.TrieDB().Commit(root, false); err != nil {
		return fmt.Errorf("flush state %v: %w", root, err)
	}
	// Keep one diff layer, root's, so that readers of root's layer keep a
	// live parent; older layers merge into go-ethereum's accumulator, which
	// goes to disk only past 4 MiB. So the snapshot's disk layer lags: Open
	// keeps it out of the crash repair.
	if snaps := c.bc.Snapshots(); snaps != nil {
		if err := snaps.Cap(root, 1); err != nil {
			c.log.Debug("snapshot flatten", "root", root, "err", err)
		}
	}
	if syncer, ok := c.db.(ethdb.KeyValueSyncer); ok {
		if err := syncer.SyncKeyValue(); err != nil {
			return fmt.Errorf("sync database: %w", err)
		}
	}
	c.log.Debug("flushed sealed state", "root", root, "elapsed", time.Since(start))
	return nil
}
