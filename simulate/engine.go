// Package simulate is the node's one execution engine: eth_simulateV1,
// eth_call (a one-call execution), eth_estimateGas (a binary search over
// calls) and eth_createAccessList (calls under an access-list tracer). It
// runs on a prestate the caller opens (a sealed block's state, or the
// pre-confirmed state of the pending block) and knows nothing of RPC
// transports: errors carry their JSON-RPC codes through ErrorCode().
//
// Semantics follow go-ethereum v1.17.5 (internal/ethapi), re-implemented
// here: defaults, gas caps, error codes and messages, block assembly.
package simulate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/tracers/logger"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/internal/option"
)

// RootMode says whether simulated blocks get a real state root.
type RootMode uint8

const (
	// RootZero leaves stateRoot all-zero: no trie hashing, the fast default.
	// Block hashes (and BLOCKHASH) are still consistent within a response.
	RootZero RootMode = iota
	// RootCompute hashes the state after each block exactly as go-ethereum.
	RootCompute
)

// ParseRootMode reads "zero" or "compute".
func ParseRootMode(s string) (RootMode, error) {
	switch s {
	case "zero", "":
		return RootZero, nil
	case "compute":
		return RootCompute, nil
	}
	return RootZero, fmt.Errorf("unknown state-root mode %q (want zero or compute)", s)
}

func (m RootMode) String() string {
	if m == RootCompute {
		return "compute"
	}
	return "zero"
}

// Defaults as in go-ethereum.
const (
	DefaultGasCap  = 50_000_000
	DefaultTimeout = 5 * time.Second

	MaxBlocks        = 256
	MaxCallsPerBlock = 5000
	MaxCalls         = 10000

	// DefaultBlockTime is the timestamp step between simulated blocks when
	// neither the caller nor the pending block says otherwise.
	DefaultBlockTime = 12

	estimateErrorRatio = 0.015
)

// Options are the node-wide limits of the engine. Zero values are the
// defaults (DefaultGasCap, DefaultTimeout, RootZero); "none" is spelled
// NoGasCap and NoTimeout.
type Options struct {
	// GasCap caps each call's gas and, in eth_simulateV1, the gas of the
	// whole request.
	GasCap uint64
	// Timeout bounds one request's execution.
	Timeout time.Duration
	// Roots is the state-root mode of simulated blocks.
	Roots RootMode
	// EVMSystemCalls runs the system contracts (beacon root, parent hash,
	// request queues) in the EVM for every simulated block, as go-ethereum
	// does, instead of writing their effects directly; slower, for
	// cross-checking.
	EVMSystemCalls bool
}

// NoGasCap and NoTimeout as Options values lift the limit: the largest
// value, a limit never reached.
const (
	NoGasCap  uint64        = math.MaxUint64
	NoTimeout time.Duration = math.MaxInt64
)

// DefaultOptions are go-ethereum's defaults with zero state roots (the
// zero Options, spelled out).
func DefaultOptions() Options {
	return Options{GasCap: DefaultGasCap, Timeout: DefaultTimeout, Roots: RootZero}
}

// Validate checks the options; errors are option.FieldErrors naming
// "gas-cap", "timeout" or "state-root".
func (o *Options) Validate() error {
	if o.Timeout < 0 {
		return option.Errorf("timeout", "must not be negative")
	}
	if o.Roots > RootCompute {
		return option.Errorf("state-root", "unknown mode %v (want zero or compute)", o.Roots)
	}
	return nil
}

// withDefaults fills the zero values.
func (o Options) withDefaults() Options {
	if o.GasCap == 0 {
		o.GasCap = DefaultGasCap
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// gasCap and timeout are the limits as the engine applies them,
// go-ethereum's way: 0 for none.
func (o *Options) gasCap() uint64 {
	if o.GasCap == NoGasCap {
		return 0
	}
	return o.GasCap
}

func (o *Options) timeout() time.Duration {
	if o.Timeout == NoTimeout {
		return 0
	}
	return o.Timeout
}

// Engine executes calls for one chain. It is stateless and safe for
// concurrent use; every execution brings its own StateDB.
type Engine struct {
	config  *params.ChainConfig
	chain   core.ChainContext
	opts    Options
	readers Readers
	hash    atomic.Pointer[headerHash] // the last base header hashed
}

type headerHash struct {
	header *types.Header
	hash   common.Hash
}

// hashOf is h.Hash(), remembered for the last header asked (headers are
// immutable; most requests build on the same head or pending parent).
func (e *Engine) hashOf(h *types.Header) common.Hash {
	if m := e.hash.Load(); m != nil && m.header == h {
		return m.hash
	}
	m := &headerHash{header: h, hash: h.Hash()}
	e.hash.Store(m)
	return m.hash
}

// New returns an engine over a chain (for BLOCKHASH of canonical blocks and
// the consensus engine) with the given limits (Validate's error when it
// refuses them). The config is executed as forkrules.Normalize makes it
// (Osaka's rules with Karst).
func New(config *params.ChainConfig, chain core.ChainContext, opts Options) (*Engine, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if n, err := forkrules.Normalize(config); err == nil {
		config = n
	}
	return &Engine{config: config, chain: chain, opts: opts.withDefaults()}, nil
}

// Options are the engine's limits, defaults filled in.
func (e *Engine) Options() Options { return e.opts }

// Readers are the engine's cached prestate readers.
func (e *Engine) Readers() *Readers { return &e.readers }

func (e *Engine) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if e.opts.timeout() > 0 {
		return context.WithTimeout(ctx, e.opts.timeout())
	}
	return context.WithCancel(ctx)
}

// apply runs msg in evm, cancelling the EVM when ctx ends. Validity errors
// are wrapped with the supplied gas, as go-ethereum reports them.
func (e *Engine) apply(ctx context.Context, evm *vm.EVM, msg *core.Message, gp *core.GasPool) (*core.ExecutionResult, error) {
	stop := context.AfterFunc(ctx, evm.Cancel)
	defer stop()
	return e.run(evm, msg, gp)
}

// run is apply for an EVM whose cancellation the caller has tied to the
// request's context (context.AfterFunc(ctx, evm.Cancel)).
func (e *Engine) run(evm *vm.EVM, msg *core.Message, gp *core.GasPool) (*core.ExecutionResult, error) {
	res, err := core.ApplyMessage(evm, msg, gp)
	if evm.Cancelled() {
		return nil, timeoutError(e.opts.timeout())
	}
	if err != nil {
		return res, fmt.Errorf("err: %w (supplied gas %d)", err, msg.GasLimit)
	}
	return res, nil
}

// precompilesFor is precompiles for a block whose state overrides are so:
// the shared read-only set unless the overrides replace or move a
// precompile (StateOverride.Apply then edits its own copy).
func (e *Engine) precompilesFor(number *big.Int, merged bool, time uint64, so StateOverride) vm.PrecompiledContracts {
	r := forkrules.AtBlock(e.config, number, merged, time)
	addrs := r.ActivePrecompiles()
	for addr, o := range so {
		if o.MovePrecompileTo != nil || slices.Contains(addrs, addr) {
			return maps.Clone(r.Precompiles())
		}
	}
	return r.Precompiles()
}

// Call executes args in the environment of header on db (which it changes:
// pass a StateDB of your own). It returns the return data, a RevertError
// for a revert, or the VM error (code -32000) as eth_call does.
func (e *Engine) Call(ctx context.Context, args CallArgs, header *types.Header, db *state.StateDB, so StateOverride, bo *BlockOverrides) ([]byte, error) {
	res, err := e.call(ctx, args, header, db, so, bo)
	if err != nil {
		return nil, err
	}
	if errors.Is(res.Err, vm.ErrExecutionReverted) {
		return nil, NewRevertError(res.Revert())
	}
	if res.Err != nil {
		return nil, &Error{Code: CodeServer, Msg: res.Err.Error()}
	}
	return res.Return(), nil
}

func (e *Engine) call(ctx context.Context, args CallArgs, header *types.Header, db *state.StateDB, so StateOverride, bo *BlockOverrides) (*core.ExecutionResult, error) {
	gasCap := e.opts.gasCap()
	if gasCap == 0 {
		gasCap = math.MaxUint64
	}
	env, err := e.prepareCall(&args, header, db, so, bo, gasCap)
	if err != nil {
		return nil, err
	}
	ctx, cancel := e.withTimeout(ctx)
	defer cancel()
	evm := newEVM(env.blockCtx, &warmPrecompiles{StateDB: db}, e.config, vm.Config{NoBaseFee: true})
	evm.SetPrecompiles(env.precompiles)
	res, err := e.apply(ctx, evm, env.msg, core.NewGasPool(gasCap))
	if serr := db.Error(); serr != nil {
		return nil, serr
	}
	return res, err
}

// EstimateGas finds the lowest gas limit with which args succeed in the
// environment of header on db, by go-ethereum's search: a plain transfer is
// tried at 21000 first, the call then runs at the highest allowance (the gas
// cap, the block gas limit, and what the sender's balance pays for at its fee
// cap), then at the optimistic limit, then bisects until within 1.5 %.
func (e *Engine) EstimateGas(ctx context.Context, args CallArgs, header *types.Header, db *state.StateDB, so StateOverride, bo *BlockOverrides) (uint64, error) {
	blockCtx := core.NewEVMBlockContext(header, e.chain, nil, e.config, db)
	if bo != nil {
		if bo.BlobBaseFee != nil {
			// The estimate takes overrides as a header, as go-ethereum's
			// does, which has no blob base fee: refuse rather than ignore it.
			return 0, &Error{Code: CodeInvalidParams, Msg: `block override "blobBaseFee" is not supported by eth_estimateGas`}
		}
		if err := bo.applyContext(&blockCtx); err != nil {
			return 0, err
		}
		header = bo.header(header)
	}
	precompiles := e.precompilesFor(blockCtx.BlockNumber, blockCtx.Random != nil, blockCtx.Time, so)
	if err := so.Apply(db, precompiles); err != nil {
		return 0, err
	}
	if args.Gas == nil {
		args.Gas = new(hexutil.Uint64)
	}
	if err := args.callDefaults(e.opts.gasCap(), header.BaseFee, e.config.ChainID); err != nil {
		return 0, err
	}
	msg := args.message(header.BaseFee, true)
	ctx, cancel := e.withTimeout(ctx)
	defer cancel()
	gas, revert, err := e.estimationFor(header, db, precompiles).search(ctx, msg, e.opts.gasCap(), estimateErrorRatio)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return 0, timeoutError(e.opts.timeout())
	}
	if err != nil {
		if errors.Is(err, vm.ErrExecutionReverted) {
			return 0, NewRevertError(revert)
		}
		return 0, err
	}
	return gas, nil
}

// AccessListResult is eth_createAccessList's answer.
type AccessListResult struct {
	AccessList types.AccessList
	GasUsed    uint64
	// VMError is the execution's failure, if any (the list is still given).
	VMError error
}

// CreateAccessList runs args under an access-list tracer until the list it
// produces is stable: every account and slot touched, except the sender, the
// recipient, the precompiles and valid authorities. suggestTip supplies the
// priority fee when the caller gives no fees.
func (e *Engine) CreateAccessList(ctx context.Context, args CallArgs, header *types.Header, db *state.StateDB, so StateOverride, suggestTip func() *big.Int) (*AccessListResult, error) {
	if err := so.Apply(db, nil); err != nil {
		return nil, err
	}
	isLondon := e.config.IsLondon(header.Number)
	isCancun := e.config.IsCancun(header.Number, header.Time)
	var blobBaseFee *big.Int
	if isCancun && header.ExcessBlobGas != nil {
		blobBaseFee = eip4844.CalcBlobFee(e.config, header)
	}
	if err := args.feeDefaults(isLondon, isCancun, header.BaseFee, blobBaseFee, suggestTip); err != nil {
		return nil, err
	}
	if args.Nonce == nil {
		n := hexutil.Uint64(db.GetNonce(args.sender()))
		args.Nonce = &n
	}
	blockCtx := core.NewEVMBlockContext(header, e.chain, nil, e.config, db)
	if err := args.callDefaults(e.opts.gasCap(), blockCtx.BaseFee, e.config.ChainID); err != nil {
		return nil, err
	}
	from := args.sender()
	to := crypto.CreateAddress(from, uint64(*args.Nonce))
	if args.To != nil {
		to = *args.To
	}
	exclude := map[common.Address]struct{}{from: {}, to: {}}
	for _, addr := range forkrules.AtBlock(e.config, header.Number, header.Difficulty.Sign() == 0, header.Time).ActivePrecompiles() {
		exclude[addr] = struct{}{}
	}
	if uint64(len(args.AuthorizationList)) > uint64(*args.Gas)/params.CallNewAccountGas {
		return nil, errors.New("insufficient gas to process all authorizations")
	}
	for _, auth := range args.AuthorizationList {
		if (!auth.ChainID.IsZero() && auth.ChainID.CmpBig(e.config.ChainID) != 0) || auth.Nonce+1 < auth.Nonce {
			continue
		}
		if authority, err := auth.Authority(); err == nil {
			exclude[authority] = struct{}{}
		}
	}
	var initial types.AccessList
	if args.AccessList != nil {
		initial = *args.AccessList
	}
	ctx, cancel := e.withTimeout(ctx)
	defer cancel()
	prev := logger.NewAccessListTracer(initial, exclude)
	for {
		if ctx.Err() != nil {
			return nil, timeoutError(e.opts.timeout())
		}
		list := prev.AccessList()
		run := db.Copy()
		args.AccessList = &list
		msg := args.message(header.BaseFee, true)
		tracer := logger.NewAccessListTracer(list, exclude)
		evm := newEVM(blockCtx, run, e.config, vm.Config{Tracer: tracer.Hooks(), NoBaseFee: true})
		if msg.GasPrice.Sign() == 0 {
			evm.Context.BaseFee = new(big.Int)
		}
		if msg.BlobGasFeeCap != nil && msg.BlobGasFeeCap.Sign() == 0 {
			evm.Context.BlobBaseFee = new(big.Int)
		}
		stop := context.AfterFunc(ctx, evm.Cancel)
		res, err := core.ApplyMessage(evm, msg, nil)
		stop()
		cancelled := evm.Cancelled()
		if cancelled {
			return nil, timeoutError(e.opts.timeout())
		}
		if err != nil {
			return nil, fmt.Errorf("failed to apply transaction: %v err: %v", args.transaction(types.LegacyTxType).Hash(), err)
		}
		if tracer.Equal(prev) {
			return &AccessListResult{AccessList: list, GasUsed: res.UsedGas, VMError: res.Err}, nil
		}
		prev = tracer
	}
}
