package anvil

import (
	"context"
	"errors"

	"github.com/holiman/uint256"

	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/sequencer"
)

// The state methods: each a cheat of the open block (sequencer.Cheat).

// cheat runs plan on the open block's state and answers result.
func (a *API) cheat(ctx context.Context, result any, plan func(sequencer.StateView) ([]sequencer.Write, error)) (any, error) {
	if err := a.s.Cheat(ctx, plan); err != nil {
		return nil, coded(err)
	}
	return result, nil
}

func write(w sequencer.Write) func(sequencer.StateView) ([]sequencer.Write, error) {
	return func(sequencer.StateView) ([]sequencer.Write, error) { return []sequencer.Write{w}, nil }
}

// setBalance: [address, balance] → null.
func (a *API) setBalance(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 2, 0); err != nil {
		return nil, err
	}
	addr, err := address(p, 0)
	if err != nil {
		return nil, err
	}
	v, err := number(p, 1)
	if err != nil {
		return nil, err
	}
	return a.cheat(ctx, nil, write(sequencer.SetBalance(addr, v)))
}

// addBalance: [address, amount] → null; the balance after it must fit 256 bits.
func (a *API) addBalance(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 2, 0); err != nil {
		return nil, err
	}
	addr, err := address(p, 0)
	if err != nil {
		return nil, err
	}
	v, err := number(p, 1)
	if err != nil {
		return nil, err
	}
	return a.cheat(ctx, nil, func(st sequencer.StateView) ([]sequencer.Write, error) {
		sum, overflow := new(uint256.Int).AddOverflow(st.GetBalance(addr), v)
		if overflow {
			return nil, errors.New("the balance would exceed 2^256-1")
		}
		return []sequencer.Write{sequencer.SetBalance(addr, sum)}, nil
	})
}

// setCode: [address, code] → null.
func (a *API) setCode(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 2, 0); err != nil {
		return nil, err
	}
	addr, err := address(p, 0)
	if err != nil {
		return nil, err
	}
	code, err := bytesParam(p, 1)
	if err != nil {
		return nil, err
	}
	return a.cheat(ctx, nil, write(sequencer.SetCode(addr, code)))
}

// setNonce: [address, nonce] → null.
func (a *API) setNonce(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 2, 0); err != nil {
		return nil, err
	}
	addr, err := address(p, 0)
	if err != nil {
		return nil, err
	}
	n, err := number64(p, 1)
	if err != nil {
		return nil, err
	}
	return a.cheat(ctx, nil, write(sequencer.SetNonce(addr, n)))
}

// setStorageAt: [address, slot (a number), value (32 bytes)] → true.
func (a *API) setStorageAt(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 3, 0); err != nil {
		return nil, err
	}
	addr, err := address(p, 0)
	if err != nil {
		return nil, err
	}
	slot, err := number(p, 1)
	if err != nil {
		return nil, err
	}
	value, err := hash(p, 2)
	if err != nil {
		return nil, err
	}
	return a.cheat(ctx, true, write(sequencer.SetStorage(addr, slot.Bytes32(), value)))
}

// setCoinbase: [address] → null.
func (a *API) setCoinbase(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 0); err != nil {
		return nil, err
	}
	addr, err := address(p, 0)
	if err != nil {
		return nil, err
	}
	return nil, coded(a.s.SetCoinbase(ctx, addr))
}

// setNextBaseFee: [fee] → null.
func (a *API) setNextBaseFee(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 0); err != nil {
		return nil, err
	}
	fee, err := number(p, 0)
	if err != nil {
		return nil, err
	}
	return nil, coded(a.s.SetNextBaseFee(ctx, fee.ToBig()))
}

// setBlockGasLimit: [gas] → true.
func (a *API) setBlockGasLimit(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 0); err != nil {
		return nil, err
	}
	gas, err := number64(p, 0)
	if err != nil {
		return nil, err
	}
	if err := a.s.SetGasLimit(ctx, gas); err != nil {
		return nil, coded(err)
	}
	return true, nil
}

// impersonate: [address] → null.
func (a *API) impersonate(on bool) rpc.Handler {
	return func(ctx context.Context, p rpc.Params) (any, error) {
		if err := args(p, 1, 0); err != nil {
			return nil, err
		}
		addr, err := address(p, 0)
		if err != nil {
			return nil, err
		}
		return nil, coded(a.s.Impersonate(ctx, addr, on))
	}
}

// autoImpersonate: [bool] → null.
func (a *API) autoImpersonate(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 0); err != nil {
		return nil, err
	}
	on, err := boolParam(p, 0)
	if err != nil {
		return nil, err
	}
	return nil, coded(a.s.AutoImpersonate(ctx, on))
}
