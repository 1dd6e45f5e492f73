package sequencer

import (
	"context"
	"errors"
	"time"

	"github.com/preconf/preconf/txpool"
)

// Mining modes, switched at run time by evm_setAutomine and
// anvil_setIntervalMining as anvil's are: interval mining seals every
// block time; automine seals a block as soon as a transaction is admitted
// (its sender's call returns after the seal); with neither, blocks are
// sealed only by evm_mine and anvil_mine. Flashblocks go on every interval
// in every mode. A restart starts in the mode of the command line, as
// anvil's does.

// MiningMode is the current mode.
type MiningMode struct {
	// Automine seals a block per admitted transaction.
	Automine bool
	// BlockTime is the interval of interval mining, 0 when off.
	BlockTime time.Duration
}

// mode is the loop's mining mode (the sequencer goroutine's).
type mode struct {
	manual   bool   // no timed seals
	perBlock uint64 // flashblocks per block when timed
	automine bool
}

// Mode returns the current mining mode.
func (s *Sequencer) Mode() MiningMode { return *s.modeShared.Load() }

func (s *Sequencer) shareMode() {
	m := MiningMode{Automine: s.mode.automine}
	if !s.mode.manual {
		m.BlockTime = time.Duration(s.mode.perBlock) * s.cfg.Interval
	}
	s.modeShared.Store(&m)
}

// SetAutomine turns automine on (interval mining off) or off (evm_setAutomine;
// off leaves interval mining as it is).
func (s *Sequencer) SetAutomine(ctx context.Context, on bool) error {
	return s.do(ctx, func() error {
		if on {
			s.mode.manual, s.mode.automine = true, true
		} else {
			s.mode.automine = false
		}
		s.shareMode()
		return nil
	})
}

// ErrNoFlashblocks refuses interval mining without flashblocks.
var ErrNoFlashblocks = errors.New("interval mining needs flashblocks: restart with --flashblock-interval above 0")

// SetIntervalMining seals a block every secs seconds, automine off; 0 turns
// interval mining and automine off (anvil_setIntervalMining).
func (s *Sequencer) SetIntervalMining(ctx context.Context, secs uint64) error {
	if secs > 0 && s.cfg.Interval <= 0 {
		return &RefusedError{ErrNoFlashblocks}
	}
	if secs > 1<<30 {
		return &RefusedError{errors.New("interval above 2^30 seconds")}
	}
	return s.do(ctx, func() error {
		s.mode.automine = false
		s.mode.manual = secs == 0
		if secs > 0 {
			s.mode.perBlock = max(1, uint64(time.Duration(secs)*time.Second/s.cfg.Interval))
		}
		s.shareMode()
		return nil
	})
}

// Automine seals a block after an admitted transaction when automine is
// on: the transaction and whatever else is ready (as anvil's automine
// mines every ready transaction). A queued one (a nonce gap) is not ready:
// nothing is sealed for it. The admission is durable when it returns
// (Admit): the mine's final flashblock record synced it, or it syncs the
// log itself (automine off since Admit, a failed mine).
func (s *Sequencer) Automine(ctx context.Context, res txpool.Result) error {
	var err error
	if s.Mode().Automine && !res.Queued {
		err = s.Mine(ctx, MineOptions{Blocks: 1})
	}
	if s.wal != nil {
		// No fsync when the mine's covered the admission.
		err = errors.Join(err, s.wal.syncTo(s.admitted.Load()))
	}
	return err
}
