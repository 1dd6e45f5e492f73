package faults_test

import (
	"testing"
	"time"
)

// An upstream that stops answering (a node frozen by a long pause): /health
// names it, and pending catches up once it answers again.
func TestFaultUpstreamStall(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	t0 := time.Now()
	r.rpc.Stall()
	toHealth := r.unhealthy(t0, "has not answered a head poll")
	settle(2500*time.Millisecond - time.Since(t0))
	t1 := time.Now()
	r.rpc.Release()
	back := r.caughtUp(t1)
	t.Logf("FIGURE upstream_stall health_503_after=%v caught_up_after_release=%v healthy_after=%v", toHealth, back, r.healthy(t1))
	r.done()
}

// An upstream that answers every request 400 ms late: pending keeps up as
// far as the upstream lets it, and catches up when the lag ends.
func TestFaultUpstreamLag(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	r.rpc.SetLag(400 * time.Millisecond)
	settle(2 * time.Second)
	t1 := time.Now()
	r.rpc.SetLag(0)
	t.Logf("FIGURE upstream_lag caught_up_after=%v upstream_lags=%d", r.caughtUp(t1), r.counter("upstream_lags"))
	r.done()
}

// Anchor: another node's pending state sat 450 blocks behind a healthy
// latest. Here every second request goes to a node of a pool 3 blocks
// behind: its lower heads are ignored, "latest" stays the follower's head,
// and pending is never older than latest.
func TestFaultUpstreamPoolBehind(t *testing.T) {
	r := newRig(t)
	r.waitFor("block 5", func() bool { return r.seq.Chain.Head().Number.Uint64() >= 5 }) // a view 3 behind has blocks
	r.caughtUp(time.Now())
	r.rpc.SetBehind(3, 2)
	settle(3 * time.Second)
	t1 := time.Now()
	r.rpc.SetBehind(0, 0)
	t.Logf("FIGURE pool_behind caught_up_after=%v lower_heads=%d exec_retries=%d", r.caughtUp(t1), r.counter("upstream_lower_heads"), r.counter("exec_retryable_failures"))
	if r.counter("upstream_lower_heads") == 0 {
		t.Error("no lower head seen")
	}
	r.done()
}

// Anchor: after a restart, index 0 of block N+1 arrived before block N was
// sealed upstream, and the node stayed "waiting for first flashblock" for
// good. Here the upstream serves a view one block behind while the
// follower restarts, so the feed's block is ahead of the upstream's head:
// /health names the lag, the flashblocks wait, and pending catches up as
// soon as the upstream does.
func TestFaultNextBlockBeforeSeal(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	r.rpc.SetBehind(1, 1)
	r.startFollower()
	t0 := time.Now()
	toHealth := r.unhealthy(t0, "behind the feed")
	settle(time.Second)
	t1 := time.Now()
	r.rpc.SetBehind(0, 0)
	back := r.caughtUp(t1)
	t.Logf("FIGURE next_block_before_seal health_503_after_restart=%v caught_up_after=%v healthy_after=%v", toHealth, back, r.healthy(t1))
	r.done()
}
