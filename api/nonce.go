package api

import (
	"github.com/ethereum/go-ethereum/common"

	"github.com/preconf/preconf/ethjson"
)

// PoolNonces gives a sender's pool nonce: the nonce its next transaction
// should use, past its transactions executed on a pending state whose nonce
// for it is stateNonce and past its contiguous pooled ones (*txpool.Pool).
// It must be cheap and must not wait for the sequencer: eth_getTransactionCount
// at "pending" is read before every send.
type PoolNonces interface {
	PendingNonce(addr common.Address, stateNonce uint64) uint64
}

// nonceAt is the nonce answered for addr at ref, whose state says
// stateNonce: the pool nonce at "pending" when a pool is set.
func (a *API) nonceAt(ref ethjson.BlockRef, addr common.Address, stateNonce uint64) uint64 {
	if ref.Tag == ethjson.TagPending && a.poolNonces != nil {
		return a.poolNonces.PendingNonce(addr, stateNonce)
	}
	return stateNonce
}
