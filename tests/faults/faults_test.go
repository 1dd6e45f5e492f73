package faults_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/tests/faultproxy"
)

// Anchor: a feed that froze silently (TCP half-open: no close, no pong) left
// the pending block frozen for 11 hours to 16 days on six op-reth nodes,
// with nothing logged; measured before on preconf: /health silent for 25 s,
// the connection dropped 17 s in.
func TestFaultSilentFreeze(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	freezes := r.counter("freezes")
	t0 := time.Now()
	r.tcp.Freeze()
	toHealth := r.unhealthy(t0, "flashblocks feed")
	toDrop := r.waitFor("the frozen connection to be dropped", func() bool { return r.counter("freezes") > freezes }).Sub(t0)
	settle(time.Second)
	t1 := time.Now()
	r.tcp.Thaw()
	back := r.caughtUp(t1)
	healthy := r.healthy(t1)
	t.Logf("FIGURE silent_freeze health_503_after=%v dropped_after=%v caught_up_after_thaw=%v healthy_after_thaw=%v", toHealth, toDrop, back, healthy)
	r.done()
}

// Anchor: after "connection reset without closing handshake", pending
// answered null or stale state for minutes.
func TestFaultResetWithoutClose(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	for range 3 {
		t0 := time.Now()
		r.tcp.Reset()
		t.Logf("FIGURE reset caught_up_after=%v", r.caughtUp(t0))
		settle(300 * time.Millisecond)
	}
	r.done()
}

// Anchor: measured before on preconf, a reset followed by 5 s of refused
// reconnects left pending behind the sequencer for 3.2 s after the feed was
// back (backoff 1, 2, 4 s, then a wait for the next index 0).
func TestFaultRefusedReconnects(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	t0 := time.Now()
	r.tcp.Refuse(true)
	r.tcp.Reset()
	toHealth := r.unhealthy(t0, "disconnected")
	settle(2 * time.Second)
	t1 := time.Now()
	r.tcp.Refuse(false)
	back := r.caughtUp(t1)
	healthy := r.healthy(t1)
	t.Logf("FIGURE refused_reconnects health_503_after=%v caught_up_after_accepting=%v healthy_after=%v dial_failures=%d", toHealth, back, healthy, r.counter("dial_failures"))
	r.done()
}

// Anchor: a non-sequential flashblock zeroed the pending state "until we
// receive a base flashblock", minutes to recover; measured before on
// preconf: a gap dropped the block until the next index 0.
func TestFaultDroppedMessages(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	r.ws.SetFault(faultproxy.Every(7, faultproxy.Drop))
	settle(2 * time.Second)
	t1 := time.Now()
	r.ws.SetFault(nil)
	t.Logf("FIGURE dropped caught_up_after=%v gaps=%d resyncs=%d", r.caughtUp(t1), r.counter("gap"), r.counter("resyncs"))
	if r.counter("gap") == 0 {
		t.Error("no gap seen")
	}
	r.done()
}

// Reordered messages (two neighbours swapped): held and applied in order,
// nothing dropped.
func TestFaultReorderedMessages(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	r.ws.SetFault(faultproxy.Swap(5))
	settle(2 * time.Second)
	t1 := time.Now()
	r.ws.SetFault(nil)
	t.Logf("FIGURE reordered caught_up_after=%v gaps=%d", r.caughtUp(t1), r.counter("gap"))
	r.done()
}

// Duplicated messages are ignored.
func TestFaultDuplicatedMessages(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	r.ws.SetFault(faultproxy.Every(3, faultproxy.Duplicate))
	settle(2 * time.Second)
	t1 := time.Now()
	r.ws.SetFault(nil)
	t.Logf("FIGURE duplicated caught_up_after=%v duplicates=%d", r.caughtUp(t1), r.counter("duplicate"))
	if r.counter("duplicate") == 0 {
		t.Error("no duplicate seen")
	}
	r.done()
}

// A feed that stops for 1.5 s and then sends everything at once (a stalled
// proxy or builder flushing): unhealthy while silent, then caught up.
func TestFaultDelayedThenBurst(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	h := faultproxy.NewHolder(1000)
	r.ws.SetFault(h.Fault)
	t0 := time.Now()
	h.Hold()
	toHealth := r.unhealthy(t0, "silent")
	settle(1500*time.Millisecond - time.Since(t0))
	t1 := time.Now()
	h.Release()
	t.Logf("FIGURE delayed_burst health_503_after=%v held=%d caught_up_after_release=%v", toHealth, h.Held(), r.caughtUp(t1))
	r.done()
}

// Anchor: measured before on preconf, each replayed old message dropped the
// pending block.
func TestFaultReplayedEarlierBlocks(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	published := r.counter("published")
	r.ws.SetFault(faultproxy.Replay(3, 15)) // 15 frames back: one and a half blocks
	settle(3 * time.Second)
	t1 := time.Now()
	r.ws.SetFault(nil)
	t.Logf("FIGURE replayed caught_up_after=%v stale=%d", r.caughtUp(t1), r.counter("stale"))
	if r.counter("stale") == 0 || r.counter("published") <= published {
		t.Errorf("stale %d, published %d -> %d", r.counter("stale"), published, r.counter("published"))
	}
	r.done()
}

// Malformed frames (garbage, truncated JSON, a message without its
// payload, a binary frame that is not brotli) are counted and ignored.
func TestFaultMalformedFrames(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	bad := []faultproxy.Frame{
		{Data: []byte("{")}, {Data: []byte(`{"payload_id":"0x01","index":0}`)}, {Data: []byte(`{"index":"x"}`)},
		{Binary: true, Data: []byte{0xff, 0x00, 0x13}}, {Data: bytes.Repeat([]byte("a"), 1000)},
	}
	for i := range 40 {
		r.ws.Send(t.Context(), bad[i%len(bad)])
		settle(50 * time.Millisecond)
	}
	t1 := time.Now()
	t.Logf("FIGURE malformed caught_up_after=%v invalid=%d", r.caughtUp(t1), r.counter("invalid"))
	if r.counter("invalid") < 40 {
		t.Errorf("%d invalid frames counted, 40 sent", r.counter("invalid"))
	}
	r.done()
}

// A frame larger than the follower's limit (8 MiB) ends the connection,
// which is reconnected (with the block replayed).
func TestFaultOversizedFrame(t *testing.T) {
	r := newRig(t)
	r.caughtUp(time.Now())
	t0 := time.Now()
	r.ws.Send(t.Context(), faultproxy.Frame{Data: bytes.Repeat([]byte(" "), flashblock.MaxMessage+1)})
	t.Logf("FIGURE oversized caught_up_after=%v", r.caughtUp(t0))
	r.done()
}
