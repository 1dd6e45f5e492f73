package sequencer

import (
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip1559"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/blockexec"
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/opstack"
)

// On an OP-stack chain every block opens with the L1-attributes deposit of
// its simulated L1 origin, followed by the user deposits injected since the
// previous block: together they are the block's flashblock 0, as Base's
// builders publish the sequencer's transactions; user transactions start at
// index 1. The header follows op-geth's miner: the SequencerFeeVault as fee
// recipient, Holocene's EIP-1559 parameters in the extra data, and from
// Isthmus on the L2ToL1MessagePasser's storage root as withdrawals root.

// DefaultL1BlockTime is the simulated L1's block time.
const DefaultL1BlockTime = 12 * time.Second

// opChain is the sequencer's OP-stack state; only the sequencer goroutine
// uses it (and Start before that goroutine runs).
type opChain struct {
	l1 opstack.DevL1
	// queue holds the user deposits for the next block, in injection order.
	queue []*types.Transaction
	// head is the L1 origin of the last sealed block (headHash).
	head     *opstack.L1Info
	headHash common.Hash
}

// newOPChain checks that the sequencer can build config's blocks and sets
// up the simulated L1 (cfg.L1, or the dev L2's SystemConfig, anchored at
// the chain's genesis time). Nil for a chain that is not an OP-stack one,
// and for a fork (Config.Fork).
func newOPChain(cfg Config, config *params.ChainConfig, genesisTime uint64) (*opChain, error) {
	if config.Optimism == nil || cfg.Fork {
		return nil, nil
	}
	// A fork activating after genesis gets its upgrade deposits
	// (opstack.ActivationAt); the L1-attributes deposits are built from
	// Ecotone's layout on, and a fork preconf does not implement is refused
	// at its activation block.
	if _, err := opstack.LayoutFor(config, genesisTime+1, genesisTime); err != nil {
		return nil, fmt.Errorf("cannot sequence this OP-stack chain: Ecotone must be active at genesis (%w)", err)
	}
	if err := forkrules.Check(config, genesisTime); err != nil {
		return nil, fmt.Errorf("cannot sequence this OP-stack chain: %w", err)
	}
	op := &opChain{}
	if cfg.L1 != nil {
		op.l1 = *cfg.L1
	} else {
		sc, err := chain.DevL2SystemConfig()
		if err != nil {
			return nil, err
		}
		op.l1 = opstack.DevL1{Batcher: sc.Batcher, BaseFeeScalar: sc.BaseFeeScalar, BlobBaseFeeScalar: sc.BlobBaseFeeScalar}
	}
	op.l1.GenesisTime = genesisTime
	bt := cfg.L1BlockTime
	if bt == 0 {
		bt = DefaultL1BlockTime
	}
	if bt < time.Second || bt%time.Second != 0 {
		return nil, fmt.Errorf("L1 block time %v must be a whole number of seconds", bt)
	}
	op.l1.BlockTime = uint64(bt / time.Second)
	return op, nil
}

// opEnv sets the OP-stack parts of a new block's environment: the fee
// recipient (the SequencerFeeVault unless one was configured) and, from
// Holocene on, the extra data carrying the EIP-1559 parameters the next
// block's base fee is computed with (the chain config's, as op-geth's miner
// writes them when the SystemConfig sets none).
func (s *Sequencer) opEnv(rec *record, parent *types.Header) {
	if s.op == nil {
		return
	}
	if rec.Coinbase == (common.Address{}) {
		rec.Coinbase = opstack.SequencerFeeVault
	}
	if s.config.IsHolocene(rec.Time) {
		var minBaseFee *uint64 // from Jovian on: the SystemConfig's, 0 unless set
		if s.config.IsJovian(rec.Time) {
			minBaseFee = new(uint64)
		}
		rec.Extra = eip1559.EncodeOptimismExtraData(s.config, rec.Time, s.config.BaseFeeChangeDenominator(rec.Time), s.config.ElasticityMultiplier(), minBaseFee)
	}
	// A fork's activation block has room for its upgrade deposits on top of
	// the gas limit; the next block has the limit without it again.
	rec.GasLimit += blockexec.UpgradeGas(s.config, rec.Time, parent.Time)
}

// steadyGasLimit is parent's gas limit without its upgrade allowance.
func (s *Sequencer) steadyGasLimit(parent *types.Header) uint64 {
	if s.op == nil || parent.Number.Sign() == 0 {
		return parent.GasLimit
	}
	return blockexec.SteadyGasLimit(s.config, parent, s.chain.HeaderByNumber(parent.Number.Uint64()-1))
}

// applyUpgrades applies the upgrade deposits of the forks activating in b
// (blockexec), after its other deposits, and logs them with the block's
// entries. Such a block takes no user transaction (fill).
func (s *Sequencer) applyUpgrades(b *openBlock) error {
	a, err := b.ApplyUpgrades()
	if err != nil || a == nil {
		return err
	}
	for _, tx := range a.Deposits {
		raw, err := tx.MarshalBinary()
		if err != nil {
			return err
		}
		b.entries = append(b.entries, raw)
	}
	s.log.Info("activated", "forks", fmt.Sprint(a.Forks), "block", b.Header.Number, "deposits", len(a.Deposits))
	return nil
}

// origin is the L1 origin b's L1-attributes deposit carries (nil when b
// does not open with one).
func (b *openBlock) origin() *opstack.L1Info { return b.L1() }

// empty reports whether b holds no transaction but, on an OP-stack chain,
// its L1-attributes deposit: manual mining re-opens such a block at a later
// time (freshen), whose deposit is then that time's.
func (b *openBlock) empty() bool {
	return len(b.Txs) == 0 || (len(b.Txs) == 1 && b.origin() != nil)
}

// depositsQueued reports whether user deposits wait for the next block.
func (s *Sequencer) depositsQueued() bool { return s.op != nil && len(s.op.queue) > 0 }

// parentOrigin is the L1 origin of parent (nil for the genesis block or a
// block without L1-attributes deposit).
func (s *Sequencer) parentOrigin(parent *types.Header) *opstack.L1Info {
	if s.op.head != nil && s.op.headHash == parent.Hash() {
		return s.op.head
	}
	blk := s.chain.BlockByHash(parent.Hash())
	if blk == nil || len(blk.Transactions()) == 0 || !blk.Transactions()[0].IsDepositTx() {
		return nil
	}
	info, _, err := opstack.ParseL1Info(blk.Transactions()[0].Data())
	if err != nil {
		return nil
	}
	return info
}

// openL1Deposit applies the new block's L1-attributes deposit.
func (s *Sequencer) openL1Deposit(b *openBlock) error {
	info := s.op.l1.Next(s.parentOrigin(b.Parent), b.Header.Time)
	l1tx, err := info.Deposit(s.config, b.Header.Time, b.Parent.Time)
	if err != nil {
		return fmt.Errorf("block %d: L1-attributes deposit: %w", b.Header.Number, err)
	}
	if err := s.apply(b, l1tx); err != nil {
		return fmt.Errorf("block %d: L1-attributes deposit: %w", b.Header.Number, err)
	}
	return nil
}

// applyQueuedDeposits applies the queued user deposits that fit the new
// block's gas limit (the rest wait for the next block).
func (s *Sequencer) applyQueuedDeposits(b *openBlock) error {
	kept := s.op.queue[:0]
	for _, tx := range s.op.queue {
		if b.Gas.Gas() < tx.Gas() {
			kept = append(kept, tx)
			continue
		}
		if err := s.apply(b, tx); err != nil {
			// A deposit's failure is in its receipt; only a full block
			// refuses one (checked above).
			return fmt.Errorf("block %d: user deposit %s: %w", b.Header.Number, tx.Hash(), err)
		}
	}
	s.op.queue = kept
	return nil
}

// sealedOrigin remembers the L1 origin of the block just sealed, the next
// block's parent.
func (s *Sequencer) sealedOrigin(b *openBlock, hash common.Hash) {
	if s.op != nil {
		s.op.head, s.op.headHash = b.origin(), hash
	}
}

// passerRoot reports whether b's withdrawals root is the
// L2ToL1MessagePasser's storage root: an OP-stack block from Isthmus on
// (not in fork mode, which builds on an upstream's chain without its L1
// side: its blocks keep the empty root).
func (s *Sequencer) passerRoot(b *openBlock) bool {
	return s.op != nil && s.config.IsOptimismIsthmus(b.Header.Time)
}

// withdrawalsRoot is the header's withdrawals root of an OP-stack block
// from Isthmus on, the L2ToL1MessagePasser's storage root after the
// block's transactions (b.StateDB's root computed), nil otherwise.
func (s *Sequencer) withdrawalsRoot(b *openBlock) *common.Hash {
	if !s.passerRoot(b) {
		return nil
	}
	root := b.StateDB.GetStorageRoot(params.OptimismL2ToL1MessagePasser)
	return &root
}
