package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/eth/tracers"
	"github.com/ethereum/go-ethereum/eth/tracers/logger"
	_ "github.com/ethereum/go-ethereum/eth/tracers/native" // callTracer, prestateTracer, 4byteTracer, muxTracer, …
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/simulate"
)

// The debug_trace* methods re-execute transactions under go-ethereum's
// tracers (eth/tracers): the struct logger by default, or a named native
// tracer (callTracer, prestateTracer, 4byteTracer, noopTracer, muxTracer,
// flatCallTracer, …) with its tracerConfig. Historical blocks are replayed
// on their parent's state (the node is an archive); pre-confirmed
// transactions are replayed on the pending block's parent, in the pending
// block's environment. Answers and errors follow go-ethereum v1.17.5.

// defaultTraceTimeout bounds the tracing of one transaction (go-ethereum's).
const defaultTraceTimeout = 5 * time.Second

var (
	errTxNotFound       = &rpc.ServerError{Msg: "transaction not found"}
	errGenesisNotTraced = &rpc.ServerError{Msg: "genesis is not traceable"}
	errTraceTimeout     = errors.New("execution timeout")
)

func init() {
	// No JavaScript engine is linked in: a name that is no native tracer
	// would otherwise reach go-ethereum's (unset) JS evaluator, also from
	// inside muxTracer's configuration.
	tracers.DefaultDirectory.RegisterJSEval(func(name string, _ *tracers.Context, _ json.RawMessage, _ *params.ChainConfig) (*tracers.Tracer, error) {
		return nil, fmt.Errorf("tracer %q not found (JavaScript tracers are not supported)", name)
	})
}

// TraceConfig is the options object of the debug_trace* methods. The struct
// logger's options sit at its top level, as in go-ethereum.
type TraceConfig struct {
	logger.Config
	Tracer       *string         `json:"tracer"`
	Timeout      *string         `json:"timeout"`
	TracerConfig json.RawMessage `json:"tracerConfig"`
}

// TraceCallConfig adds debug_traceCall's overrides and the transaction
// index of the block whose state the call runs on.
type TraceCallConfig struct {
	TraceConfig
	StateOverrides simulate.StateOverride   `json:"stateOverrides"`
	BlockOverrides *simulate.BlockOverrides `json:"blockOverrides"`
	TxIndex        *hexutil.Uint            `json:"txIndex"`
}

// timeout is the configured per-transaction time limit.
func (c *TraceConfig) timeout() (time.Duration, error) {
	if c.Timeout == nil {
		return defaultTraceTimeout, nil
	}
	d, err := time.ParseDuration(*c.Timeout)
	if err != nil {
		return 0, &rpc.ServerError{Msg: err.Error()}
	}
	return d, nil
}

// newTracer makes the tracer the configuration names. The struct logger
// stops recording once its output passes the answer size cap (its Limit, if
// smaller, wins), so an endless loop cannot fill memory with steps; an
// answer over the cap is then refused by rpc.
func (a *API) newTracer(ctx context.Context, c *TraceConfig, txctx *tracers.Context) (*tracers.Tracer, error) {
	if c.Tracer == nil {
		cfg := c.Config
		if limit := rpc.ResponseLimit(ctx); limit > 0 && (cfg.Limit <= 0 || cfg.Limit > limit) {
			cfg.Limit = limit
		}
		l := logger.NewStructLogger(&cfg)
		result := func() (json.RawMessage, error) {
			raw, err := l.GetResult()
			if err != nil {
				return nil, err
			}
			return gethStructLogs(raw)
		}
		return &tracers.Tracer{Hooks: l.Hooks(), GetResult: result, Stop: l.Stop}, nil
	}
	t, err := tracers.DefaultDirectory.New(*c.Tracer, txctx, c.TracerConfig, a.chain.Config())
	if err != nil {
		return nil, &rpc.ServerError{Msg: err.Error()}
	}
	return t, nil
}

// traceOne runs one transaction (run applies it under the hooks it is
// given) under a fresh tracer and returns the tracer's result. The tracer is
// stopped with "execution timeout" when the configured time runs out.
func (a *API) traceOne(ctx context.Context, c *TraceConfig, txctx *tracers.Context, run func(context.Context, *tracing.Hooks) error) (json.RawMessage, error) {
	timeout, err := c.timeout()
	if err != nil {
		return nil, err
	}
	tracer, err := a.newTracer(ctx, c, txctx)
	if err != nil {
		return nil, err
	}
	deadline, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop := context.AfterFunc(deadline, func() {
		if errors.Is(deadline.Err(), context.DeadlineExceeded) {
			tracer.Stop(errTraceTimeout)
		}
	})
	defer stop()
	if err := run(deadline, tracer.Hooks); err != nil {
		return nil, &rpc.ServerError{Msg: fmt.Sprintf("tracing failed: %v", err)}
	}
	// The request itself ended (its deadline, or the client left): the
	// execution was cut short, so its trace is not an answer.
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	// The tracer is stopped asynchronously; a run that outlived its time
	// is a timeout even if it finished before the stop arrived.
	if errors.Is(deadline.Err(), context.DeadlineExceeded) {
		return nil, &rpc.ServerError{Msg: errTraceTimeout.Error()}
	}
	res, err := tracer.GetResult()
	if err != nil {
		return nil, &rpc.ServerError{Msg: err.Error()}
	}
	return res, nil
}

// traceParams decodes the (subject, options?) arguments of the
// debug_trace* methods but debug_traceCall: the block or transaction
// selector into subject, and the options.
func traceParams(p rpc.Params, subject any) (*TraceConfig, error) {
	if err := p.Max(2); err != nil {
		return nil, err
	}
	if err := p.Required(0, subject); err != nil {
		return nil, err
	}
	c := new(TraceConfig)
	if _, err := p.Optional(1, c); err != nil {
		return nil, err
	}
	return c, nil
}

// replayTarget is a block to replay: a sealed one, or the pending block.
type replayTarget struct {
	header *types.Header
	parent *types.Header
	hash   common.Hash
	txs    types.Transactions
}

func (a *API) sealedTarget(b *types.Block) (*replayTarget, error) {
	if b.NumberU64() == 0 {
		return nil, errGenesisNotTraced
	}
	parent := a.chain.HeaderByHash(b.ParentHash())
	if parent == nil {
		return nil, &rpc.ServerError{Msg: fmt.Sprintf("parent %#x not found", b.ParentHash())}
	}
	return &replayTarget{header: b.Header(), parent: parent, hash: b.Hash(), txs: b.Transactions()}, nil
}

func (a *API) pendingTarget(snap *pending.Snapshot) *replayTarget {
	return &replayTarget{header: snap.Header, parent: snap.Parent, hash: a.pendingBlockHash(snap), txs: snap.Txs}
}

// replay opens the parent's state of t and runs the block's system calls.
func (a *API) replay(ctx context.Context, t *replayTarget) (*simulate.Replay, error) {
	db, err := a.chain.StateAt(t.parent)
	if err != nil {
		return nil, &rpc.ServerError{Msg: fmt.Sprintf("state not available for block %d: %v", t.parent.Number.Uint64(), err)}
	}
	return a.engine.NewReplay(ctx, t.header, t.parent, t.hash, db), nil
}

// replayTo replays t's transactions before index (the state index sees).
func (a *API) replayTo(ctx context.Context, t *replayTarget, index int) (*simulate.Replay, error) {
	r, err := a.replay(ctx, t)
	if err != nil {
		return nil, err
	}
	for _, tx := range t.txs[:index] {
		if err := r.Skip(ctx, tx); err != nil {
			return nil, &rpc.ServerError{Msg: err.Error()}
		}
	}
	return r, nil
}

func (t *replayTarget) txContext(i int) *tracers.Context {
	return &tracers.Context{BlockHash: t.hash, BlockNumber: t.header.Number, TxIndex: i, TxHash: t.txs[i].Hash()}
}

// traceBlock traces every transaction of t in order, each under a tracer of
// its own, and answers [{"txHash", "result"}, …].
func (a *API) traceBlock(ctx context.Context, t *replayTarget, c *TraceConfig) (any, error) {
	r, err := a.replay(ctx, t)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, 256*len(t.txs)+2)
	out = append(out, '[')
	for i, tx := range t.txs {
		res, err := a.traceOne(ctx, c, t.txContext(i), func(ctx context.Context, hooks *tracing.Hooks) error {
			return r.Trace(ctx, tx, hooks)
		})
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"txHash":`...)
		out = ethjson.AppendHexBytes(out, tx.Hash().Bytes())
		if len(res) > 0 {
			out = append(out, `,"result":`...)
			out = append(out, res...)
		}
		out = append(out, '}')
		if limit := rpc.ResponseLimit(ctx); limit > 0 && len(out) > limit {
			return nil, rpc.ResponseTooLarge(limit)
		}
	}
	return json.RawMessage(append(out, ']')), nil
}

// traceTx traces t's transaction at index on the state its predecessors
// left.
func (a *API) traceTx(ctx context.Context, t *replayTarget, index int, c *TraceConfig) (any, error) {
	r, err := a.replayTo(ctx, t, index)
	if err != nil {
		return nil, err
	}
	tx := t.txs[index]
	return a.traceOne(ctx, c, t.txContext(index), func(ctx context.Context, hooks *tracing.Hooks) error {
		return r.Trace(ctx, tx, hooks)
	})
}

func (a *API) debugTraceBlockByNumber(ctx context.Context, p rpc.Params) (any, error) {
	var n ethjson.BlockNumber
	c, err := traceParams(p, &n)
	if err != nil {
		return nil, err
	}
	ref := ethjson.BlockRef(n)
	v, err := a.resolveBlock(ref)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, &rpc.ServerError{Msg: fmt.Sprintf("block #%d not found", ref.Number)}
	}
	if v.snap != nil {
		return a.traceBlock(ctx, a.pendingTarget(v.snap), c)
	}
	t, err := a.sealedTarget(v.block)
	if err != nil {
		return nil, err
	}
	return a.traceBlock(ctx, t, c)
}

func (a *API) debugTraceBlockByHash(ctx context.Context, p rpc.Params) (any, error) {
	var hash common.Hash
	c, err := traceParams(p, &hash)
	if err != nil {
		return nil, err
	}
	if b := a.chain.BlockByHash(hash); b != nil {
		t, err := a.sealedTarget(b)
		if err != nil {
			return nil, err
		}
		return a.traceBlock(ctx, t, c)
	}
	if snap := a.pendingSnapshot(); snap != nil && a.pendingBlockHash(snap) == hash {
		return a.traceBlock(ctx, a.pendingTarget(snap), c)
	}
	return nil, &rpc.ServerError{Msg: fmt.Sprintf("block %s not found", hash.Hex())}
}

func (a *API) debugTraceTransaction(ctx context.Context, p rpc.Params) (any, error) {
	var hash common.Hash
	c, err := traceParams(p, &hash)
	if err != nil {
		return nil, err
	}
	// A pre-confirmed transaction is replayed in the pending block.
	if snap := a.pendingSnapshot(); snap != nil {
		if _, _, i, ok := snap.Tx(hash); ok {
			return a.traceTx(ctx, a.pendingTarget(snap), i, c)
		}
	}
	_, blockHash, number, index, ok := a.chain.TxLookup(hash)
	if !ok {
		return nil, errTxNotFound
	}
	if number == 0 {
		return nil, errGenesisNotTraced
	}
	b := a.chain.BlockByHash(blockHash)
	if b == nil {
		return nil, &rpc.ServerError{Msg: fmt.Sprintf("block %s not found", blockHash.Hex())}
	}
	t, err := a.sealedTarget(b)
	if err != nil {
		return nil, err
	}
	return a.traceTx(ctx, t, int(index), c)
}

// debugTraceCall traces a call as eth_call would run it at a block: on the
// state after the block, or — with txIndex — on the state before the
// block's transaction at that index, in the block's environment. Unlike
// go-ethereum, "pending" is supported: the pending block's environment over
// the pre-confirmed state.
func (a *API) debugTraceCall(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.Max(3); err != nil {
		return nil, err
	}
	var args simulate.CallArgs
	if err := p.Required(0, &args); err != nil {
		return nil, err
	}
	ref, err := refParam(p, 1)
	if err != nil {
		return nil, err
	}
	var c TraceCallConfig
	if _, err := p.Optional(2, &c); err != nil {
		return nil, err
	}
	header, db, err := a.traceCallState(ctx, ref, c.TxIndex)
	if err != nil {
		return nil, err
	}
	run, err := a.engine.TraceCall(args, header, db, c.StateOverrides, c.BlockOverrides)
	if err != nil {
		return nil, rpcError(err)
	}
	return a.traceOne(ctx, &c.TraceConfig, new(tracers.Context), run)
}

// traceCallState resolves debug_traceCall's block: its header and a
// private StateDB after it, or before its transaction txIndex.
func (a *API) traceCallState(ctx context.Context, ref ethjson.BlockRef, txIndex *hexutil.Uint) (*types.Header, *state.StateDB, error) {
	if txIndex == nil {
		h, db, _, err := a.execState(ref, false)
		if err != nil {
			return nil, nil, err
		}
		return h, db, nil
	}
	v, err := a.resolveBlock(ref)
	if err != nil {
		return nil, nil, err
	}
	if v == nil {
		if ref.Hash != nil {
			return nil, nil, &rpc.ServerError{Msg: fmt.Sprintf("block %s not found", ref.Hash.Hex())}
		}
		return nil, nil, &rpc.ServerError{Msg: fmt.Sprintf("block #%d not found", ref.Number)}
	}
	if v.snap == nil && v.block.NumberU64() == 0 {
		return nil, nil, &rpc.ServerError{Msg: "no transaction in genesis"}
	}
	var t *replayTarget
	if v.snap != nil {
		t = a.pendingTarget(v.snap)
	} else if t, err = a.sealedTarget(v.block); err != nil {
		return nil, nil, err
	}
	i := int(*txIndex)
	if i > len(t.txs) || (i == len(t.txs) && i > 0) {
		return nil, nil, &rpc.ServerError{Msg: fmt.Sprintf("transaction index %d out of range for block %#x", i, t.hash)}
	}
	r, err := a.replayTo(ctx, t, i)
	if err != nil {
		return nil, nil, err
	}
	return t.header, r.State(), nil
}
