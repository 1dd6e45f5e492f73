package blockexec

import (
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/opstack"
)

// What an OP-stack block adds to a block's execution: the L1 origin its
// first transaction (the L1-attributes deposit) carries, Jovian's
// data-availability footprint, and a fork's activation block (its upgrade
// deposits after the other deposits, the gas they are given on top of the
// chain's limit, no user transaction).

// UpgradeGas is the gas an OP-stack block at time, on a parent at
// parentTime, has for its upgrade deposits beyond the chain's gas limit
// (Karst's "Custom Upgrade Block Gas Limit"; 0 for most blocks). A block
// builder adds it to the limit of that block only.
func UpgradeGas(config *params.ChainConfig, time, parentTime uint64) uint64 {
	if config.Optimism == nil || !opstack.Activates(config, time, parentTime) {
		return 0
	}
	a, err := opstack.ActivationAt(config, time, parentTime)
	if err != nil || a == nil {
		return 0 // refused when the block opens
	}
	return a.ExtraGas
}

// SteadyGasLimit is parent's gas limit without the upgrade gas it had as an
// activation block; grand is parent's parent (nil for the genesis block).
func SteadyGasLimit(config *params.ChainConfig, parent, grand *types.Header) uint64 {
	if grand == nil {
		return parent.GasLimit
	}
	return parent.GasLimit - UpgradeGas(config, parent.Time, grand.Time)
}

// L1 is the L1 origin the block's L1-attributes deposit carries (nil while
// the block does not open with a readable one).
func (b *Block) L1() *opstack.L1Info {
	if b.l1 == nil && len(b.Txs) > 0 && b.Txs[0].IsDepositTx() {
		b.l1, _, _ = opstack.ParseL1Info(b.Txs[0].Data())
	}
	return b.l1
}

// ApplyUpgrades applies the upgrade deposits of the forks activating in the
// block (on an OP-stack chain, b.Activation) as its next transactions: after
// the L1-attributes deposit and the user deposits, as the rollup node orders
// them. It returns the activation applied, nil when none activates.
func (b *Block) ApplyUpgrades() (*opstack.Activation, error) {
	if !b.Activation {
		return nil, nil
	}
	a, err := opstack.ActivationAt(b.Config, b.Header.Time, b.Parent.Time)
	if err != nil || a == nil {
		return nil, err
	}
	signer := types.MakeSigner(b.Config, b.Header.Number, b.Header.Time)
	for _, tx := range a.Deposits {
		msg, err := core.TransactionToMessage(tx, signer, b.Header.BaseFee)
		if err == nil {
			_, err = b.Apply(tx, msg)
		}
		if err != nil {
			return nil, fmt.Errorf("block %d: %v upgrade deposit %s: %w", b.Header.Number, a.Forks, tx.Hash(), err)
		}
	}
	return a, nil
}

// countDA adds tx, just applied at index idx, to the block's DA footprint
// (Jovian: the estimated compressed size of every non-deposit transaction
// times the scalar of the block's L1-attributes deposit). It keeps
// types.CalcDAFootprint's result as the block grows.
func (b *Block) countDA(idx int, tx *types.Transaction) {
	switch {
	case !b.jovian:
	case idx == 0:
		// A Jovian activation block's deposit has Isthmus's layout and no
		// scalar: such a block carries only deposits, footprint 0.
		if data := tx.Data(); tx.IsDepositTx() && len(data) != types.IsthmusL1AttributesLen {
			scalar, err := types.ExtractDAFootprintGasScalar(data)
			b.daScalar, b.daErr = uint64(scalar), err
		}
	case !tx.IsDepositTx():
		b.da += tx.RollupCostData().EstimatedDASize().Uint64() * b.daScalar
		b.daUser = true
	}
}

// DAFootprint is the block's data-availability footprint so far, the
// header's blobGasUsed of an OP-stack block from Jovian on (nil before), as
// types.CalcDAFootprint computes it, errors included; but a block that does
// not open with a deposit has a footprint of 0, where CalcDAFootprint
// refuses it: fork mode's and testing_buildBlockV1's blocks have no
// L1-attributes deposit, and the follower refuses a block without one
// before it asks.
func (b *Block) DAFootprint() (*uint64, error) {
	if !b.jovian {
		return nil, nil
	}
	var err error
	switch {
	case len(b.Txs) == 0 || !b.Txs[0].IsDepositTx():
		// 0 (b.da counts nothing without a scalar)
	case b.daErr != nil:
		err = b.daErr
	case b.daUser && len(b.Txs[0].Data()) == types.IsthmusL1AttributesLen:
		err = errors.New("unexpected non-deposit transactions in Jovian activation block")
	}
	if err != nil {
		return nil, fmt.Errorf("block %d DA footprint: %w", b.Header.Number, err)
	}
	da := b.da
	return &da, nil
}

// DAFits reports whether tx's DA footprint fits what is left of the
// block's (Jovian: the footprint stays within the gas limit; op-geth's
// miner skips a transaction that does not fit). Deposits always fit.
func (b *Block) DAFits(tx *types.Transaction) bool {
	if !b.jovian || b.daScalar == 0 || tx.IsDepositTx() {
		return true
	}
	return b.da+tx.RollupCostData().EstimatedDASize().Uint64()*b.daScalar <= b.Header.GasLimit
}
