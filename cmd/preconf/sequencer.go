package main

import (
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/urfave/cli/v2"

	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
	"github.com/preconf/preconf/txpool"
)

// sequencerFlags configure flashblocks, sealing and the transaction pool
// (not used with --no-sequencer).
var sequencerFlags = []cli.Flag{
	&cli.DurationFlag{Name: "flashblock-interval", Value: sequencer.DefaultInterval, Usage: "pre-confirm pending transactions this often (a flashblock); --block-time must be a multiple of it; with --block-time 0, 0 keeps transactions in the pool until a block is mined", EnvVars: envName("flashblock-interval")},
	&cli.BoolFlag{Name: "automine", Usage: "seal a block as soon as a transaction arrives (anvil's default mining; evm_setAutomine switches it at run time); instead of --block-time", EnvVars: envName("automine")},
	&cli.StringFlag{Name: "miner", Value: "0x0000000000000000000000000000000000000000", Usage: "fee recipient (coinbase) of sealed blocks (zero: on an OP-stack chain the SequencerFeeVault 0x4200…0011)", EnvVars: envName("miner")},
	&cli.Uint64Flag{Name: "safe-lag", Value: sequencer.DefaultSafeLag, Usage: "the \"safe\" block is this many blocks behind latest", EnvVars: envName("safe-lag")},
	&cli.Uint64Flag{Name: "finalized-lag", Value: sequencer.DefaultFinalizedLag, Usage: "the \"finalized\" block is this many blocks behind latest", EnvVars: envName("finalized-lag")},
	&cli.DurationFlag{Name: "l1.block-time", Value: sequencer.DefaultL1BlockTime, Usage: "block time of the OP-stack dev chain's simulated L1 (whole seconds): its L1 origin advances this often", EnvVars: envName("l1.block-time")},
	&cli.Uint64Flag{Name: "gas-ceil", Usage: "move the block gas limit toward this value (go-ethereum's 1/1024 per block rule); 0 keeps the parent's", EnvVars: envName("gas-ceil")},
	&cli.IntFlag{Name: "txpool.accountslots", Value: txpool.DefaultConfig.AccountSlots, Usage: "maximum pooled transactions per sender", EnvVars: envName("txpool.accountslots")},
	&cli.IntFlag{Name: "txpool.globalslots", Value: txpool.DefaultConfig.GlobalSlots, Usage: "maximum pooled transactions in all", EnvVars: envName("txpool.globalslots")},
	&cli.Uint64Flag{Name: "txpool.pricebump", Value: txpool.DefaultConfig.PriceBump, Usage: "minimum fee increase (percent) to replace a pooled transaction", EnvVars: envName("txpool.pricebump")},
}

// applySequencerFlags sets cfg.Sequencer from the flags (nil with
// --no-sequencer, whose other sequencer flags are still checked). The
// mining mode is decided here, once: --automine, else --block-time 0 for
// manual mining, else interval mining; sequencer.Config.Validate checks it
// with the times.
func applySequencerFlags(c *cli.Context, cfg *node.Config) error {
	off := c.Bool("no-sequencer")
	blockTime := c.Duration("block-time")
	mining := sequencer.IntervalMining
	switch {
	case off:
		mining, blockTime = sequencer.ManualMining, 0
	case c.Bool("automine"):
		if c.IsSet("block-time") && blockTime > 0 {
			return fmt.Errorf("--automine seals a block per transaction: it cannot be given with --block-time %v", blockTime)
		}
		mining, blockTime = sequencer.AutoMining, 0
	case blockTime == 0:
		mining = sequencer.ManualMining
	}
	interval := c.Duration("flashblock-interval")
	switch {
	case interval < 0:
		return fmt.Errorf("--flashblock-interval must not be negative")
	case interval == 0: // the command line's "none"
		interval = sequencer.NoFlashblocks
	}
	l1Time := c.Duration("l1.block-time")
	if l1Time < time.Second || l1Time%time.Second != 0 {
		return fmt.Errorf("--l1.block-time %v must be a whole number of seconds", l1Time)
	}
	if c.IsSet("l1.block-time") && c.Bool("l1") {
		return fmt.Errorf("--l1.block-time sets the OP-stack dev chain's simulated L1; with --l1 there is none")
	}
	miner := c.String("miner")
	if !common.IsHexAddress(miner) {
		return fmt.Errorf("--miner %q is not an address", miner)
	}
	seq := &sequencer.Config{
		Mining:       mining,
		Interval:     interval,
		BlockTime:    blockTime,
		Coinbase:     common.HexToAddress(miner),
		SafeLag:      c.Uint64("safe-lag"),
		FinalizedLag: c.Uint64("finalized-lag"),
		GasCeil:      c.Uint64("gas-ceil"),
		L1BlockTime:  l1Time,
		Pool: txpool.Config{
			AccountSlots: c.Int("txpool.accountslots"),
			GlobalSlots:  c.Int("txpool.globalslots"),
			PriceBump:    c.Uint64("txpool.pricebump"),
		},
	}
	if err := seq.Validate(); err != nil {
		return err
	}
	if !off {
		cfg.Sequencer = seq
	}
	return nil
}
