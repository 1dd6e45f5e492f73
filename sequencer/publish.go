package sequencer

import (
	"errors"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/core/state"

	"github.com/preconf/preconf/pending"
)

// publish turns the open block's progress since tx index first into a
// flashblock: the cumulative header, the state diff, the WAL record (synced
// when log is true) and the snapshot. The record is durable before the
// snapshot that shows it is published (durability invariant), but for the
// empty flashblock after a mine (lazyLog: afterMine says why).
//
// The record holds only what was applied, so it is written and synced while
// the state root and the snapshot are computed: the fsync's wait overlaps
// that work. A failed state read during execution is never logged; one
// while hashing the root (a trie node the store cannot give) stops the
// sequencer with the record logged but never published, and a restart
// executes it again.
func (s *Sequencer) publish(b *openBlock, first int, log bool) error {
	if err := stateErr(b.StateDB); err != nil {
		return fmt.Errorf("block %d flashblock %d: %w", b.Header.Number, b.index, err)
	}
	rec := b.flashblockRecord()
	b.logged = append(b.logged, rec)
	defer func() { b.lazyLog = false }()
	var synced chan walResult
	if log && s.wal != nil && b.lazyLog {
		if _, err := s.wal.Write(rec); err != nil {
			return err
		}
	} else if log && s.wal != nil {
		synced = make(chan walResult, 1)
		go func() {
			t := time.Now()
			err := s.wal.Append(rec)
			synced <- walResult{err, time.Since(t)}
		}()
	}
	wait := func() error {
		if synced == nil {
			return nil
		}
		r := <-synced
		synced = nil
		if r.err == nil {
			s.stats.LastWALSync.Store(int64(r.took))
		}
		return r.err
	}
	root := b.StateDB.IntermediateRoot(s.config.IsEIP158(b.Header.Number))
	if err := stateErr(b.StateDB); err != nil {
		return errors.Join(fmt.Errorf("block %d flashblock %d: %w", b.Header.Number, b.index, err), wait())
	}
	f, err := b.Flashblock(first)
	if err != nil {
		return errors.Join(fmt.Errorf("block %d flashblock %d: %w", b.Header.Number, b.index, err), wait())
	}
	st := b.state.With(f.Diff) // the open block's state once the record is durable
	f.Root, f.Index, f.PayloadID, f.State, f.WithdrawalsRoot = root, b.index, b.payload, st, s.withdrawalsRoot(b)
	snap := pending.Assemble(f)
	built := time.Now()
	if err := wait(); err != nil {
		return err
	}
	durable := time.Now()
	b.state = st
	t := time.Now()
	s.src.Publish(snap)
	s.stats.LastPublish.Store(int64(time.Since(t)))
	s.stats.published(built, durable)
	s.lastPublish, s.lastIndex = time.Now(), b.index
	b.index++
	b.shown = len(b.Txs)
	s.stats.Flashblocks.Add(1)
	s.stats.Txs.Add(uint64(snap.NewTxs))
	s.notify(b.Txs[first:])
	return nil
}

// walResult is a WAL append's outcome and duration.
type walResult struct {
	err  error
	took time.Duration
}

// flashblockRecord takes the WAL record of the block's next flashblock: its
// environment and the entries applied since the previous one; a final one
// when the block is sealed right after it (sealNext).
func (b *openBlock) flashblockRecord() *record {
	rec := b.rec
	rec.Index = b.index
	if b.sealNext {
		rec.Kind = recFinalFlashblock
	}
	rec.Entries, b.entries = b.entries, nil
	return &rec
}

// published records a flashblock's latencies: built → readable (WAL write
// and fsync included) and durable → readable.
func (st *Stats) published(built, durable time.Time) {
	lag, vis := int64(time.Since(built)), int64(time.Since(durable))
	st.ReadableSum.Add(lag)
	st.ReadableCount.Add(1)
	st.LastReadable.Store(lag)
	st.VisibleSum.Add(vis)
	if lag > st.ReadableMax.Load() {
		st.ReadableMax.Store(lag)
	}
	if vis > st.VisibleMax.Load() {
		st.VisibleMax.Store(vis)
	}
}

// stateErr is a failed read of the open block's state (a StateDB records
// it and carries on with empty values; a forked chain's reader reports what
// it cannot record there, such as code): the execution is then not the
// chain's, so it is never logged, published or sealed.
func stateErr(db *state.StateDB) error {
	if err := db.Error(); err != nil {
		return fmt.Errorf("state read failed: %w", err)
	}
	if r, ok := db.Reader().(interface{ Err() error }); ok {
		if err := r.Err(); err != nil {
			return fmt.Errorf("state read failed: %w", err)
		}
	}
	return nil
}
