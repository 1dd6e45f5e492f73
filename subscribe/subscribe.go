// Package subscribe serves eth_subscribe over websocket: go-ethereum's kinds
// for the sealed chain (newHeads, logs) and the pending pool
// (newPendingTransactions), and Base's flashblocks kinds for pre-confirmed
// state (newFlashblocks, pendingLogs, newFlashblockTransactions).
//
// Two goroutines feed every subscription: one follows the sealed chain's
// events, one every published pending snapshot. Each event is encoded once
// and handed to each matching subscription without blocking: a client that
// cannot keep up is disconnected by the transport, never waited for.
package subscribe

import (
	"github.com/preconf/preconf/impersonate"

	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
)

// kind is a subscription kind.
type kind int

const (
	kindNewHeads kind = iota
	kindLogs
	kindPendingTxs
	kindFlashblocks
	kindPendingLogs
	kindFlashblockTxs
	numKinds
)

// kindNames are the eth_subscribe names.
var kindNames = map[string]kind{
	"newHeads":                  kindNewHeads,
	"logs":                      kindLogs,
	"newPendingTransactions":    kindPendingTxs,
	"newFlashblocks":            kindFlashblocks,
	"pendingLogs":               kindPendingLogs,
	"newFlashblockTransactions": kindFlashblockTxs,
}

// subscriber is one subscription and its options.
type subscriber struct {
	sub    *rpc.Subscription
	full   bool               // full objects instead of hashes
	filter *ethjson.LogFilter // logs, pendingLogs; newFlashblockTransactions given a filter
}

// Service owns the subscriptions of every connection.
type Service struct {
	events  ChainEvents
	pending *pending.Source
	signer  types.Signer
	log     *slog.Logger

	mu   sync.RWMutex
	subs [numKinds]map[*rpc.Subscription]*subscriber

	stop    chan struct{}
	wg      sync.WaitGroup
	started bool
}

// SnapshotBuffer is how many pending snapshots may queue for the service
// before pending.Source starts skipping them for it (about 13 minutes of
// flashblocks at 200 ms).
const SnapshotBuffer = 4096

// New returns a service over the chain and the pending source; Start runs it.
func New(c *chain.Chain, p *pending.Source, logger *slog.Logger) *Service {
	return NewWithEvents(c.Config(), c.BlockChain(), p, logger)
}

// NewWithEvents returns a service over any source of sealed-chain events
// (follow mode has no local chain) and the pending source.
func NewWithEvents(config *params.ChainConfig, events ChainEvents, p *pending.Source, logger *slog.Logger) *Service {
	if logger == nil {
		logger = slog.Default()
	}
	s := &Service{events: events, pending: p, signer: impersonate.NewSigner(types.LatestSigner(config)), log: logger, stop: make(chan struct{})}
	for k := range s.subs {
		s.subs[k] = make(map[*rpc.Subscription]*subscriber)
	}
	return s
}

// Register adds eth_subscribe and eth_unsubscribe to srv.
func (s *Service) Register(srv *rpc.Server) {
	srv.Register("eth_subscribe", s.subscribe)
	srv.Register("eth_unsubscribe", s.unsubscribe)
}

// Start follows the chain and the pending source until Close.
func (s *Service) Start() {
	if s.started {
		return
	}
	s.started = true
	bc := s.events
	heads := make(chan core.ChainEvent, 256)
	logs := make(chan []*types.Log, 256)
	removed := make(chan core.RemovedLogsEvent, 64)
	subs := []interface{ Unsubscribe() }{
		bc.SubscribeChainEvent(heads),
		bc.SubscribeLogsEvent(logs),
		bc.SubscribeRemovedLogsEvent(removed),
	}
	snaps, cancel := s.pending.Subscribe(SnapshotBuffer)
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		defer func() {
			for _, sub := range subs {
				sub.Unsubscribe()
			}
		}()
		for {
			select {
			case ev := <-heads:
				s.safely("newHeads", func() { s.onHead(ev.Header) })
			case ls := <-logs:
				s.safely("logs", func() { s.onLogs(ls) })
			case ev := <-removed:
				s.safely("removed logs", func() { s.onLogs(ev.Logs) })
			case <-s.stop:
				return
			}
		}
	}()
	go func() {
		defer s.wg.Done()
		defer cancel()
		for {
			select {
			case snap := <-snaps:
				if snap != nil {
					s.safely("flashblock", func() { s.onSnapshot(snap) })
				}
			case <-s.stop:
				return
			}
		}
	}()
}

// safely runs one event's delivery; a panic (a malformed event) is logged
// and that event skipped, rather than taking the node down.
func (s *Service) safely(what string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("subscriptions: event delivery failed", "event", what, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	f()
}

// Close stops following events. Subscriptions end with their connections.
func (s *Service) Close() error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.wg.Wait()
	return nil
}

// Count is the number of live subscriptions of a kind name ("" for all).
func (s *Service) Count(name string) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if name == "" {
		n := 0
		for _, m := range s.subs {
			n += len(m)
		}
		return n
	}
	k, ok := kindNames[name]
	if !ok {
		return 0
	}
	return len(s.subs[k])
}

func (s *Service) has(k kind) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.subs[k]) > 0
}

// each calls f for every subscriber of k (under the read lock: f must not
// block, which Notify never does).
func (s *Service) each(k kind, f func(*subscriber)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, sb := range s.subs[k] {
		f(sb)
	}
}

// subscribe is eth_subscribe(name, [options]).
func (s *Service) subscribe(ctx context.Context, p rpc.Params) (any, error) {
	n, ok := rpc.NotifierFromContext(ctx)
	if !ok {
		return nil, rpc.ErrNotificationsUnsupported
	}
	if p.Len() == 0 {
		return nil, &rpc.InvalidParamsError{Msg: "expected subscription name as first argument"}
	}
	var name string
	if err := json.Unmarshal(p[0], &name); err != nil {
		return nil, &rpc.InvalidParamsError{Msg: "expected subscription name as first argument"}
	}
	k, ok := kindNames[name]
	if !ok {
		return nil, &rpc.CodedError{Code: rpc.CodeMethodNotFound, Msg: fmt.Sprintf("no %q subscription in eth namespace", name)}
	}
	sb, err := parseOptions(k, p)
	if err != nil {
		return nil, err
	}
	if sb.sub, err = n.Subscribe(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.subs[k][sb.sub] = sb
	s.mu.Unlock()
	sb.sub.OnClose(func() {
		s.mu.Lock()
		delete(s.subs[k], sb.sub)
		s.mu.Unlock()
	})
	return sb.sub.ID(), nil
}

// parseOptions decodes the kind's optional second parameter.
func parseOptions(k kind, p rpc.Params) (*subscriber, error) {
	sb := new(subscriber)
	switch k {
	case kindNewHeads, kindFlashblocks:
		if err := p.Max(1); err != nil {
			return nil, err
		}
	case kindPendingTxs:
		if err := p.Max(2); err != nil {
			return nil, err
		}
		if _, err := p.Optional(1, &sb.full); err != nil {
			return nil, err
		}
	case kindLogs, kindPendingLogs:
		if err := p.Max(2); err != nil {
			return nil, err
		}
		f := new(ethjson.LogFilter)
		if _, err := p.Optional(1, f); err != nil {
			return nil, err
		}
		if k == kindLogs && (isPending(f.FromBlock) || isPending(f.ToBlock)) {
			return nil, &rpc.InvalidParamsError{Msg: "pending logs are not supported"}
		}
		sb.filter = f
	case kindFlashblockTxs:
		if err := p.Max(2); err != nil {
			return nil, err
		}
		// Base's forms: nothing or false (hashes), true (full objects), or a
		// log filter (full objects of transactions with a matching log).
		if p.Present(1) {
			if len(p[1]) > 0 && p[1][0] == '{' {
				f := new(ethjson.LogFilter)
				if err := p.Required(1, f); err != nil {
					return nil, err
				}
				sb.filter, sb.full = f, true
			} else if err := p.Required(1, &sb.full); err != nil {
				return nil, err
			}
		}
	}
	return sb, nil
}

func isPending(r *ethjson.BlockRef) bool { return r != nil && r.Tag == ethjson.TagPending }

// unsubscribe is eth_unsubscribe(id).
func (s *Service) unsubscribe(ctx context.Context, p rpc.Params) (any, error) {
	if err := p.Max(1); err != nil {
		return nil, err
	}
	var id string
	if err := p.Required(0, &id); err != nil {
		return nil, err
	}
	n, ok := rpc.NotifierFromContext(ctx)
	if !ok || !n.Unsubscribe(id) {
		return nil, rpc.ErrSubscriptionNotFound
	}
	return true, nil
}
