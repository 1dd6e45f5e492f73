package api

import (
	"context"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/simulate"
)

// setSimulateOptions sets the limits of eth_call, eth_estimateGas,
// eth_createAccessList and eth_simulateV1 (gas cap, time limit, state-root
// mode): Config.Simulate, or a test's change before it calls.
func (a *API) setSimulateOptions(o simulate.Options) error {
	e, err := simulate.New(a.chain.Config(), a.chain.ChainContext(), o)
	if err != nil {
		return err
	}
	a.engine = e
	return nil
}

// execState opens a private StateDB for executing at ref, and the header
// whose environment the execution sees. At "pending" (when something is
// pending) that is the pending block's header over the pre-confirmed state;
// with applied set, the pre-confirmed diffs are written into a StateDB over
// the parent's trie so that state roots can be hashed, otherwise they are
// read through the snapshot's overlay (no copying).
func (a *API) execState(ref ethjson.BlockRef, applied bool) (*types.Header, *state.StateDB, *pending.Snapshot, error) {
	if ref.Tag == ethjson.TagPending {
		if snap := a.pendingSnapshot(); snap != nil {
			db, err := a.pendingStateDB(snap, applied)
			if err != nil {
				return nil, nil, nil, err
			}
			return snap.Header, db, snap, nil
		}
		ref = ethjson.Latest
	}
	h, err := a.header(ref)
	if err != nil {
		return nil, nil, nil, err
	}
	db, err := a.stateDB(h.Root)
	if err != nil {
		return nil, nil, nil, &rpc.ServerError{Msg: fmt.Sprintf("state not available for block %d: %v", h.Number.Uint64(), err)}
	}
	return h, db, nil, nil
}

// stateDB opens a StateDB at a sealed root over the engine's cached reader.
func (a *API) stateDB(root common.Hash) (*state.StateDB, error) {
	sdb := a.chain.StateDatabase()
	r, err := a.engine.Readers().Sealed(root, func() (state.Reader, error) { return a.chain.StateReader(root) })
	if err != nil {
		return nil, err
	}
	return state.NewWithReader(root, sdb, r)
}

func (a *API) pendingStateDB(snap *pending.Snapshot, applied bool) (*state.StateDB, error) {
	root := snap.Parent.Root
	if applied {
		db, err := a.stateDB(root)
		if err != nil {
			return nil, &rpc.ServerError{Msg: fmt.Sprintf("pending state: %v", err)}
		}
		snap.State.ApplyTo(db)
		return db, nil
	}
	r, err := a.engine.Readers().Pending(snap, func() (state.Reader, error) { return snap.State, nil })
	if err != nil {
		return nil, &rpc.ServerError{Msg: fmt.Sprintf("pending state: %v", err)}
	}
	db, err := state.NewWithReader(root, a.chain.StateDatabase(), r)
	if err != nil {
		return nil, &rpc.ServerError{Msg: fmt.Sprintf("pending state: %v", err)}
	}
	return db, nil
}

// rpcError passes coded errors on and makes any other a -32000, as
// go-ethereum answers plain errors.
func rpcError(err error) error {
	if _, ok := err.(interface{ ErrorCode() int }); ok {
		return err
	}
	return &rpc.ServerError{Msg: err.Error()}
}

// callParams decodes (call, block?, stateOverrides?, blockOverrides?); max
// says how many of these positions the method takes, def is the block when
// it is omitted (or null).
func callParams(p rpc.Params, max int, def ethjson.BlockRef) (args simulate.CallArgs, ref ethjson.BlockRef, so simulate.StateOverride, bo *simulate.BlockOverrides, err error) {
	if err = p.Max(max); err != nil {
		return
	}
	if !p.Present(0) || !simulate.FastCallArgs(p[0], &args) {
		if err = p.Required(0, &args); err != nil {
			return
		}
	}
	ref = def
	if _, err = p.Optional(1, &ref); err != nil {
		return
	}
	if _, err = p.Optional(2, &so); err != nil {
		return
	}
	if max > 3 {
		_, err = p.Optional(3, &bo)
	}
	return
}

// execute decodes a call-style request, opens its state (at def when the
// request names no block) and runs exec.
func (a *API) execute(ctx context.Context, p rpc.Params, max int, def ethjson.BlockRef, exec func(args simulate.CallArgs, h *types.Header, db *state.StateDB, so simulate.StateOverride, bo *simulate.BlockOverrides) (any, error)) (any, error) {
	args, ref, so, bo, err := callParams(p, max, def)
	if err != nil {
		return nil, err
	}
	h, db, _, err := a.execState(ref, false)
	if err != nil {
		return nil, err
	}
	out, err := exec(args, h, db, so, bo)
	if err != nil {
		return nil, rpcError(err)
	}
	return out, nil
}

func (a *API) ethCall(ctx context.Context, p rpc.Params) (any, error) {
	return a.execute(ctx, p, 4, a.callDefault, func(args simulate.CallArgs, h *types.Header, db *state.StateDB, so simulate.StateOverride, bo *simulate.BlockOverrides) (any, error) {
		out, err := a.engine.Call(ctx, args, h, db, so, bo)
		return hexutil.Bytes(out), err
	})
}

func (a *API) estimateGas(ctx context.Context, p rpc.Params) (any, error) {
	return a.execute(ctx, p, 4, pendingRef, func(args simulate.CallArgs, h *types.Header, db *state.StateDB, so simulate.StateOverride, bo *simulate.BlockOverrides) (any, error) {
		gas, err := a.engine.EstimateGas(ctx, args, h, db, so, bo)
		return hexutil.Uint64(gas), err
	})
}

// EstimateGas is eth_estimateGas's answer in Go for args at ref, without
// state or block overrides: the same search and the same (coded) errors.
func (a *API) EstimateGas(ctx context.Context, args simulate.CallArgs, ref ethjson.BlockRef) (uint64, error) {
	return a.EstimateGasWith(ctx, args, ref, nil)
}

// EstimateGasWith is EstimateGas over state overrides so (e.g. a deposit's
// sender credited with its mint before it runs).
func (a *API) EstimateGasWith(ctx context.Context, args simulate.CallArgs, ref ethjson.BlockRef, so simulate.StateOverride) (uint64, error) {
	h, db, _, err := a.execState(ref, false)
	if err != nil {
		return 0, err
	}
	gas, err := a.engine.EstimateGas(ctx, args, h, db, so, nil)
	if err != nil {
		return 0, rpcError(err)
	}
	return gas, nil
}

type accessListJSON struct {
	AccessList types.AccessList `json:"accessList"`
	Error      string           `json:"error,omitempty"`
	GasUsed    hexutil.Uint64   `json:"gasUsed"`
}

func (a *API) createAccessList(ctx context.Context, p rpc.Params) (any, error) {
	return a.execute(ctx, p, 3, pendingRef, func(args simulate.CallArgs, h *types.Header, db *state.StateDB, so simulate.StateOverride, _ *simulate.BlockOverrides) (any, error) {
		res, err := a.engine.CreateAccessList(ctx, args, h, db, so, a.suggestTip)
		if err != nil {
			return nil, err
		}
		out := accessListJSON{AccessList: res.AccessList, GasUsed: hexutil.Uint64(res.GasUsed)}
		if out.AccessList == nil {
			out.AccessList = types.AccessList{}
		}
		if res.VMError != nil {
			out.Error = res.VMError.Error()
		}
		return out, nil
	})
}
