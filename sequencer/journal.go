package sequencer

import (
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/impersonate"
	"github.com/preconf/preconf/txpool"
)

// Admit validates a signed transaction (eth_sendRawTransaction), adds it to
// the pool and logs the admission. The impersonation mark is refused: only
// the node marks transactions (admit).
//
// The admission is durable when Admit returns, except under automine for a
// transaction ready to execute: its record is then written without an
// fsync, and the caller must call Automine before it answers, whose mine
// makes it durable with the block that holds the transaction (one fsync
// per write; Automine syncs the log in every case, a failed mine too).
func (s *Sequencer) Admit(tx *types.Transaction) (txpool.Result, error) {
	if impersonate.Is(tx) {
		return txpool.Result{}, impersonate.ErrMarked
	}
	return s.admit(tx)
}

// admit adds tx to the pool and logs the admission durably.
func (s *Sequencer) admit(tx *types.Transaction) (txpool.Result, error) {
	if err := s.Err(); err != nil {
		return txpool.Result{}, fmt.Errorf("sequencer stopped: %w", err)
	}
	res, err := s.pool.Add(tx)
	if err != nil {
		if errors.Is(err, core.ErrNonceTooLow) {
			err = s.explainNonceTooLow(tx, err)
		}
		return res, err
	}
	if s.wal != nil {
		raw, err := res.Tx.MarshalBinary() // a blob transaction with its (converted) sidecar
		if err != nil {
			return res, err
		}
		rec := &record{Kind: recAdmit, Entries: [][]byte{raw}}
		if !res.Queued && s.Mode().Automine {
			var seq uint64
			if seq, err = s.wal.Write(rec); err == nil { // synced by Automine
				s.admitted.Store(max(s.admitted.Load(), seq))
			}
		} else {
			err = s.wal.Append(rec)
		}
		if err != nil {
			s.pool.Drop(tx.Hash())
			return res, fmt.Errorf("journal transaction: %w", err)
		}
	}
	return res, nil
}

// walContent is what the WAL must hold after a rotation: the settings, the
// live snapshots, the admission records of every pooled transaction, the
// queued deposits, the last sealed block's records and the open block's
// flashblocks. Rotation follows the sealed block's Flush, so after a crash
// the chain's head is at least that block (chain.Open repairs a head
// without state to the newest block with state, never to the lagging state
// snapshot). Its records stay one more rotation as a margin: a store that
// comes back one block short (TestRecoverAfterRewind) gets the block sealed
// again with the same hash.
func (s *Sequencer) walContent() []*record {
	all := s.pool.All()
	out := make([]*record, 0, len(all)+1)
	if rec, err := s.set.record(); err == nil {
		out = append(out, rec)
	}
	for _, snap := range s.snapshots {
		if rec, err := encodeRecord(recSnapshot, snap); err == nil {
			out = append(out, rec)
		}
	}
	for _, e := range all {
		raw, err := e.Tx.MarshalBinary()
		if err != nil {
			continue
		}
		out = append(out, &record{Kind: recAdmit, Entries: [][]byte{raw}})
	}
	out = append(out, s.queuedDepositRecords()...)
	out = append(out, s.prevLogged...)
	if s.blk != nil {
		out = append(out, s.blk.logged...)
	}
	return out
}
