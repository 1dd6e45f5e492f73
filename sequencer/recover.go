package sequencer

import (
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// recover replays the WAL on top of the sealed head: flashblocks of the
// block after the head are re-executed in their logged order and boundaries
// (same environment, so the same results), a logged seal is redone, and the
// pooled transactions are re-admitted. Records at or below the head are
// already in the chain and are skipped.
func (s *Sequencer) recover(recs []record) error {
	var admits, deposits [][]byte
	// due is the block a final flashblock record said is sealed next; the
	// seal record may follow (it checks the hash) or be missing (written,
	// never synced).
	var due *uint64
	sealDue := func(want *common.Hash) error {
		if due == nil {
			return nil
		}
		n := *due
		due = nil
		if s.blk == nil || s.blk.Header.Number.Uint64() != n {
			return nil
		}
		return s.sealReplayed(want)
	}
	for i := range recs {
		rec := &recs[i]
		if rec.Kind == recSeal && due != nil && *due == rec.Number {
			want := rec.Hash
			if err := sealDue(&want); err != nil {
				return err
			}
			continue
		}
		if err := sealDue(nil); err != nil {
			return err
		}
		switch rec.Kind {
		case recAdmit:
			admits = append(admits, rec.Entries...)
		case recDeposit:
			deposits = append(deposits, rec.Entries...)
		case recSnapshot:
			snap := new(snapshotState)
			if err := decodeRecord(rec, snap); err != nil {
				return fmt.Errorf("snapshot record: %w", err)
			}
			s.addSnapshot(snap)
		case recRewind:
			rw := new(rewind)
			if err := decodeRecord(rec, rw); err != nil {
				return fmt.Errorf("rewind record: %w", err)
			}
			if err := s.rewindChain(rw); err != nil {
				return err
			}
			admits = rw.Target.Pool
			// The deposits queued at the target replace those logged
			// before the rewind, and go into a block opened now.
			deposits = nil
			s.restoreDeposits(rw.Target.Deposits)
			if err := s.restoreOpen(rw.Target.Open); err != nil {
				return err
			}
		case recSettings:
			set, err := decodeSettings(rec)
			if err != nil {
				return err
			}
			s.set = &set
		case recFlashblock, recFinalFlashblock:
			if err := s.replayFlashblock(rec); err != nil {
				return err
			}
			if rec.Kind == recFinalFlashblock {
				n := rec.Number
				due = &n
			}
		case recSeal:
			if s.blk == nil || s.blk.Header.Number.Uint64() != rec.Number {
				continue
			}
			want := rec.Hash
			if err := s.sealReplayed(&want); err != nil {
				return err
			}
		}
	}
	if err := sealDue(nil); err != nil {
		return err
	}
	s.requeueDeposits(deposits)
	// An exact time the last sealed block already has was used.
	if head := s.chain.Head(); s.set.clock.exact != 0 && s.set.clock.exact <= head.Time {
		s.set.clock.sealed(head.Time)
	}
	s.share()
	if s.blk != nil {
		s.log.Info("resumed pending block from the WAL", "number", s.blk.Header.Number, "flashblocks", s.blk.index, "txs", len(s.blk.Txs))
	}
	if readmitted := s.readmit(admits); readmitted > 0 {
		s.log.Info("re-admitted pooled transactions from the WAL", "count", readmitted)
	}
	if s.wal != nil {
		// Drop the records of sealed blocks, keeping the pool (now
		// re-admitted) and the open block; a rewind redone is synced
		// first.
		if err := s.syncRewinds(); err != nil {
			return err
		}
		s.unrotated = false
		return s.wal.Rotate(s.walContent)
	}
	return nil
}

// sealReplayed seals the replayed open block (want: the hash its seal
// record logged, nil when there is none) and flushes it.
func (s *Sequencer) sealReplayed(want *common.Hash) error {
	root, err := s.seal(want)
	if err != nil {
		return err
	}
	if err := s.chain.Flush(root); err != nil {
		return err
	}
	s.stats.Recovered.Add(1)
	return nil
}

func (s *Sequencer) replayFlashblock(rec *record) error {
	head := s.chain.Head()
	if s.blk == nil {
		if rec.Number <= head.Number.Uint64() {
			return nil // sealed already
		}
		if rec.Number != head.Number.Uint64()+1 || rec.Index != 0 || rec.Parent != head.Hash() {
			s.log.Warn("skipping WAL flashblock that does not extend the head", "number", rec.Number, "index", rec.Index, "parent", rec.Parent, "head", head.Number)
			return nil
		}
		if err := s.openNext(rec); err != nil {
			return err
		}
	} else if rec.Number == s.blk.Header.Number.Uint64() && rec.Index == 0 && s.blk.empty() {
		// The empty open block was re-opened at a later time (freshen):
		// it goes on from the new environment.
		if err := s.openNext(rec); err != nil {
			return err
		}
	} else if rec.Number != s.blk.Header.Number.Uint64() || rec.Index != s.blk.index {
		if rec.Number == s.blk.Header.Number.Uint64()+1 && rec.Index == 0 {
			// The seal record is missing but the next block was started:
			// the block was sealed; redo it.
			root, err := s.seal(nil)
			if err != nil {
				return err
			}
			if err := s.chain.Flush(root); err != nil {
				return err
			}
			return s.replayFlashblock(rec)
		}
		s.log.Warn("skipping out-of-order WAL flashblock", "number", rec.Number, "index", rec.Index, "open", s.blk.Header.Number, "next", s.blk.index)
		return nil
	}
	b := s.blk
	first := b.shown
	if err := s.replayEntries(b, rec); err != nil {
		return err
	}
	if err := s.publish(b, first, false); err != nil {
		return err
	}
	s.stats.RecoveredFBs.Add(1)
	return nil
}

// replayEntries applies a logged flashblock's entries to the open block in
// their logged order, as they were applied before the crash.
func (s *Sequencer) replayEntries(b *openBlock, rec *record) error {
	for i, raw := range rec.Entries {
		if isCheat(raw) {
			if err := applyCheatEntry(b, raw); err != nil {
				return fmt.Errorf("block %d flashblock %d entry %d: %w", rec.Number, rec.Index, i, err)
			}
			b.entries = append(b.entries, raw)
			continue
		}
		tx := new(types.Transaction)
		if err := tx.UnmarshalBinary(raw); err != nil {
			return fmt.Errorf("block %d flashblock %d tx %d: %w", rec.Number, rec.Index, i, err)
		}
		if err := s.apply(b, tx); err != nil {
			// Deterministic execution makes this impossible short of a
			// changed binary; keep going with what does apply.
			s.log.Error("WAL transaction no longer applies", "block", rec.Number, "flashblock", rec.Index, "tx", tx.Hash(), "err", err)
		}
	}
	return nil
}
