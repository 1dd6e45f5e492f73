package follower

import (
	"context"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/event"
)

// chainEvents turns the upstream heads the follower sees into go-ethereum
// chain events (for newHeads and logs subscriptions in follow mode). Logs
// come from the sealed block's verified receipts, fetched only while someone
// listens. Removed logs of upstream reorgs are not reported.
type chainEvents struct {
	heads, logs, removed event.Feed
	logSubs              atomic.Int32
	queue                chan *types.Header
}

func newChainEvents() *chainEvents {
	return &chainEvents{queue: make(chan *types.Header, 64)}
}

// SubscribeChainEvent implements subscribe.ChainEvents.
func (f *Follower) SubscribeChainEvent(ch chan<- core.ChainEvent) event.Subscription {
	return f.chainEv.heads.Subscribe(ch)
}

// SubscribeLogsEvent implements subscribe.ChainEvents.
func (f *Follower) SubscribeLogsEvent(ch chan<- []*types.Log) event.Subscription {
	f.chainEv.logSubs.Add(1)
	return &countedSub{Subscription: f.chainEv.logs.Subscribe(ch), n: &f.chainEv.logSubs}
}

// SubscribeRemovedLogsEvent implements subscribe.ChainEvents.
func (f *Follower) SubscribeRemovedLogsEvent(ch chan<- core.RemovedLogsEvent) event.Subscription {
	return f.chainEv.removed.Subscribe(ch)
}

type countedSub struct {
	event.Subscription
	n    *atomic.Int32
	done atomic.Bool
}

func (s *countedSub) Unsubscribe() {
	if s.done.CompareAndSwap(false, true) {
		s.n.Add(-1)
	}
	s.Subscription.Unsubscribe()
}

// announce publishes a new canonical head (called on the follower loop).
func (f *Follower) announce(h *types.Header) {
	f.chainEv.heads.Send(core.ChainEvent{Header: h})
	if f.chainEv.logSubs.Load() == 0 {
		return
	}
	select {
	case f.chainEv.queue <- h:
	default: // far behind: skip this block's logs rather than block the loop
	}
}

// logWorker fetches each announced block's receipts and sends its logs, in
// order.
func (f *Follower) logWorker(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case h := <-f.chainEv.queue:
			rs := f.Backend().ReceiptsByHash(h.Hash())
			var logs []*types.Log
			for _, r := range rs {
				logs = append(logs, r.Logs...)
			}
			if len(logs) > 0 {
				f.chainEv.logs.Send(logs)
			}
		}
	}
}
