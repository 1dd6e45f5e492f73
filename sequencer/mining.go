package sequencer

import (
	"errors"
	"fmt"
	"time"
)

// Mining is how blocks are sealed, decided once from the configuration
// (the command line's --block-time and --automine) and switched at run time
// by evm_setAutomine and anvil_setIntervalMining (mode.go). The zero value
// is interval mining, the default.
type Mining uint8

const (
	// IntervalMining seals a block every Config.BlockTime.
	IntervalMining Mining = iota
	// ManualMining seals only when asked (evm_mine, anvil_mine), as anvil
	// --no-mining does: transactions wait in the pool and are pre-confirmed
	// every Config.Interval, or not before the mine with NoFlashblocks.
	ManualMining
	// AutoMining seals a block as soon as a transaction is admitted
	// (anvil's default, --automine); it is manual mining otherwise.
	AutoMining
)

func (m Mining) String() string {
	switch m {
	case IntervalMining:
		return "interval"
	case ManualMining:
		return "manual"
	case AutoMining:
		return "automine"
	}
	return fmt.Sprintf("Mining(%d)", uint8(m))
}

// NoFlashblocks as Config.Interval pre-confirms nothing before a block is
// mined (manual mining and automine only). A zero interval is the default.
const NoFlashblocks time.Duration = -1

// Validate checks the mining settings: "the block time is a multiple of the
// flashblock interval" is decided here only. Zero values are the defaults
// (DefaultInterval, DefaultBlockTime); errors name the command line's flags.
func (c *Config) Validate() error {
	if c.Mining > AutoMining {
		return fmt.Errorf("unknown mining mode %v", c.Mining)
	}
	if c.BlockTime < 0 {
		return errors.New("--block-time must not be negative")
	}
	if c.Interval < 0 && c.Interval != NoFlashblocks {
		return errors.New("--flashblock-interval must not be negative")
	}
	if c.Mining != IntervalMining {
		return nil // BlockTime is not used
	}
	if c.Interval == NoFlashblocks {
		return errors.New("--flashblock-interval 0 needs --block-time 0 (manual mining)")
	}
	d := c.withDefaults()
	if d.BlockTime < d.Interval || d.BlockTime%d.Interval != 0 {
		return fmt.Errorf("--block-time %v must be a multiple of --flashblock-interval %v", d.BlockTime, d.Interval)
	}
	return nil
}

// withDefaults is c with its zero mining settings set to the defaults. Its
// Interval is 0 where there are no flashblocks (NoFlashblocks), and its
// BlockTime 0 unless it mines on an interval.
func (c Config) withDefaults() Config {
	switch c.Interval {
	case 0:
		c.Interval = DefaultInterval
	case NoFlashblocks:
		c.Interval = 0
	}
	switch {
	case c.Mining != IntervalMining:
		c.BlockTime = 0
	case c.BlockTime == 0:
		c.BlockTime = DefaultBlockTime
	}
	return c
}
