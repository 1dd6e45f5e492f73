package sequencer

import "time"

// The timed schedule. A block spans perBlock intervals and its flashblock 0
// is published when it opens, on the interval grid. On the plain chain the
// others follow on the grid, one an interval, the last one interval before
// the next block opens: a transaction arriving after it waits at most an
// interval, for the next block's flashblock 0.
//
// An OP-stack block's flashblock 0 holds its deposits alone, as Base's
// builder publishes it, so on that grid a transaction arriving after the
// last flashblock waited for the next block's flashblock 1: up to two
// intervals (~400 ms at 200 ms, measured by hand with cast). Base's builder
// (op-rbuilder) instead publishes flashblocks 1 to N an interval apart from
// a first offset of one interval less a leeway, the last one the leeway
// before the slot ends. Here the leeway is half an interval: the flashblocks
// after 0 are published half an interval before their grid points, and a
// block has one more of them (perBlock + 1 flashblocks, the last half an
// interval before the next block), so no transaction waits more than an
// interval. The boundary tick's prefill (prefill.go) still executes what
// arrived before flashblock 0 right after it.

// shifted reports whether timed blocks run on the half-shifted schedule:
// on an OP-stack chain whose flashblock 0 holds the deposits alone.
func (s *Sequencer) shifted() bool {
	return s.op != nil && !s.mode.manual && s.mode.perBlock > 1
}

// finalIndex is the index of a timed block's last flashblock.
func (s *Sequencer) finalIndex() uint64 {
	if s.shifted() {
		return s.mode.perBlock
	}
	return s.mode.perBlock - 1
}

// early is how long before its grid point the next tick is due: half an
// interval for a flashblock after 0 on the shifted schedule.
func (s *Sequencer) early() time.Duration {
	if s.blk != nil && s.shifted() && s.blk.index > 0 && s.blk.index <= s.finalIndex() {
		return s.cfg.Interval / 2
	}
	return 0
}

// nextGridPoint is the grid point of the tick after one due early before
// grid point k: the next one, except after a block's last flashblock on the
// shifted schedule, whose next block opens on k itself.
func (s *Sequencer) nextGridPoint(k int64, early time.Duration) int64 {
	if early > 0 && s.blk == nil {
		return k
	}
	return k + 1
}
