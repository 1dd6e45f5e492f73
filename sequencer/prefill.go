package sequencer

import (
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/preconf/preconf/txpool"
)

// An OP-stack block's flashblock 0 holds its deposits alone, as Base's
// builder publishes it, so the transactions that arrive during its interval
// wait for flashblock 1, which then executed two intervals' transactions in
// one tick: at 3,000 transfers/s on the OP-stack dev chain (go run ./bench
// -writeload -writeload-chain op), ~1,200 transactions and a tick of 26–53
// ms against 13–28 ms for the others, and 5–7 of the 10–13 intervals
// outside ±20 ms in four 30 s windows were late ones ending at flashblock
// 1. The boundary tick now executes what the pool holds right after
// publishing flashblock 0, without publishing it (prefill); flashblock 1
// publishes it with what it executes itself. Nothing is seen earlier or
// later than before: those transactions could not be in flashblock 0.
// docs/bench.md has the before/after.

// depositsAlone reports whether b's next flashblock holds the block's
// deposits alone: an OP-stack block's flashblock 0, unless it is the
// block's only one on a timed schedule (a block time equal to the
// flashblock interval), whose blocks would otherwise never take a
// transaction.
func (s *Sequencer) depositsAlone(b *openBlock) bool {
	return s.op != nil && b.index == 0 && (s.mode.manual || s.mode.perBlock > 1)
}

// prefill executes the pool's candidates on the open block after its
// deposits-only flashblock 0 was published (tick calls it when
// depositsAlone held for that flashblock, on a timed schedule: flashblock
// 1 follows), holding them for flashblock 1 (b.held), and hashes them. It
// is bounded by the tick's fill deadline like any fill.
func (s *Sequencer) prefill() {
	b := s.blk
	start := time.Now()
	defer func() { b.heldTook += time.Since(start) }()
	stale, invalid := s.fill(b, true)
	b.heldStale = append(b.heldStale, stale...)
	b.heldInvalid = append(b.heldInvalid, invalid...)
	if len(b.held) > 0 {
		// Hash what was executed now too: flashblock 1's state root and
		// transaction and receipt roots then hash only what it adds.
		b.StateDB.IntermediateRoot(s.config.IsEIP158(b.Header.Number))
		b.Roots()
	}
}

// publishHeld publishes the transactions prefill held, as a flashblock,
// before a command acts on the open block: commands find everything
// executed on it published.
func (s *Sequencer) publishHeld() error {
	if s.blk == nil || len(s.blk.held) == 0 {
		return nil
	}
	return s.build(false, false)
}

// candidates are the pool's executable runs on b's state. The pool drops
// the transactions whose nonce the state passed, so while some are held
// (executed, not yet published) the pool is asked from the held senders'
// first held nonces and their runs start after the held ones here: a
// transaction leaves the pool only once a published state holds it.
func (s *Sequencer) candidates(b *openBlock) [][]*txpool.Entry {
	if len(b.held) == 0 {
		return s.pool.Candidates(b.StateDB.GetNonce)
	}
	runs := s.pool.Candidates(func(a common.Address) uint64 {
		if n, ok := b.held[a]; ok {
			return n
		}
		return b.StateDB.GetNonce(a)
	})
	out := runs[:0]
	for _, run := range runs {
		if _, ok := b.held[run[0].From]; ok {
			next := b.StateDB.GetNonce(run[0].From)
			for len(run) > 0 && run[0].Tx.Nonce() < next {
				run = run[1:]
			}
		}
		if len(run) > 0 {
			out = append(out, run)
		}
	}
	return out
}
