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
)

// Block-boundary freshness (issue 33 item 3): under the rig's steady
// transfers, how long a block's first flashblock (index 0) takes to be
// visible at the follower's pending against its other flashblocks: from
// the frame's arrival (the follower's own received → visible) and from the
// sequencer's publication (sequencer visible → follower visible). Logged
// as FIGURE lines; quoted in docs/bench.md with the command:
//
//	go test -run TestBlockBoundaryFreshness -v ./tests/faults/ -args -freshness 60s
func TestBlockBoundaryFreshness(t *testing.T) {
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
	r.rpc.SetLag(*freshnessLag)
	r.startFollower()
	r.sampleLag()
	r.watchInvariant()
	r.waitFor("the follower's first pending block", func() bool { return r.follower().Pending.Current() != nil })
	r.caughtUp(time.Now())
	mu.Lock()
	on = true
	mu.Unlock()
	settle(*freshnessWindow)
	mu.Lock()
	on = false
	names := [2]string{"index0", "others"}
	for c := range 2 {
		t.Logf("FIGURE freshness %s lag=%v received_to_visible %s sequencer_to_follower %s", names[c], *freshnessLag, quantiles(received[c]), quantiles(behind[c]))
	}
	n0 := len(received[0])
	mu.Unlock()
	if min := int(*freshnessWindow/blockTime) / 2; n0 < min {
		t.Errorf("%d index-0 flashblocks measured in %v, want at least %d", n0, *freshnessWindow, min)
	}
	r.done()
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
