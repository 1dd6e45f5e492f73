package sequencer

import "github.com/ethereum/go-ethereum/common"

// Sealing and the disk work that follows it. Durability invariant: a block
// readers can see sealed is durable through the WAL (its flashblock
// records, and its seal record or a final flashblock record) before it
// goes into the chain; its state is flushed to the store and the WAL
// rotated later, off the latency path, and until then recovery replays it
// from the WAL.

// sealAhead seals the open block right after its last flashblock, its
// content final: the boundary tick then only opens the next block and
// publishes its first flashblock. The sealed block's state is flushed and
// the WAL rotated after the publications that follow (flushSealed,
// rotateFlushed); until then the WAL holds the block.
func (s *Sequencer) sealAhead() error {
	root, err := s.seal(nil)
	if err != nil {
		return err
	}
	s.unflushed = append(s.unflushed, root)
	return nil
}

// rollover seals the open block and starts the next one with its first
// flashblock, then does the seal's disk work: a block with more
// flashblocks than the schedule's (after a change of interval mining).
func (s *Sequencer) rollover() error {
	if err := s.sealAhead(); err != nil {
		return err
	}
	if err := s.openNext(nil); err != nil {
		return err
	}
	if err := s.firstFlashblock(); err != nil {
		return err
	}
	return s.settleDisk()
}

// sealMined seals the open block after a mine's final flashblock and opens
// the next one. The mine answers then: the final flashblock's record made
// the block durable (recFinalFlashblock), the block is the chain's head and
// the pending block builds on it. The disk work follows the answer
// (afterMine).
func (s *Sequencer) sealMined() error {
	if err := s.sealAhead(); err != nil {
		return err
	}
	if err := s.openNext(nil); err != nil {
		return err
	}
	// Under manual mining that flashblock executes nothing from the pool:
	// its record holds the environment (and an OP-stack block's deposits,
	// each logged durably when injected). Nothing a client was answered
	// depends on it, so it waits for the next fsync (the next mine's); a
	// crash before then re-opens the block with a new environment, as
	// freshen does.
	s.blk.lazyLog = s.mode.manual
	if err := s.firstFlashblock(); err != nil {
		return err
	}
	s.mined = true
	return nil
}

// settleEvery bounds the blocks mined back to back whose state flush and
// WAL rotation wait: a tick (every flashblock interval) or any other
// command settles them sooner. Recovery replays at most that many blocks.
const settleEvery = 64

// afterMine does the disk work of the blocks mined so far once a mine has
// answered, off the write's critical path, when settleEvery of them wait:
// until then the WAL holds them (replayed on recovery) and a tick or
// another command settles them.
func (s *Sequencer) afterMine() error {
	s.mined = false
	if len(s.unflushed) >= settleEvery {
		return s.settleDisk()
	}
	return nil
}

// settleDisk does all the disk work left by the blocks sealed so far, for
// a command or Stop.
func (s *Sequencer) settleDisk() error {
	if err := s.flushSealed(); err != nil {
		return err
	}
	return s.rotateFlushed()
}

// flushSealed flushes the state of the blocks sealed since it last ran: a
// sealed block is durable through the WAL already (its flashblocks and
// seal record), so flushing its state and syncing the database can wait
// for the publication that follows it. The WAL is rotated after that
// (rotateFlushed).
func (s *Sequencer) flushSealed() error {
	if len(s.unflushed) == 0 {
		return nil
	}
	if err := s.flushAll(s.unflushed); err != nil {
		return err
	}
	root := s.unflushed[len(s.unflushed)-1]
	s.unflushed = s.unflushed[:0]
	s.sweepNonces(root)
	s.unrotated = s.wal != nil
	return nil
}

// rotateFlushed rotates the WAL after a flush or a rewind: the records of
// the blocks flushed since the last rotation go (walContent keeps the last
// sealed block's as a margin), and those of rewinds, whose effect on the
// store is synced first.
func (s *Sequencer) rotateFlushed() error {
	if err := s.syncRewinds(); err != nil {
		return err
	}
	if !s.unrotated {
		return nil
	}
	s.unrotated = false
	return s.wal.Rotate(s.walContent)
}

// syncRewinds syncs the store's rewinds done since the last rotation
// (setHead), which the WAL must keep logged until then.
func (s *Sequencer) syncRewinds() error {
	s.rewinds = 0
	if !s.unsyncedRewind {
		return nil
	}
	if err := s.chain.(lazyRewinder).Sync(); err != nil {
		return err
	}
	s.unsyncedRewind = false
	s.unrotated = s.wal != nil
	return nil
}

// lazyRewinder is a chain that rewinds without syncing its store
// (chain.Chain): the sequencer logs the rewind first and syncs the store
// before its WAL drops that record.
type lazyRewinder interface {
	SetHeadUnsynced(n uint64) error
	Sync() error
}

// batchFlusher is a chain that flushes several sealed blocks with one sync
// of its store (chain.Chain).
type batchFlusher interface {
	FlushAll(roots []common.Hash) error
}

// flushAll flushes the blocks with state roots roots, in order.
func (s *Sequencer) flushAll(roots []common.Hash) error {
	if c, ok := s.chain.(batchFlusher); ok {
		return c.FlushAll(roots)
	}
	for _, root := range roots {
		if err := s.chain.Flush(root); err != nil {
			return err
		}
	}
	return nil
}
