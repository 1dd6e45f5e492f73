package forkrules

import (
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

// At are cfg's rules for the block number at time (post-merge: every chain
// preconf executes is).
func At(cfg *params.ChainConfig, number *big.Int, time uint64) Rules {
	f := Latest(cfg, time)
	return Rules{Rules: cfg.Rules(number, true, time), Fork: f, Karst: f >= Karst}
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

// NewEVM is vm.NewEVM with the rules of the block ctx describes: the one
// constructor every execution goes through (blocks, calls, simulations,
// traces, estimates).
//
// On Karst the EVM is given a copy of cfg with Osaka active from Karst's
// time, as op-core's own mapping of OP forks to go-ethereum's sets it
// (params.ChainConfig.GethChainConfig: "Osaka with Karst"): op-geth's EVM then
// runs Osaka's instruction set (CLZ) and its state transition applies
// EIP-7825's cap exactly where go-ethereum does — after the nonce check,
// never to deposits, not for messages that skip transaction checks. Its
// precompile choice puts the OP forks first, so the Karst set is set here.
// Only the EVM sees the copy: block contexts, headers and blob fees keep
// cfg. (vm.Config.ExtraEips would give CLZ too, but makes op-geth copy its
// jump table for every EVM: BenchmarkNewEVM 2.6 µs and 2 allocations at
// Jovian against 109-151 µs and 262 at Karst that way, on this machine.)
func NewEVM(ctx vm.BlockContext, db vm.StateDB, cfg *params.ChainConfig, c vm.Config) *vm.EVM {
	if !Karst.ActiveAt(cfg, ctx.Time) {
		return vm.NewEVM(ctx, db, cfg, c)
	}
	evm := vm.NewEVM(ctx, db, evmConfig(cfg), c)
	evm.SetPrecompiles(karstPrecompiles)
	return evm
}

// evmConfig is cfg as the EVM sees it on Karst (NewEVM).
func evmConfig(cfg *params.ChainConfig) *params.ChainConfig {
	if cfg.OsakaTime != nil {
		return cfg
	}
	c := *cfg
	c.OsakaTime = cfg.KarstTime
	return &c
}

// GasCap is the cap on a transaction's gas limit (0: none): EIP-7825's from
// L1's Osaka and from Karst. Deposits are exempt.
func (r Rules) GasCap() uint64 {
	if r.Karst || r.IsOsaka {
		return TxGasCap
	}
	return 0
}
