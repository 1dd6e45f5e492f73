package followload

import (
	"encoding/json"
	"fmt"
	"slices"
	"syscall"
	"time"

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
	"github.com/preconf/preconf/bench/internal/report"
)

// Step is one offered rate's measurement.
type Step struct {
	Mgas    float64       `json:"offered_mgas_s"`
	TxRate  float64       `json:"offered_tx_s"`
	Sent    int           `json:"sent"`
	SendLag time.Duration `json:"send_lag_max_ns"`
	// Included are the sent transactions the sequencer's feed carried
	// (flashblocks of the step and the second after it), IncludedMgas
	// their gas per second of the step.
	Included     int     `json:"included"`
	IncludedMgas float64 `json:"included_mgas_s"`
	// Flashblocks with transactions the sequencer published in the step;
	// Missing of them never appeared on the follower's feed (a follower
	// behind skips to the newest block).
	Flashblocks int `json:"flashblocks"`
	Missing     int `json:"missing"`
	// sequencer feed → follower feed, over the flashblocks of the step
	FeedP50 time.Duration `json:"feed_to_feed_p50_ns"`
	FeedP99 time.Duration `json:"feed_to_feed_p99_ns"`
	FeedMax time.Duration `json:"feed_to_feed_max_ns"`
	// the follower's received → visible Histogram over the step (p99 is a
	// bucket bound)
	Visible     int           `json:"visible_count"`
	VisibleMean time.Duration `json:"visible_mean_ns"`
	VisibleP99  time.Duration `json:"visible_p99_le_ns"`
	// Per flashblock of the step and the second after it: the follower's
	// HTTP requests to the upstream, the JSON-RPC calls in them, the state
	// values fetched and those its cache answered (head polls included).
	RequestsPerFB  float64 `json:"upstream_requests_per_flashblock"`
	CallsPerFB     float64 `json:"upstream_calls_per_flashblock"`
	FetchesPerFB   float64 `json:"state_fetches_per_flashblock"`
	CacheHitsPerFB float64 `json:"state_cache_hits_per_flashblock"`
	// RoundsPerFB are the state round trips of applying a flashblock (the
	// follower's flashblock_fetch_rounds: prefetch and discovery batches,
	// reads during execution), per flashblock with transactions or not.
	RoundsPerFB float64 `json:"state_round_trips_per_flashblock"`
	// The follower's exchanges with the upstream (a call or a batch): mean
	// and p99 (a bucket bound) of their round trips.
	RoundTripMean time.Duration `json:"upstream_round_trip_mean_ns"`
	RoundTripP99  time.Duration `json:"upstream_round_trip_p99_le_ns"`
	// FollowerCores is the follower's CPU over the step, in cores.
	FollowerCores float64 `json:"follower_cores"`
	// SequencerCores is the sequencer's (the follower's upstream's) CPU
	// over the step, in cores; BenchCores this process's (the load
	// generator, the delay proxy, the feed watchers), on the same cores.
	SequencerCores float64 `json:"sequencer_cores"`
	BenchCores     float64 `json:"bench_cores"`
	// Sustained: the sequencer included ≥ 99 % of what was sent, the
	// follower published every flashblock and its received → visible p99
	// is ≤ 50 ms.
	Sustained bool `json:"sustained"`
}

func (r *runner) status() (map[string]uint64, error) {
	raw, err := harness.RPCCall(r.fol.Addr, "follower_status")
	if err != nil {
		return nil, err
	}
	var st struct {
		Counters map[string]uint64 `json:"counters"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("follower_status: %w", err)
	}
	return st.Counters, nil
}

// settle waits (up to 30 s each) until the sequencer's pool is empty and
// the follower's feed has the sequencer's newest flashblock with
// transactions.
func (r *runner) settle() error {
	if err := harness.WaitPoolEmpty(r.seq.Addr, 30*time.Second); err != nil {
		return fmt.Errorf("sequencer: %w", err)
	}
	time.Sleep(500 * time.Millisecond) // the pool's last transactions reach the feed
	var newest string
	var at time.Time
	for k, m := range r.seqFeed.Snapshot() {
		if m.Txs > 0 && m.At.After(at) {
			newest, at = k, m.At
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for newest != "" {
		if _, ok := r.folFeed.Snapshot()[newest]; ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the follower had not published the sequencer's flashblock %s of %s after 30 s", newest, at.Format("15:04:05.000"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// warm offers rate Mgas/s for r.o.Warmup, measuring nothing.
func (r *runner) warm(rate float64, gasPerTx uint64) error {
	o := r.o
	defer func() { r.o = o }()
	r.o.Step = o.Warmup
	_, err := r.step(rate, gasPerTx)
	return err
}

// step offers rate Mgas/s for r.o.Step and measures the follower.
func (r *runner) step(rate float64, gasPerTx uint64) (Step, error) {
	st := Step{Mgas: rate, TxRate: rate * 1e6 / float64(gasPerTx)}
	st.Sent = int(st.TxRate * r.o.Step.Seconds())
	reqs, err := r.s.Sign(r.seq.Addr, st.Sent, r.defiTx(r.next))
	if err != nil {
		return st, err
	}
	r.next += st.Sent
	visible := []string{"preconf_follower_visible_latency_seconds", "preconf_follower_upstream_round_trip_seconds"}
	h0, err := harness.ScrapeHistograms(r.fol.Addr, visible)
	if err != nil {
		return st, err
	}
	c0, err := r.status()
	if err != nil {
		return st, err
	}
	cpu0, _ := r.fol.CPUTime()
	seq0, _ := r.seq.CPUTime()
	self0 := selfCPU()
	start := time.Now().Add(50 * time.Millisecond)
	if st.SendLag, err = r.send(reqs, st.TxRate, start); err != nil {
		return st, err
	}
	end := start.Add(r.o.Step)
	time.Sleep(time.Until(end.Add(time.Second))) // the last flashblocks reach the follower
	cpu1, _ := r.fol.CPUTime()
	seq1, _ := r.seq.CPUTime()
	self1 := selfCPU()
	h1, err := harness.ScrapeHistograms(r.fol.Addr, visible)
	if err != nil {
		return st, err
	}
	c1, err := r.status()
	if err != nil {
		return st, err
	}
	st.Visible, st.VisibleMean, st.VisibleP99 = h1[0].Since(h0[0], 0.99)
	_, st.RoundTripMean, st.RoundTripP99 = h1[1].Since(h0[1], 0.99)
	wall := float64(time.Since(start))
	st.FollowerCores = float64(cpu1-cpu0) / wall
	st.SequencerCores, st.BenchCores = float64(seq1-seq0)/wall, float64(self1-self0)/wall

	seqMsgs, folMsgs := r.seqFeed.Snapshot(), r.folFeed.Snapshot()
	var lats []time.Duration
	counted := 0 // flashblocks while the counters ran
	for k, m := range seqMsgs {
		if m.At.Before(start) || m.At.After(end.Add(time.Second)) {
			continue
		}
		st.Included += m.Txs
		counted++
		if m.Txs == 0 || m.At.After(end) {
			continue // counted for inclusion only: empty, or the follower had less than a second
		}
		st.Flashblocks++
		f, ok := folMsgs[k]
		if !ok {
			st.Missing++
			continue
		}
		lats = append(lats, f.At.Sub(m.At))
	}
	slices.Sort(lats)
	st.FeedP50, st.FeedP99 = load.Percentile(lats, 0.50), load.Percentile(lats, 0.99)
	if len(lats) > 0 {
		st.FeedMax = lats[len(lats)-1]
	}
	st.IncludedMgas = float64(st.Included) * float64(gasPerTx) / 1e6 / r.o.Step.Seconds()
	if fb := float64(counted); fb > 0 {
		per := func(name string) float64 { return float64(c1[name]-c0[name]) / fb }
		st.RequestsPerFB, st.CallsPerFB = per("upstream_requests"), per("upstream_calls")
		st.FetchesPerFB, st.CacheHitsPerFB = per("state_fetches"), per("state_cache_hits")
		st.RoundsPerFB = per("flashblock_fetch_rounds")
	}
	st.Sustained = st.Included*100 >= st.Sent*99 && st.Missing == 0 && st.Flashblocks > 0 && st.Visible > 0 && st.VisibleP99 <= visibleGoal
	return st, nil
}

func (st Step) summary() string {
	return fmt.Sprintf("%.0f Mgas/s offered (%.0f tx/s, %d sent, send lag ≤ %s): included %d (%.1f Mgas/s); %d flashblocks, %d missing on the follower; feed → feed p50 %s p99 %s max %s; received → visible mean %s p99 %s; upstream per flashblock %.1f requests, %.1f calls, %.1f state fetches, %.1f cache hits, %.1f state round trips, round trip mean %s p99 %s; cores: follower %.2f, sequencer %.2f, bench %.2f; sustained %s",
		st.Mgas, st.TxRate, st.Sent, report.FmtDur(st.SendLag), st.Included, st.IncludedMgas, st.Flashblocks, st.Missing,
		report.FmtDur(st.FeedP50), report.FmtDur(st.FeedP99), report.FmtDur(st.FeedMax), report.FmtDur(st.VisibleMean), bound(st.VisibleP99),
		st.RequestsPerFB, st.CallsPerFB, st.FetchesPerFB, st.CacheHitsPerFB, st.RoundsPerFB, report.FmtDur(st.RoundTripMean), bound(st.RoundTripP99), st.FollowerCores, st.SequencerCores, st.BenchCores, report.YesNo(st.Sustained))
}

// selfCPU is this process's CPU time so far (user and system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
