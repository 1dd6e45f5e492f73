package follower

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/pending"
)

// The first-flashblock latencies count index 0 alone; the overall ones
// count every flashblock.
func TestFirstVisibleCountsIndexZeroOnly(t *testing.T) {
	reg := prometheus.NewRegistry()
	f, err := New(Config{Upstream: "http://127.0.0.1:1", Feed: "ws://127.0.0.1:2", Chain: chain.DevGenesis().Config, Metrics: reg}, new(pending.Source))
	if err != nil {
		t.Fatal(err)
	}
	for _, fb := range []struct {
		index uint64
		d     time.Duration
	}{{0, 40 * time.Millisecond}, {1, time.Millisecond}, {2, 2 * time.Millisecond}, {0, 30 * time.Millisecond}, {5, time.Millisecond}} {
		f.noteVisible(fb.index, fb.d)
	}
	st := f.Status()
	if n := st.Counters["first_latency_samples"]; n != 2 {
		t.Errorf("first_latency_samples %d, want 2", n)
	}
	if n := st.Counters["latency_samples"]; n != 5 {
		t.Errorf("latency_samples %d, want 5", n)
	}
	if p50 := st.FirstLatencyMs["p50"]; p50 < 30 {
		t.Errorf("first p50 %.1f ms, want ≥ 30 (only index 0's 30 and 40 ms)", p50)
	}
	counts := map[string]uint64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if h := mf.GetMetric()[0].GetHistogram(); h != nil {
			counts[mf.GetName()] = h.GetSampleCount()
		}
	}
	if counts["preconf_follower_first_visible_latency_seconds"] != 2 || counts["preconf_follower_visible_latency_seconds"] != 5 {
		t.Errorf("histogram counts %v, want first 2, all 5", counts)
	}
}
