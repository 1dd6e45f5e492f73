package anvil

import (
	"context"
	"time"

	"github.com/preconf/preconf/rpc"
)

// The mining-mode methods (mine.go mines).

// setAutomine: [bool] → null.
func (a *API) setAutomine(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 0); err != nil {
		return nil, err
	}
	on, err := boolParam(p, 0)
	if err != nil {
		return nil, err
	}
	return nil, coded(a.s.SetAutomine(ctx, on))
}

// getAutomine: [] → whether automine is on.
func (a *API) getAutomine(_ context.Context, p rpc.Params) (any, error) {
	if err := args(p, 0, 0); err != nil {
		return nil, err
	}
	return a.s.Mode().Automine, nil
}

// setIntervalMining: [seconds] → null; 0 turns interval mining (and
// automine) off.
func (a *API) setIntervalMining(ctx context.Context, p rpc.Params) (any, error) {
	if err := args(p, 1, 0); err != nil {
		return nil, err
	}
	secs, err := number64(p, 0)
	if err != nil {
		return nil, err
	}
	return nil, coded(a.s.SetIntervalMining(ctx, secs))
}

// getIntervalMining: [] → the block time in seconds (a JSON number; a
// block time under a second answers 1), or null without interval mining.
func (a *API) getIntervalMining(_ context.Context, p rpc.Params) (any, error) {
	if err := args(p, 0, 0); err != nil {
		return nil, err
	}
	bt := a.s.Mode().BlockTime
	if bt == 0 {
		return nil, nil
	}
	return max(1, uint64(bt/time.Second)), nil
}
