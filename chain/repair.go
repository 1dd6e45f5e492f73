package chain

import (
	"log/slog"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
)

// forgetSnapshotOfStatelessHead prepares go-ethereum's start-up repair of a
// head whose state is not on disk: a crash between InsertSealed and Flush
// leaves one. The repair rewinds such a head to the state snapshot's disk
// layer when the store names one, and that layer lags any number of blocks
// behind: the snapshot tree merges older diff layers into an in-memory
// accumulator that reaches the disk only past 4 MiB (or while a snapshot is
// generated), so it stays near the first block sealed after the last start.
// Every block up to the last Flush has its state, though, and the caller's
// log (the sequencer's WAL) covers only the blocks after it. Without the
// snapshot's root the repair goes back to the newest block with state, the
// last flushed one; the snapshot is then rebuilt at the repaired head, as
// it is after any crash (without a journal it never matches the head).
//
// It runs before go-ethereum opens the store.
func forgetSnapshotOfStatelessHead(db ethdb.Database, logger *slog.Logger) {
	hash := rawdb.ReadHeadBlockHash(db)
	if hash == (common.Hash{}) {
		return // a new store
	}
	number, ok := rawdb.ReadHeaderNumber(db, hash)
	if !ok {
		return // go-ethereum resets a store without its head header
	}
	head := rawdb.ReadHeader(db, hash, number)
	if head == nil || head.Root == types.EmptyRootHash || rawdb.HasLegacyTrieNode(db, head.Root) {
		return
	}
	snapRoot := rawdb.ReadSnapshotRoot(db)
	if snapRoot == (common.Hash{}) {
		return
	}
	logger.Warn("head state missing after a crash: rewinding to the newest block with state, not to the state snapshot's", "number", number, "hash", hash)
	rawdb.DeleteSnapshotRoot(db)
}
