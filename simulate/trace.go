package simulate

import (
	"github.com/preconf/preconf/impersonate"

	"context"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"

	"github.com/preconf/preconf/blockexec"
)

// Tracing (debug_trace*) executes under caller-supplied tracer hooks, with
// go-ethereum's eth/tracers semantics: every traced transaction runs in an
// EVM of its own over a hooked StateDB, through core.ApplyTransactionWithEVM
// (so that OnTxStart and OnTxEnd fire with the receipt), with a gas pool of
// the transaction's own gas limit and the base-fee check off.

// callEnv is a call made ready to run: its block context, its message and
// the precompiles in force (after overrides).
type callEnv struct {
	blockCtx    vm.BlockContext
	msg         *core.Message
	precompiles vm.PrecompiledContracts
}

// prepareCall applies the block and state overrides to the environment of
// header and to db and fills the call's defaults as eth_call does (gasCap
// bounds the gas; 0 is unlimited). A call that pays no gas price runs with a
// zero base fee (and blob base fee), so that it passes the fee checks.
func (e *Engine) prepareCall(args *CallArgs, header *types.Header, db *state.StateDB, so StateOverride, bo *BlockOverrides, gasCap uint64) (*callEnv, error) {
	blockCtx := core.NewEVMBlockContext(header, e.chain, nil, e.config, db)
	if bo != nil {
		if err := bo.applyContext(&blockCtx); err != nil {
			return nil, err
		}
		header = bo.header(header)
	}
	precompiles := e.precompilesFor(blockCtx.BlockNumber, blockCtx.Random != nil, blockCtx.Time, so)
	if err := so.Apply(db, precompiles); err != nil {
		return nil, err
	}
	if err := args.callDefaults(gasCap, blockCtx.BaseFee, e.config.ChainID); err != nil {
		return nil, err
	}
	msg := args.message(header.BaseFee, true)
	if msg.GasPrice.Sign() == 0 {
		blockCtx.BaseFee = new(big.Int)
	}
	if msg.BlobGasFeeCap != nil && msg.BlobGasFeeCap.Sign() == 0 {
		blockCtx.BlobBaseFee = new(big.Int)
	}
	return &callEnv{blockCtx: blockCtx, msg: msg, precompiles: precompiles}, nil
}

// TraceCall prepares args for debug_traceCall: as eth_call would run it in
// the environment of header on db (which the run changes), but applied as a
// transaction under the hooks given to run. A block-number override to
// header+1 also moves BLOCKHASH's view on by one block, so that
// BLOCKHASH(header) is header's hash rather than zero (go-ethereum #32175).
// Errors of the preparation (overrides, defaults) come back at once;
// cancelling run's ctx aborts the EVM (the tracer's Stop tells it why).
func (e *Engine) TraceCall(args CallArgs, header *types.Header, db *state.StateDB, so StateOverride, bo *BlockOverrides) (run func(context.Context, *tracing.Hooks) error, err error) {
	if bo != nil && bo.Number != nil && bo.Number.ToInt().Uint64() == header.Number.Uint64()+1 {
		next := types.CopyHeader(header)
		next.ParentHash = header.Hash()
		next.Number = new(big.Int).Add(header.Number, common.Big1)
		header = next
	}
	env, err := e.prepareCall(&args, header, db, so, bo, e.opts.gasCap())
	if err != nil {
		return nil, err
	}
	tx := args.transaction(types.DynamicFeeTxType)
	return func(ctx context.Context, hooks *tracing.Hooks) error {
		return e.applyTraced(ctx, env.blockCtx, db, env.msg, tx, common.Hash{}, common.Hash{}, 0, env.precompiles, hooks)
	}, nil
}

// applyTraced applies msg (the message of tx) to db under hooks.
func (e *Engine) applyTraced(ctx context.Context, blockCtx vm.BlockContext, db *state.StateDB, msg *core.Message, tx *types.Transaction,
	txHash, blockHash common.Hash, index int, precompiles vm.PrecompiledContracts, hooks *tracing.Hooks) error {
	evm := newEVM(blockCtx, state.NewHookedState(db, hooks), e.config, vm.Config{Tracer: hooks, NoBaseFee: true})
	if precompiles != nil {
		evm.SetPrecompiles(precompiles)
	}
	stop := context.AfterFunc(ctx, evm.Cancel)
	defer stop()
	db.SetTxContext(txHash, index)
	_, err := core.ApplyTransactionWithEVM(msg, core.NewGasPool(msg.GasLimit), db, blockCtx.BlockNumber, blockHash, blockCtx.Time, tx, evm)
	return err
}

// Replay re-executes a block's transactions — a sealed block's or the
// pending block's — on the state of its parent, as go-ethereum's tracers
// and its block processor do: the block's system calls first (EIP-4788
// beacon root, EIP-2935 parent hash), then each transaction in order,
// untraced (Skip) or under a tracer (Trace). Not safe for concurrent use.
type Replay struct {
	e        *Engine
	header   *types.Header
	hash     common.Hash
	blockCtx vm.BlockContext
	db       *state.StateDB
	evm      *vm.EVM // untraced, for Skip
	signer   types.Signer
	next     int // index of the next transaction
}

// NewReplay prepares replaying the block with header (whose hash is hash)
// on db, the state after parent, and runs the block's system calls on it.
func (e *Engine) NewReplay(ctx context.Context, header, parent *types.Header, hash common.Hash, db *state.StateDB) *Replay {
	blockCtx := core.NewEVMBlockContext(header, e.chain, nil, e.config, db)
	evm := newEVM(blockCtx, db, e.config, vm.Config{})
	blockexec.PreSystemCalls(e.config, header, parent.Hash(), evm)
	return &Replay{e: e, header: header, hash: hash, blockCtx: blockCtx, db: db, evm: evm,
		signer: impersonate.NewSigner(types.MakeSigner(e.config, header.Number, header.Time))}
}

// State is the replayed state so far.
func (r *Replay) State() *state.StateDB { return r.db }

// Skip applies the next transaction without tracing.
func (r *Replay) Skip(ctx context.Context, tx *types.Transaction) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	msg, err := impersonate.Message(tx, r.signer, r.header.BaseFee)
	if err != nil {
		return fmt.Errorf("transaction %#x: %v", tx.Hash(), err)
	}
	r.db.SetTxContext(tx.Hash(), r.next)
	r.next++
	if _, err := core.ApplyMessage(r.evm, msg, nil); err != nil {
		return fmt.Errorf("transaction %#x failed: %v", tx.Hash(), err)
	}
	r.db.Finalise(r.e.config.IsEIP158(r.header.Number))
	return nil
}

// Trace applies the next transaction under hooks. Cancelling ctx aborts
// the EVM (the tracer's Stop tells it why).
func (r *Replay) Trace(ctx context.Context, tx *types.Transaction, hooks *tracing.Hooks) error {
	msg, err := impersonate.Message(tx, r.signer, r.header.BaseFee)
	if err != nil {
		return err
	}
	i := r.next
	r.next++
	return r.e.applyTraced(ctx, r.blockCtx, r.db, msg, tx, tx.Hash(), r.hash, i, nil, hooks)
}
