package subscribe

import (
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/event"
)

// ChainEvents is where sealed-chain events come from: go-ethereum's
// *core.BlockChain for a node with a local chain, the follower in follow
// mode.
type ChainEvents interface {
	SubscribeChainEvent(ch chan<- core.ChainEvent) event.Subscription
	SubscribeLogsEvent(ch chan<- []*types.Log) event.Subscription
	SubscribeRemovedLogsEvent(ch chan<- core.RemovedLogsEvent) event.Subscription
}

var _ ChainEvents = (*core.BlockChain)(nil)
