package chain

import (
	"fmt"
	"maps"
	"math/big"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/opstack"
	"github.com/preconf/preconf/pending"
)

// The dev L2 past Isthmus is the registry's Isthmus genesis with each later
// fork's upgrade transactions executed on it, in order, under that fork's
// rules, as the fork's activation block executes them on a live chain: the
// Jovian L1Block and GasPriceOracle (op-node's derive package), then the
// Karst bundle of the L2 Contracts Manager (op-core/nuts). The state they
// leave is the genesis, with the forks active from block 0, so a dev
// chain's first block is its user's. Executing them takes about a second
// (the bundle deploys 28 contracts); it is done once per process and fork.

// devL2Allocs caches devL2Alloc by fork.
var devL2Allocs sync.Map // forkrules.Fork → func() (types.GenesisAlloc, error)

// devL2Alloc is the dev L2's genesis state with every fork through hardfork
// applied (without the dev accounts). Shared: callers copy it.
func devL2Alloc(hardfork forkrules.Fork) (types.GenesisAlloc, error) {
	f, _ := devL2Allocs.LoadOrStore(hardfork, sync.OnceValues(func() (types.GenesisAlloc, error) {
		src, err := devL2Base()
		if err != nil {
			return nil, err
		}
		if hardfork <= forkrules.Isthmus {
			return src.Alloc, nil
		}
		prev, err := devL2Alloc(hardfork - 1)
		if err != nil {
			return nil, err
		}
		// The fork activates at time 1 on a genesis at 0: its activation
		// block's deposits, executed under its rules.
		cfg, err := devL2Config(src, hardfork, 1)
		if err != nil {
			return nil, err
		}
		a, err := opstack.ActivationAt(cfg, 1, 0)
		if err != nil {
			return nil, err
		}
		if a == nil {
			return prev, nil
		}
		out, err := applyDeposits(cfg, prev, src.BaseFee, 1, a.Deposits)
		if err != nil {
			return nil, fmt.Errorf("dev L2 %v upgrade: %w", hardfork, err)
		}
		return out, nil
	}))
	return f.(func() (types.GenesisAlloc, error))()
}

// applyDeposits executes deposits on alloc in a block at time under cfg's
// rules and returns the state they leave as a new alloc (alloc unchanged).
// Every deposit must succeed: upgrade transactions never revert.
func applyDeposits(cfg *params.ChainConfig, alloc types.GenesisAlloc, baseFee *big.Int, time uint64, deposits []*types.Transaction) (types.GenesisAlloc, error) {
	st, err := state.New(types.EmptyRootHash, state.NewDatabase(triedb.NewDatabase(rawdb.NewMemoryDatabase(), nil), nil))
	if err != nil {
		return nil, err
	}
	for a, acct := range alloc {
		if acct.Balance != nil {
			st.SetBalance(a, uint256.MustFromBig(acct.Balance), tracing.BalanceChangeUnspecified)
		}
		st.SetNonce(a, acct.Nonce, tracing.NonceChangeUnspecified)
		st.SetCode(a, acct.Code, tracing.CodeChangeUnspecified)
		for k, v := range acct.Storage {
			st.SetState(a, k, v)
		}
	}
	st.Finalise(false) // the genesis keeps its empty accounts
	var gas uint64
	for _, tx := range deposits {
		gas += tx.Gas()
	}
	header := &types.Header{
		Number: big.NewInt(1), Time: time, Difficulty: new(big.Int), BaseFee: baseFee, GasLimit: gas,
		Coinbase: opstack.SequencerFeeVault,
	}
	t := pending.NewTracker()
	evm := forkrules.NewEVM(core.NewEVMBlockContext(header, nil, &header.Coinbase, cfg, st), state.NewHookedState(st, t.Hooks()), cfg, vm.Config{})
	gp := core.NewGasPool(gas)
	signer := types.LatestSignerForChainID(cfg.ChainID)
	for i, tx := range deposits {
		msg, err := core.TransactionToMessage(tx, signer, baseFee)
		if err != nil {
			return nil, err
		}
		st.SetTxContext(tx.Hash(), i)
		evm.SetTxContext(core.NewEVMTxContext(msg))
		res, err := core.ApplyMessage(evm, msg, gp)
		if err != nil {
			return nil, fmt.Errorf("deposit %d (%s): %w", i, tx.SourceHash(), err)
		}
		if res.Failed() {
			return nil, fmt.Errorf("deposit %d (%s) failed: %v", i, tx.SourceHash(), res.Err)
		}
		st.Finalise(true)
	}
	d := t.Collect(st)
	out := maps.Clone(alloc)
	for a, acct := range d.Accounts {
		if acct == nil {
			delete(out, a)
			continue
		}
		storage := map[common.Hash]common.Hash{}
		if _, cleared := d.Cleared[a]; !cleared {
			maps.Copy(storage, alloc[a].Storage)
		}
		for k, v := range d.Storage[a] {
			if v == (common.Hash{}) {
				delete(storage, k)
			} else {
				storage[k] = v
			}
		}
		if len(storage) == 0 {
			storage = nil
		}
		out[a] = types.Account{Balance: acct.Balance.ToBig(), Nonce: acct.Nonce, Code: st.GetCode(a), Storage: storage}
	}
	return out, nil
}
