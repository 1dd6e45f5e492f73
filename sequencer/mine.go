package sequencer

import (
	"context"
	"fmt"

	"github.com/ethereum/go-ethereum/core/types"
)

// Mining on demand: evm_mine and anvil_mine seal blocks now, on a timed
// schedule or under manual mining (Config.Manual, --block-time 0), where
// nothing else seals.

// MineOptions say what Mine seals.
type MineOptions struct {
	// Blocks is how many blocks to seal, one after the other.
	Blocks uint64
	// Interval, when non-zero, moves the clock this many seconds forward
	// before each block (anvil_mine's interval: the offset stays).
	Interval uint64
	// Timestamp, when set, is the first block's timestamp (evm_mine's);
	// later blocks' times go on from it.
	Timestamp *uint64
}

// Mine seals opts.Blocks blocks now, as anvil's evm_mine and anvil_mine:
// each after pre-confirming what the pool has ready, so the first holds
// every executable pooled transaction that fits. A timed schedule goes on
// from the last one. The sequencer goroutine is released between blocks
// (flashblocks and other commands go on) and a request that ends stops the
// series; each block is as durable as a scheduled one.
func (s *Sequencer) Mine(ctx context.Context, opts MineOptions) error {
	for i := uint64(0); i < opts.Blocks; i++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("mined %d of %d blocks: %w", i, opts.Blocks, err)
		}
		ts := opts.Timestamp
		if i > 0 {
			ts = nil
		}
		var refused error
		err := s.send(ctx, command{mine: true, run: func() error {
			var err error
			refused, err = s.mineOne(ts, opts.Interval)
			return err
		}})
		if err != nil {
			return err
		}
		if refused != nil {
			return refused
		}
	}
	return nil
}

// notAfterParent refuses timestamp t for a block on parent.
func notAfterParent(t uint64, parent *types.Header) error {
	return fmt.Errorf("timestamp %d is not after the latest block's (%d, block %d)", t, parent.Time, parent.Number)
}

// TimeTakenError refuses a timestamp for the open block once it holds
// pre-confirmed transactions: they keep the time they executed at.
type TimeTakenError struct {
	Number uint64 // the open block
	Txs    int    // its pre-confirmed transactions
	Time   uint64 // the timestamp they executed at
}

func (e *TimeTakenError) Error() string {
	return fmt.Sprintf("the pending block %d already pre-confirmed %d transactions executed at timestamp %d; a timestamp can be chosen only for a block without pre-confirmed transactions (start with --flashblock-interval 0 to keep transactions unexecuted until mined)", e.Number, e.Txs, e.Time)
}

// mineOne seals the open block, re-opened first at the clock's time when it
// is still empty. It returns a refusal (nothing changed) or a failure that
// stops the sequencer.
func (s *Sequencer) mineOne(ts *uint64, interval uint64) (refused, failed error) {
	b := s.blk
	if ts != nil {
		if *ts <= b.Parent.Time {
			return &RefusedError{notAfterParent(*ts, b.Parent)}, nil
		}
		if !b.empty() && *ts != b.Header.Time {
			return &TimeTakenError{Number: b.Header.Number.Uint64(), Txs: len(b.Txs), Time: b.Header.Time}, nil
		}
		s.set.clock.exact = *ts
	}
	s.set.clock.offset += int64(interval)
	if err := s.freshen(); err != nil {
		return nil, err
	}
	if s.blk.index == 0 && s.op != nil {
		// The OP-stack block's flashblock 0 holds its deposits alone: the
		// pool's transactions follow in flashblock 1.
		if err := s.flashblock(); err != nil {
			return nil, err
		}
	}
	s.blk.sealNext = true // its record is the seal's durable point
	if err := s.flashblock(); err != nil {
		return nil, err
	}
	return nil, s.sealMined()
}

// freshen re-opens the open block at the clock's time when it holds no
// transaction yet, so that a block sealed on demand carries the time of its
// first transaction or of the mine, not the previous seal's. Its flashblocks
// so far held no user transaction: the next one is index 0 again, with the
// new environment and the block's cheats, and no answer changes but the
// pending header's. On an OP-stack chain an empty block holds its
// L1-attributes deposit (then the new time's), and it is also re-opened to
// take the deposits injected since it opened, so that they land in the
// block being mined.
func (s *Sequencer) freshen() error {
	b := s.blk
	if !b.empty() || (s.set.clock.blockTime(b.Parent) == b.Header.Time && !s.depositsQueued()) {
		return nil
	}
	return s.reopen()
}
