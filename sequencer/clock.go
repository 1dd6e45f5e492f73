package sequencer

import (
	"time"

	"github.com/ethereum/go-ethereum/core/types"
)

// clock chooses the timestamps of the blocks the sequencer opens: the wall
// clock plus an offset (evm_increaseTime, anvil_setTime), a fixed step
// after the parent (anvil_setBlockTimestampInterval), or an exact time set
// for the next block (evm_setNextBlockTimestamp, evm_mine's), never before
// the parent's time + 1 (go-ethereum's header rule; anvil allows an equal
// or, after anvil_setTime, an earlier time). Only the sequencer goroutine
// uses it.
type clock struct {
	offset   int64  // seconds added to the wall clock
	exact    uint64 // non-zero: the next block's timestamp
	interval uint64 // with stepped: each block this many seconds after its parent
	stepped  bool
}

func (c *clock) blockTime(parent *types.Header) uint64 {
	switch {
	case c.exact != 0:
		return max(c.exact, parent.Time+1)
	case c.stepped:
		return max(parent.Time+c.interval, parent.Time+1)
	}
	now := max(time.Now().Unix()+c.offset, 0)
	return max(uint64(now), parent.Time+1)
}

// sealed is told that a block with timestamp t was sealed: an exact time
// was used, and the clock goes on from it.
func (c *clock) sealed(t uint64) {
	if c.exact != 0 && t >= c.exact {
		c.offset = int64(c.exact) - time.Now().Unix()
		c.exact = 0
	}
}

// reset makes t the time now (anvil's TimeManager::reset: anvil_setTime,
// evm_revert to the snapshot's block time, anvil_reset), dropping an exact
// time set for the next block.
func (c *clock) reset(t uint64) {
	c.offset = int64(t) - time.Now().Unix()
	c.exact = 0
}
