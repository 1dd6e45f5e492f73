package opstack

import (
	"fmt"

	"github.com/ethereum-optimism/optimism/op-core/forks"
	"github.com/ethereum-optimism/optimism/op-node/rollup/derive"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/forkrules"
)

// Network upgrade transactions: the deposits a fork's activation block
// carries after its L1-attributes deposit and user deposits, which upgrade
// the predeploys the fork's rules expect. They come from the OP monorepo's
// rollup node as a library (op-node/rollup/derive, which embeds the Karst
// bundle of op-core/nuts): the bytes every OP chain executed.

// upgrades are the forks with upgrade transactions, in the order the rollup
// node appends them when several activate in one block.
var upgrades = []struct {
	fork forkrules.Fork
	txs  func() ([]hexutil.Bytes, uint64, error)
}{
	{forkrules.Fjord, noGas(derive.FjordNetworkUpgradeTransactions)},
	{forkrules.Isthmus, noGas(derive.IsthmusNetworkUpgradeTransactions)},
	{forkrules.Jovian, noGas(derive.JovianNetworkUpgradeTransactions)},
	// From Karst, a bundle whose gas is added to the activation block's gas
	// limit ("Custom Upgrade Block Gas Limit", l2-upgrades-1-execution.md).
	{forkrules.Karst, func() ([]hexutil.Bytes, uint64, error) { return derive.UpgradeTransactions(forks.Karst) }},
}

func noGas(f func() ([]hexutil.Bytes, error)) func() ([]hexutil.Bytes, uint64, error) {
	return func() ([]hexutil.Bytes, uint64, error) {
		txs, err := f()
		return txs, 0, err
	}
}

// Activation is what a fork's activation block adds: its upgrade deposits
// and the gas its limit is raised by for them.
type Activation struct {
	Forks    []forkrules.Fork
	Deposits []*types.Transaction
	// ExtraGas is added to the block's gas limit for this block only.
	ExtraGas uint64
}

// ActivationAt is what the OP-stack block at time, whose parent is at
// parentTime, adds for the forks that activate in it (nothing for most
// blocks, and for forks active from genesis). Such a block carries no
// sequenced transaction: the rollup node drops a batch with one.
func ActivationAt(config *params.ChainConfig, time, parentTime uint64) (*Activation, error) {
	if err := forkrules.Check(config, time); err != nil {
		return nil, err
	}
	var out *Activation
	for _, u := range upgrades {
		if !u.fork.Activates(config, time, parentTime) {
			continue
		}
		raw, gas, err := u.txs()
		if err != nil {
			return nil, fmt.Errorf("opstack: %s upgrade transactions: %w", u.fork, err)
		}
		if out == nil {
			out = new(Activation)
		}
		out.Forks = append(out.Forks, u.fork)
		out.ExtraGas += gas
		for i, b := range raw {
			tx := new(types.Transaction)
			if err := tx.UnmarshalBinary(b); err != nil {
				return nil, fmt.Errorf("opstack: %s upgrade transaction %d: %w", u.fork, i, err)
			}
			out.Deposits = append(out.Deposits, tx)
		}
	}
	return out, nil
}

// Activates reports whether the block at time (parent at parentTime)
// activates a fork with upgrade transactions.
func Activates(config *params.ChainConfig, time, parentTime uint64) bool {
	for _, u := range upgrades {
		if u.fork.Activates(config, time, parentTime) {
			return true
		}
	}
	return false
}
