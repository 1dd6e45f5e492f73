package node

import (
	"context"
	"fmt"
	"time"

	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/follower"
	"github.com/preconf/preconf/rpc"
)

// buildFollower assembles a follow-mode node (New with Config.Follow): no
// local chain; a follower re-executes an upstream node's flashblocks feed
// and publishes the pending state, pending-aware calls are answered locally
// (the same handlers as a sequencing node, over the upstream as sealed
// chain), everything else is forwarded to the upstream. The wallet, the web
// page, JSON-RPC over websocket and a /flashblocks feed are served as on a
// local chain (newHeads and logs subscriptions follow the upstream's heads).
func (n *Node) buildFollower() error {
	fcfg := *n.cfg.Follow
	fcfg.Logger, fcfg.Metrics = n.log, n.Metrics
	f, err := follower.New(fcfg, n.Pending)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	err = f.CheckUpstream(ctx)
	cancel()
	if err != nil {
		return fmt.Errorf("cannot follow: %w", err)
	}
	n.Follower = f

	local, err := n.newRPC(nil)
	if err != nil {
		return err
	}
	methods, err := api.New(f.Backend(), n.apiConfig())
	if err != nil {
		return err
	}
	methods.Register(local)
	local.Register("follower_status", func(context.Context, rpc.Params) (any, error) { return f.Status(), nil })
	n.startSubscriptions(fcfg.Chain, f, local)
	if n.RPC, err = n.newRPC(n.rpcMetrics); err != nil {
		return err
	}
	f.Route(n.RPC, local, methods.DefaultsToPending)

	if err := n.startWallet(fcfg.Chain.ChainID); err != nil {
		return err
	}
	n.startStreams()
	n.watchSnapshots()

	f.Start()
	n.OnClose(f.Stop)
	return nil
}
