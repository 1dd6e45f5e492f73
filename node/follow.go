package node

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/feed"
	"github.com/preconf/preconf/follower"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/subscribe"
)

// NewFollow assembles a follow-mode node: no local chain; a follower
// re-executes an upstream node's flashblocks feed and publishes the pending
// state, pending-aware calls are answered locally (the same handlers as a
// sequencing node, over the upstream as sealed chain), everything else is
// forwarded to the upstream. The wallet, the web page, JSON-RPC over
// websocket and a /flashblocks feed (so followers can be chained) are served
// as by New (newHeads and logs subscriptions follow the upstream's heads).
// cfg's chain, import and sequencer fields are ignored.
func NewFollow(cfg Config, fcfg follower.Config) (*Node, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	fcfg.Logger = logger
	n := &Node{cfg: cfg, log: logger, Pending: new(pending.Source)}
	n.Metrics, n.rpcMetrics = newRegistry()
	fcfg.Metrics = n.Metrics
	if cfg.DataDir != "" { // the wallet registry lives there
		unlock, err := lockDataDir(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		n.OnClose(unlock)
	}
	f, err := follower.New(fcfg, n.Pending)
	if err != nil {
		n.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	err = f.CheckUpstream(ctx)
	cancel()
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("cannot follow: %w", err)
	}
	n.Follower = f

	local, err := n.newRPC(nil)
	if err != nil {
		n.Close()
		return nil, err
	}
	methods := api.New(f.Backend(), n.apiConfig())
	methods.Register(local)
	local.Register("follower_status", func(context.Context, rpc.Params) (any, error) { return f.Status(), nil })
	n.Subscriptions = subscribe.NewWithEvents(fcfg.Chain, f, n.Pending, logger)
	n.Subscriptions.Register(local)
	n.Subscriptions.Start()
	n.OnClose(n.Subscriptions.Close)
	if n.RPC, err = n.newRPC(n.rpcMetrics); err != nil {
		n.Close()
		return nil, err
	}
	f.Route(n.RPC, local, methods.DefaultsToPending)

	if err := n.startWallet(fcfg.Chain.ChainID); err != nil {
		n.Close()
		return nil, err
	}

	streams := rpc.StreamOptions{Origins: cfg.CORSOrigins, Logger: logger, Metrics: n.rpcMetrics}
	n.WS = n.RPC.WSHandler(rpc.WSOptions{StreamOptions: streams, MaxMessage: cfg.MaxBody, MaxSubscriptions: cfg.MaxSubs})
	n.OnClose(n.WS.Close)
	n.Handle("/ws", n.WS)
	n.Feed = feed.New(n.Pending, streams)
	n.Feed.Start()
	n.OnClose(n.Feed.Close)
	n.Handle("/flashblocks", n.Feed)
	n.watchSnapshots()

	f.Start()
	n.OnClose(f.Stop)
	return n, nil
}
