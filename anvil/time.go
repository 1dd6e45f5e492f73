package anvil

import (
	"context"

	"github.com/preconf/preconf/rpc"
)

// The time methods: the sequencer's clock (logged settings).

// increaseTime: [seconds] → the clock's total offset in seconds (a JSON
// number, as anvil answers).
func (a *API) increaseTime(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 0); err != nil {
		return nil, err
	}
	secs, err := number64(p, 0)
	if err != nil {
		return nil, err
	}
	total, err := a.s.IncreaseTime(ctx, secs)
	if err != nil {
		return nil, coded(err)
	}
	return total, nil
}

// setNextBlockTimestamp: [timestamp] → null.
func (a *API) setNextBlockTimestamp(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 0); err != nil {
		return nil, err
	}
	t, err := number64(p, 0)
	if err != nil {
		return nil, err
	}
	return nil, coded(a.s.SetNextBlockTimestamp(ctx, t))
}

// setTime: [timestamp] → seconds it moved the clock ahead of the pending
// block's time (a JSON number; 0 when not ahead).
func (a *API) setTime(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 0); err != nil {
		return nil, err
	}
	t, err := number64(p, 0)
	if err != nil {
		return nil, err
	}
	ahead, err := a.s.SetTime(ctx, t)
	if err != nil {
		return nil, coded(err)
	}
	return ahead, nil
}

// setTimestampInterval: [seconds] → null.
func (a *API) setTimestampInterval(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 0); err != nil {
		return nil, err
	}
	secs, err := number64(p, 0)
	if err != nil {
		return nil, err
	}
	_, err = a.s.SetTimestampInterval(ctx, secs, false)
	return nil, coded(err)
}

// removeTimestampInterval: [] → whether an interval was set.
func (a *API) removeTimestampInterval(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 0, 0); err != nil {
		return nil, err
	}
	was, err := a.s.SetTimestampInterval(ctx, 0, true)
	if err != nil {
		return nil, coded(err)
	}
	return was, nil
}
