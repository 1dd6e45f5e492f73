package api

import (
	"context"
	"encoding/json"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/rpc"
)

func (a *API) chainID(_ context.Context, p rpc.Params) (any, error) {
	return (*hexutil.Big)(a.chain.Config().ChainID), nil
}

func (a *API) netVersion(_ context.Context, p rpc.Params) (any, error) {
	return a.chain.Config().ChainID.String(), nil
}

func (a *API) netListening(context.Context, rpc.Params) (any, error) { return true, nil }

func (a *API) netPeerCount(context.Context, rpc.Params) (any, error) {
	return hexutil.Uint(0), nil
}

func (a *API) clientVersion(context.Context, rpc.Params) (any, error) { return Version, nil }

func (a *API) sha3(_ context.Context, p rpc.Params) (any, error) {
	var in hexutil.Bytes
	if err := p.Required(0, &in); err != nil {
		return nil, err
	}
	return hexutil.Bytes(crypto.Keccak256(in)), nil
}

func (a *API) blockNumber(context.Context, rpc.Params) (any, error) {
	return hexutil.Uint64(a.chain.Head().Number.Uint64()), nil
}

// syncing: a dev node or a follower that is caught up is never syncing.
func (a *API) syncing(context.Context, rpc.Params) (any, error) {
	return json.RawMessage("false"), nil
}
