package api

import (
	"context"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/forkid"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/rpc"
)

// forkConfig is one fork's entry of the EIP-7910 answer.
type forkConfig struct {
	ActivationTime  uint64                    `json:"activationTime"`
	BlobSchedule    *params.BlobConfig        `json:"blobSchedule"`
	ChainID         *hexutil.Big              `json:"chainId"`
	ForkID          hexutil.Bytes             `json:"forkId"`
	Precompiles     map[string]common.Address `json:"precompiles"`
	SystemContracts map[string]common.Address `json:"systemContracts"`
}

type configResult struct {
	Current *forkConfig `json:"current"`
	Next    *forkConfig `json:"next"`
	Last    *forkConfig `json:"last"`
}

// config implements eth_config (EIP-7910): the fork active at the head, the
// next scheduled one and the last scheduled one (both null when no fork is
// scheduled). Only time-based forks are described, as the EIP says.
func (a *API) config(_ context.Context, p rpc.Params) (any, error) {
	if err := p.Max(0); err != nil {
		return nil, err
	}
	cfg := a.chain.Config()
	genesis := a.chain.Genesis()
	now := a.chain.Head().Time
	describe := func(ts *uint64) *forkConfig {
		if ts == nil {
			return nil
		}
		t := *ts
		// The precompiles the chain's rules give (Karst's own set on the OP
		// stack, whose normalized config lists it as Osaka: forkrules).
		precompiles := make(map[string]common.Address)
		for addr, c := range forkrules.At(cfg, cfg.LondonBlock, t).Precompiles() {
			precompiles[c.Name()] = addr
		}
		activation := t
		if genesis.Time() >= t {
			activation = 0
		}
		id := forkid.NewID(cfg, types.NewBlockWithHeader(genesis.Header()), ^uint64(0), t).Hash
		var blobs *params.BlobConfig
		if cfg.BlobScheduleConfig != nil { // none on the OP stack (op-geth's BlobConfig would dereference it)
			blobs = cfg.BlobConfig(cfg.LatestFork(t))
		}
		return &forkConfig{
			ActivationTime:  activation,
			BlobSchedule:    blobs,
			ChainID:         (*hexutil.Big)(cfg.ChainID),
			ForkID:          id[:],
			Precompiles:     precompiles,
			SystemContracts: cfg.ActiveSystemContracts(t),
		}
	}
	res := &configResult{
		Current: describe(cfg.Timestamp(cfg.LatestFork(now))),
		Next:    describe(cfg.Timestamp(cfg.LatestFork(now) + 1)),
		Last:    describe(cfg.Timestamp(cfg.LatestFork(^uint64(0)))),
	}
	if res.Next == nil {
		res.Last = nil
	}
	return res, nil
}
