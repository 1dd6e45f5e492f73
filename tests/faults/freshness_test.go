package faults_test

import (
	"flag"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/preconf/preconf/pending"
)

var (
	freshnessWindow = flag.Duration("freshness", 6*time.Second, "how long TestBlockBoundaryFreshness measures")
	freshnessLag    = flag.Duration("freshness.lag", 0, "TestBlockBoundaryFreshness: every upstream answer delayed by this much")
	freshnessImport = flag.Duration("freshness.import", 300*time.Millisecond, "TestBlockBoundaryFreshnessLateImport: how long after its seal the upstream shows a block")
)

// Block-boundary freshness (issue 33 item 3): under the rig's steady
// transfers, how long a block's first flashblock (index 0) takes to be
// visible at the follower's pending against its other flashblocks: from
// the frame's arrival (the follower's own received → visible) and from the
// sequencer's publication (sequencer visible → follower visible); and how
// many blocks read state from the upstream on the way to their first
// snapshot. Logged as FIGURE lines; quoted in docs/bench.md with the
// command:
//
//	go test -run TestBlockBoundaryFreshness -v ./tests/faults/ -args -freshness 60s
//
// Here the upstream is the sequencer itself, which serves a block as soon
// as it is sealed.
func TestBlockBoundaryFreshness(t *testing.T) { blockBoundary(t, *freshnessLag, 0) }

// boundaryCounts are the follower's counts over the measurement: blocks
// opened, of which opened reading state from the upstream, and opened
// ahead of their parent's seal upstream.
type boundaryCounts struct{ opened, cold, ahead uint64 }

// The same with an upstream that imports each block late (-freshness.import
// after the sequencer sealed it, default 300 ms) but answers reads at
// once, as a replica's execution node does: the next block's index 0
// always arrives before its parent is served, so it is opened on the
// pending parent, and the boundary is measured where it matters.
func TestBlockBoundaryFreshnessLateImport(t *testing.T) {
	c := blockBoundary(t, *freshnessLag, *freshnessImport)
	if *freshnessImport > 0 && (c.opened == 0 || c.ahead == 0) {
		t.Errorf("%d blocks opened, %d of them ahead of their parent's import: want some ahead", c.opened, c.ahead)
	}
}

func blockBoundary(t *testing.T, lag, late time.Duration) boundaryCounts {
	type key struct {
		payload [8]byte
		index   uint64
	}
	var (
		mu       sync.Mutex
		on       bool
		seqAt    = map[key]time.Time{}
		received [2][]time.Duration // follower received → visible: index 0, the others
		behind   [2][]time.Duration // sequencer visible → follower visible
	)
	class := func(index uint64) int { return min(int(index), 1) }
	r := newBase(t)
	ch, stop := r.seq.Pending.Subscribe(1 << 12)
	done := make(chan struct{})
	t.Cleanup(func() { stop(); close(done) })
	go func() {
		for {
			select {
			case s := <-ch:
				if s != nil {
					now := time.Now()
					mu.Lock()
					if len(seqAt) > 1<<14 {
						clear(seqAt)
					}
					seqAt[key{s.PayloadID, s.Index}] = now
					mu.Unlock()
				}
			case <-done:
				return
			}
		}
	}()
	r.observe = func(s *pending.Snapshot, d time.Duration) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if !on {
			return
		}
		c := class(s.Index)
		received[c] = append(received[c], d)
		if at, ok := seqAt[key{s.PayloadID, s.Index}]; ok {
			behind[c] = append(behind[c], now.Sub(at))
		}
	}
	r.proxies(r.seq.URL())
	r.rpc.SetLag(lag)
	r.rpc.SetImportDelay(late)
	r.startFollower()
	r.sampleLag()
	r.watchInvariant()
	r.waitFor("the follower's first pending block", func() bool { return r.follower().Pending.Current() != nil })
	r.caughtUp(time.Now())
	before := r.counters("blocks_opened", "blocks_opened_cold", "open_state_fetches", "ahead_opened")
	mu.Lock()
	on = true
	mu.Unlock()
	settle(*freshnessWindow)
	mu.Lock()
	on = false
	after := r.counters("blocks_opened", "blocks_opened_cold", "open_state_fetches", "ahead_opened")
	names := [2]string{"index0", "others"}
	for c := range 2 {
		t.Logf("FIGURE freshness %s lag=%v import=%v received_to_visible %s sequencer_to_follower %s", names[c], lag, late, quantiles(received[c]), quantiles(behind[c]))
	}
	n0 := len(received[0])
	mu.Unlock()
	t.Logf("FIGURE freshness_opens lag=%v import=%v blocks_opened=%d read_upstream_while_opening=%d values_read=%d opened_ahead=%d",
		lag, late, after[0]-before[0], after[1]-before[1], after[2]-before[2], after[3]-before[3])
	if min := int(*freshnessWindow/blockTime) / 2; n0 < min {
		t.Errorf("%d index-0 flashblocks measured in %v, want at least %d", n0, *freshnessWindow, min)
	}
	r.done()
	return boundaryCounts{opened: after[0] - before[0], cold: after[1] - before[1], ahead: after[3] - before[3]}
}

// quantiles formats a sample's count, p50, p99 and max.
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n=0"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[int(p*float64(len(s)-1)+0.5)] }
	return fmt.Sprintf("n=%d p50=%v p99=%v max=%v", len(s), q(0.5).Round(10*time.Microsecond), q(0.99).Round(10*time.Microsecond), s[len(s)-1].Round(10*time.Microsecond))
}
