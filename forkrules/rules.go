package forkrules

import (
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
)

// TxGasCap is EIP-7825's cap on a transaction's gas limit: 2^24.
const TxGasCap = params.MaxTxGas

// Rules are the rules of one block: op-geth's for its chain config, number
// and time, plus what this package adds. The zero value adds nothing.
type Rules struct {
	params.Rules
	// Fork is the newest OP fork active (None off the OP stack).
	Fork Fork
	// Karst: EIP-7939, EIP-7823, EIP-7883, EIP-7951, EIP-7825 with the
	// deposit exemption, and the 300-pair bn256Pairing cap.
	Karst bool
}

// At are cfg's rules for the post-merge block number at time.
func At(cfg *params.ChainConfig, number *big.Int, time uint64) Rules {
	return AtBlock(cfg, number, true, time)
}

// AtBlock are cfg's rules for the block number at time, merged or not.
func AtBlock(cfg *params.ChainConfig, number *big.Int, merged bool, time uint64) Rules {
	f := Latest(cfg, time)
	return Rules{Rules: cfg.Rules(number, merged, time), Fork: f, Karst: f >= Karst}
}

// Precompiles is the active precompile set. It is shared and read-only: an
// EVM takes it as is (vm.EVM.SetPrecompiles); a caller that edits one (state
// overrides that move a precompile) clones it first.
func (r Rules) Precompiles() vm.PrecompiledContracts {
	if r.Karst {
		return karstPrecompiles
	}
	return opgethSet(r.Rules)
}

// ActivePrecompiles are the addresses of Precompiles, the accounts an access
// list starts warm with; shared, read-only.
func (r Rules) ActivePrecompiles() []common.Address {
	if r.Karst {
		return karstAddresses
	}
	return vm.ActivePrecompiles(r.Rules)
}

// Normalize is cfg as preconf executes it: an OP-stack config that
// schedules Karst gets Osaka at Karst's time, as op-core's own mapping of OP
// forks to go-ethereum's sets it (params.ChainConfig.GethChainConfig: "Osaka
// with Karst") and op-reth's chain specs do. op-geth then applies, wherever
// it is given the config, what Karst takes from Osaka: the instruction set
// with CLZ, EIP-7825's cap where go-ethereum checks it (after the nonce,
// never for deposits, not for calls that skip transaction checks), the
// estimator's and the pool's cap. Its blob rules stay off on an OP-stack
// chain, and its precompile choice puts the OP forks first: the Karst set is
// given to every EVM (NewEVM, PrecompileOverride). cfg is returned when it
// needs nothing, a copy otherwise; a config that sets another Osaka time is
// refused.
func Normalize(cfg *params.ChainConfig) (*params.ChainConfig, error) {
	if cfg == nil || cfg.Optimism == nil || cfg.KarstTime == nil {
		return cfg, nil
	}
	if o := cfg.OsakaTime; o != nil {
		if *o != *cfg.KarstTime {
			return nil, fmt.Errorf("OP-stack config with Osaka at %d and Karst at %d: Osaka's rules come with Karst on the OP stack", *o, *cfg.KarstTime)
		}
		return cfg, nil
	}
	c := *cfg
	t := *cfg.KarstTime
	c.OsakaTime = &t
	return &c, nil
}

// NewEVM is vm.NewEVM with the rules of the block ctx describes: the one
// constructor every execution goes through (blocks, calls, simulations,
// traces, estimates). On Karst it sets the Karst precompile set, and gives
// the EVM cfg normalized (an unnormalized cfg's copy is the EVM's alone).
// (vm.Config.ExtraEips would give CLZ too, but makes op-geth copy its jump
// table for every EVM: BenchmarkNewEVM 2.6 µs and 2 allocations at Jovian
// against 109-151 µs and 262 at Karst that way, on this machine.)
func NewEVM(ctx vm.BlockContext, db vm.StateDB, cfg *params.ChainConfig, c vm.Config) *vm.EVM {
	if !Karst.ActiveAt(cfg, ctx.Time) {
		return vm.NewEVM(ctx, db, cfg, c)
	}
	if n, err := Normalize(cfg); err == nil {
		cfg = n
	}
	evm := vm.NewEVM(ctx, db, cfg, c)
	evm.SetPrecompiles(karstPrecompiles)
	return evm
}

// PrecompileOverride is vm.Config.PrecompileOverrides for EVMs preconf does
// not build (op-geth's block processor): the Karst set on a normalized
// config's Karst blocks (an OP-stack chain with Osaka on), op-geth's
// otherwise.
func PrecompileOverride(r params.Rules, original vm.PrecompiledContract, addr common.Address) vm.PrecompiledContract {
	if r.IsOptimismBedrock && r.IsOsaka {
		return karstPrecompiles[addr]
	}
	return original
}

// GasCap is the cap on a transaction's gas limit (0: none): EIP-7825's from
// L1's Osaka and from Karst. Deposits are exempt.
func (r Rules) GasCap() uint64 {
	if r.Karst || r.IsOsaka {
		return TxGasCap
	}
	return 0
}
