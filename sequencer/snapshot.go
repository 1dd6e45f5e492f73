package sequencer

import (
	"context"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
)

// evm_snapshot and evm_revert. A snapshot is everything the sequencer
// needs to come back to the moment it was taken: the sealed head, the open
// block's flashblock records (its environment and entries, transactions
// and cheats, which replay deterministically), the pool and, on an
// OP-stack chain, the user deposits queued for the next block. It is logged
// (recSnapshot) and kept in the WAL by every rotation while it lives.
// Reverting logs its intent (recRewind) first, then rewinds the chain,
// restores the pool and replays the open block; recovery redoes a logged
// rewind, so a revert that returned survives a crash. That record is a
// revert's one fsync: the store's rewind is synced, and the WAL rotated,
// with the disk work that follows (rotateFlushed), and neither a snapshot
// nor a revert settles the disk first (doOwn). A snapshot flushes the
// blocks sealed before it, so that the state it returns to is on disk; the
// blocks a revert drops were sealed after it and are never flushed.

// snapshotState is a snapshot as logged.
type snapshotState struct {
	ID     uint64
	Number uint64
	Hash   common.Hash
	// Open are the open block's flashblock records, in order.
	Open []record
	// Pool are the pooled transactions' admission encodings, oldest first.
	Pool [][]byte
	// Deposits are the queued user deposits' encodings, in injection
	// order (OP-stack chains).
	Deposits [][]byte
}

// rewind is a logged revert or reset: the state to go back to, and the
// first snapshot id dropped with it (a revert drops its snapshot and every
// later one, as anvil and hardhat do).
type rewind struct {
	Target snapshotState
	Drop   uint64
	// Reset also sets the clock back to the wall clock and forgets the
	// next block's base fee (anvil_reset); a revert makes the time the
	// head's, as anvil does.
	Reset bool
}

func encodeRecord(kind uint8, v any) (*record, error) {
	enc, err := rlp.EncodeToBytes(v)
	if err != nil {
		return nil, err
	}
	return &record{Kind: kind, Entries: [][]byte{enc}}, nil
}

func decodeRecord(rec *record, v any) error {
	if len(rec.Entries) != 1 {
		return fmt.Errorf("record kind %d with %d entries", rec.Kind, len(rec.Entries))
	}
	return rlp.DecodeBytes(rec.Entries[0], v)
}

// SnapshotInfo is a live snapshot: its id and the block it returns to.
type SnapshotInfo struct {
	ID     uint64
	Number uint64
	Hash   common.Hash
}

// Snapshot takes a snapshot of the chain, the pool and the pending block,
// and returns its id (evm_snapshot). Ids count up from 0 and are not
// reused.
func (s *Sequencer) Snapshot(ctx context.Context) (uint64, error) {
	var id uint64
	err := s.doOwn(ctx, func() error {
		if err := s.flushSealed(); err != nil {
			return err
		}
		b := s.blk
		snap := &snapshotState{ID: s.set.nextSnapshot, Number: b.Parent.Number.Uint64(), Hash: b.Parent.Hash(), Pool: s.poolEncodings(), Deposits: s.depositEncodings()}
		for _, r := range b.logged {
			snap.Open = append(snap.Open, *r)
		}
		rec, err := encodeRecord(recSnapshot, snap)
		if err != nil {
			return err
		}
		if s.wal != nil {
			if err := s.wal.Append(rec); err != nil {
				return err
			}
		}
		s.addSnapshot(snap)
		id = snap.ID
		return nil
	})
	return id, err
}

// addSnapshot keeps snap live and the next id past it.
func (s *Sequencer) addSnapshot(snap *snapshotState) {
	s.snapshots = append(s.snapshots, snap)
	s.set.nextSnapshot = max(s.set.nextSnapshot, snap.ID+1)
	s.shareSnapshots()
}

// Snapshots lists the live snapshots, oldest first (anvil_metadata).
func (s *Sequencer) Snapshots() []SnapshotInfo { return *s.snapList.Load() }

func (s *Sequencer) shareSnapshots() {
	list := make([]SnapshotInfo, len(s.snapshots))
	for i, snap := range s.snapshots {
		list[i] = SnapshotInfo{ID: snap.ID, Number: snap.Number, Hash: snap.Hash}
	}
	s.snapList.Store(&list)
}

// Revert goes back to snapshot id: the chain, the pool and the pending
// block are as they were when it was taken, and the clock at the head's
// time (evm_revert). The snapshot and every later one are gone. It
// reports false, changing nothing, when id is not a live snapshot.
func (s *Sequencer) Revert(ctx context.Context, id uint64) (bool, error) {
	found := false
	err := s.doOwn(ctx, func() error {
		for _, snap := range s.snapshots {
			if snap.ID == id {
				found = true
				// The blocks not flushed yet are those sealed last; the
				// target's state must be on disk (Snapshot flushed it, and
				// recovery flushes what it replays: this is a guard).
				if head := s.chain.Head().Number.Uint64(); snap.Number+uint64(len(s.unflushed)) > head {
					if err := s.flushSealed(); err != nil {
						return err
					}
				}
				if err := s.rewindTo(&rewind{Target: *snap, Drop: id}); err != nil {
					return err
				}
				// Without ticks (--flashblock-interval 0) nothing else
				// may settle between reverts: bound what recovery redoes.
				if s.rewinds++; s.rewinds >= settleEvery {
					return s.settleDisk()
				}
				return nil
			}
		}
		return nil
	})
	return found, err
}

// ResetOptions are anvil_reset's forking parameters.
type ResetOptions struct {
	// URL is the upstream to fork ("": the same one).
	URL string
	// Block is the block to fork at (nil: the upstream's head).
	Block *uint64
	// Fork says the parameters were given; without them a fork is forked
	// again at its fork block.
	Fork bool
}

// Reset goes back to a fresh chain (anvil_reset): the genesis block, or on
// a fork the fork block (forked again in place, at opts' block and
// upstream when given), with an empty pool and pending block, no
// snapshots and the wall clock. Coinbase, gas limit and impersonated
// accounts stay, as anvil keeps them. Forking parameters on a chain that is
// not a fork are refused.
func (s *Sequencer) Reset(ctx context.Context, opts ResetOptions) error {
	return s.do(ctx, func() error {
		rf, forked := s.chain.(Reforker)
		if !forked {
			if opts.Fork {
				return &RefusedError{errors.New("this node is not a fork: anvil_reset with forking parameters needs a node started with --fork-url")}
			}
			g := s.chain.HeaderByNumber(0)
			return s.rewindTo(&rewind{Target: snapshotState{Number: 0, Hash: g.Hash()}, Drop: 0, Reset: true})
		}
		block := opts.Block
		if !opts.Fork {
			n := rf.ForkBlock().Number.Uint64()
			block = &n
		}
		// The fork is replaced before the rewind is logged: its target is
		// the new fork block, known only now.
		if err := rf.Reset(ctx, opts.URL, block); err != nil {
			return &RefusedError{err}
		}
		head := s.chain.Head()
		return s.rewindTo(&rewind{Target: snapshotState{Number: head.Number.Uint64(), Hash: head.Hash()}, Drop: 0, Reset: true})
	})
}

// rewindTo logs rw, carries it out and rotates the WAL to what follows.
// An error stops the sequencer: the chain may be half rewound, and the
// logged rewind finishes it at the next start.
func (s *Sequencer) rewindTo(rw *rewind) error {
	rec, err := encodeRecord(recRewind, rw)
	if err != nil {
		return err
	}
	if s.wal != nil {
		if err := s.wal.Append(rec); err != nil {
			return err
		}
	}
	if err := s.rewindChain(rw); err != nil {
		return err
	}
	// Before the open block: a block opened now takes them.
	s.restoreDeposits(rw.Target.Deposits)
	if err := s.restoreOpen(rw.Target.Open); err != nil {
		return err
	}
	// Validated against the restored pending state, now published.
	s.pool.Clear()
	s.readmit(rw.Target.Pool)
	// The WAL keeps the rewind record until the store's rewind is synced
	// (rotateFlushed).
	s.unrotated = s.wal != nil
	return nil
}

// rewindChain rewinds the chain to rw's target and drops the open block,
// the snapshots rw drops and what the clock and settings forget.
func (s *Sequencer) rewindChain(rw *rewind) error {
	t := &rw.Target
	if s.chain.Head().Number.Uint64() > t.Number {
		if err := s.setHead(t.Number); err != nil {
			return err
		}
	}
	// The blocks rewound were the last sealed ones: those not flushed yet
	// never will be (Revert flushed first if the target was among them).
	s.unflushed = s.unflushed[:0]
	head := s.chain.Head()
	if head.Number.Uint64() != t.Number || head.Hash() != t.Hash {
		return fmt.Errorf("rewind to block %d (%v): the chain's head is block %d (%v)", t.Number, t.Hash, head.Number, head.Hash())
	}
	s.blk, s.prevLogged = nil, nil
	kept := s.snapshots[:0]
	for _, snap := range s.snapshots {
		if snap.ID < rw.Drop {
			kept = append(kept, snap)
		}
	}
	s.snapshots = kept
	if rw.Reset {
		s.snapshots = nil
		s.set.clock = clock{}
		s.set.baseFee, s.set.baseFeeFor = nil, 0
	} else {
		s.set.clock.reset(head.Time)
	}
	s.share()
	s.shareSnapshots()
	s.settle(head.Number.Uint64())
	return nil
}

// setHead rewinds the chain to block n, leaving the store's sync to
// rotateFlushed when the chain can (the caller logged the rewind).
func (s *Sequencer) setHead(n uint64) error {
	lr, ok := s.chain.(lazyRewinder)
	if !ok || s.wal == nil {
		return s.chain.SetHead(n)
	}
	if err := lr.SetHeadUnsynced(n); err != nil {
		return err
	}
	s.unsyncedRewind = true
	return nil
}

// restoreOpen replays a snapshot's open block records on the head, or
// opens an empty block when there are none.
func (s *Sequencer) restoreOpen(recs []record) error {
	for i := range recs {
		rec := recs[i]
		if rec.Index == 0 {
			if err := s.openNext(&rec); err != nil {
				return err
			}
		}
		b := s.blk
		if b == nil || rec.Index != b.index {
			return fmt.Errorf("snapshot record of block %d flashblock %d does not follow the open block", rec.Number, rec.Index)
		}
		first := len(b.Txs)
		if err := s.replayEntries(b, &rec); err != nil {
			return err
		}
		if err := s.publish(b, first, false); err != nil {
			return err
		}
	}
	if s.blk != nil {
		return nil
	}
	if err := s.openNext(nil); err != nil {
		return err
	}
	// Its record (the new environment alone) waits for the next fsync, as
	// a mine's next block's does (sealMined); a crash before then opens
	// the block again after the logged rewind.
	s.blk.lazyLog = s.mode.manual
	return s.build(false, true)
}

// poolEncodings are the pooled transactions' admission encodings.
func (s *Sequencer) poolEncodings() [][]byte {
	all := s.pool.All()
	out := make([][]byte, 0, len(all))
	for _, e := range all {
		if raw, err := e.Tx.MarshalBinary(); err == nil {
			out = append(out, raw)
		}
	}
	return out
}

// depositEncodings are the queued user deposits' encodings.
func (s *Sequencer) depositEncodings() [][]byte {
	if s.op == nil {
		return nil
	}
	out := make([][]byte, 0, len(s.op.queue))
	for _, tx := range s.op.queue {
		if raw, err := tx.MarshalBinary(); err == nil {
			out = append(out, raw)
		}
	}
	return out
}

// restoreDeposits makes raws the queued user deposits (a revert's): those
// injected since the snapshot are dropped, as the transactions pooled
// since are.
func (s *Sequencer) restoreDeposits(raws [][]byte) {
	if s.op == nil {
		return
	}
	s.op.queue = nil
	for _, raw := range raws {
		tx := new(types.Transaction)
		if tx.UnmarshalBinary(raw) == nil && tx.IsDepositTx() {
			s.op.queue = append(s.op.queue, tx)
		}
	}
}

// readmit adds logged admissions back to the pool; those no longer valid
// are dropped. It returns how many were admitted.
func (s *Sequencer) readmit(admits [][]byte) int {
	n := 0
	for _, raw := range admits {
		tx := new(types.Transaction)
		if tx.UnmarshalBinary(raw) != nil {
			continue
		}
		if _, err := s.pool.Add(tx); err == nil {
			n++
		}
	}
	return n
}
