package simulate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/forkrules"
)

// estimation is one eth_estimateGas search: go-ethereum's (its
// eth/gasestimator), written here because op-geth's builds every EVM itself
// with op-geth's precompiles, where a Karst block needs Karst's (a passkey
// wallet's estimate would be short 3,450 gas per P256VERIFY) and a state
// override may have moved one. The differential tests against geth and
// op-geth check it where the rules are theirs.
type estimation struct {
	e           *Engine
	blockCtx    vm.BlockContext
	db          *state.StateDB // the prestate, overrides applied; each run copies it
	precompiles vm.PrecompiledContracts
}

// search finds the lowest gas limit with which msg succeeds: a plain
// transfer tries 21000 first; the call then runs at the highest allowance
// (the gas cap, the block gas limit or msg's gas, EIP-7825's cap where it
// applies, and what the sender's balance pays for at its fee cap), then at
// the optimistic limit, then bisects until within ratio. A failure at the
// highest allowance returns the revert data with the error.
func (s *estimation) search(ctx context.Context, msg *core.Message, gasCap uint64, ratio float64) (uint64, []byte, error) {
	hi := s.blockCtx.GasLimit
	if msg.GasLimit >= params.TxGas {
		hi = msg.GasLimit
	}
	if c := forkrules.At(s.e.config, s.blockCtx.BlockNumber, s.blockCtx.Time).GasCap(); c != 0 && hi > c {
		hi = c
	}
	feeCap := msg.GasFeeCap
	if feeCap == nil {
		feeCap = msg.GasPrice
	}
	if feeCap != nil && feeCap.Sign() != 0 {
		available := s.db.GetBalance(msg.From).ToBig()
		if msg.Value != nil {
			if msg.Value.Cmp(available) >= 0 {
				return 0, nil, core.ErrInsufficientFundsForTransfer
			}
			available.Sub(available, msg.Value)
		}
		if n := len(msg.BlobHashes); n > 0 && s.e.config.IsCancun(s.blockCtx.BlockNumber, s.blockCtx.Time) {
			blobs := new(big.Int).Mul(big.NewInt(int64(n)*params.BlobTxBlobGasPerBlob), msg.BlobGasFeeCap)
			if blobs.Cmp(available) >= 0 {
				return 0, nil, core.ErrInsufficientFunds
			}
			available.Sub(available, blobs)
		}
		if allowance := new(big.Int).Div(available, feeCap); allowance.IsUint64() && hi > allowance.Uint64() {
			hi = allowance.Uint64()
		}
	}
	if gasCap != 0 && hi > gasCap {
		hi = gasCap
	}
	// A plain transfer is tried at 21000 (not assumed: an access list or a
	// delegated recipient costs more).
	if len(msg.Data) == 0 && msg.To != nil && s.db.GetCodeSize(*msg.To) == 0 {
		if failed, _, err := s.run(ctx, msg, params.TxGas); !failed && err == nil {
			return params.TxGas, nil, nil
		}
	}
	failed, res, err := s.run(ctx, msg, hi)
	if err != nil {
		return 0, nil, err
	}
	if failed {
		if res != nil && !errors.Is(res.Err, vm.ErrOutOfGas) {
			return 0, res.Revert(), res.Err
		}
		return 0, nil, fmt.Errorf("gas required exceeds allowance (%d)", hi)
	}
	// The gas used unconstrained bounds the answer from below (a contract
	// checking gasleft() aside); used plus refund plus the call stipend,
	// with the 63/64 rule, is usually enough.
	lo := res.UsedGas - 1
	if optimistic := (res.MaxUsedGas + params.CallStipend) * 64 / 63; optimistic < hi {
		failed, _, err := s.run(ctx, msg, optimistic)
		if err != nil {
			return 0, nil, err
		}
		if failed {
			lo = optimistic
		} else {
			hi = optimistic
		}
	}
	for lo+1 < hi {
		if ratio > 0 && float64(hi-lo)/float64(hi) < ratio {
			break // wallets add a margin anyway: an answer within ratio above is enough
		}
		mid := lo + (hi-lo)/2
		if mid > lo*2 {
			mid = lo * 2 // most transactions need little more than they use: favour the low side
		}
		failed, _, err := s.run(ctx, msg, mid)
		if err != nil {
			return 0, nil, err
		}
		if failed {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil, nil
}

// run executes msg with gas on a copy of the prestate. failed is true when
// the execution failed for a reason more gas might fix (including an
// intrinsic gas too low, or a limit over EIP-7825's cap: less is tried); a
// non-nil error is a failure no gas limit fixes.
func (s *estimation) run(ctx context.Context, msg *core.Message, gas uint64) (failed bool, res *core.ExecutionResult, err error) {
	m := *msg
	m.GasLimit = gas
	blockCtx := s.blockCtx
	if m.GasPrice.Sign() == 0 {
		blockCtx.BaseFee = new(big.Int) // zero fees: the base fee must not exceed them
	}
	if m.BlobGasFeeCap != nil && m.BlobGasFeeCap.Sign() == 0 {
		blockCtx.BlobBaseFee = new(big.Int)
	}
	db := s.db.Copy()
	evm := newEVM(blockCtx, db, s.e.config, vm.Config{NoBaseFee: true})
	if s.precompiles != nil {
		evm.SetPrecompiles(s.precompiles)
	}
	stop := context.AfterFunc(ctx, evm.Cancel)
	defer stop()
	res, err = core.ApplyMessage(evm, &m, core.NewGasPool(math.MaxUint64))
	if dberr := db.Error(); dberr != nil {
		return true, nil, dberr
	}
	if err != nil {
		if errors.Is(err, core.ErrIntrinsicGas) || errors.Is(err, core.ErrGasLimitTooHigh) {
			return true, nil, nil
		}
		return true, nil, fmt.Errorf("failed with %d gas: %w", gas, err)
	}
	return res.Failed(), res, nil
}

// estimationFor prepares an estimation in the environment of header on db.
func (e *Engine) estimationFor(header *types.Header, db *state.StateDB, precompiles vm.PrecompiledContracts) *estimation {
	return &estimation{e: e, blockCtx: core.NewEVMBlockContext(header, e.chain, nil, e.config, db), db: db, precompiles: precompiles}
}
