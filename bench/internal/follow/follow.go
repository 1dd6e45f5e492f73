package follow

// Follow-mode workloads (go run ./bench -follow): a sequencing preconf
// (2 s blocks, 200 ms flashblocks) and `preconf follow` of it, on loopback.
//
//   (a) flashblock → visible on the follower: -follow-flashblocks batches of
//       -follow-txs transfers, one batch per flashblock interval. Both nodes'
//       /flashblocks feeds are watched; for each flashblock carrying at least
//       90% of a batch, the time from the sequencer's message to the
//       follower's message for the same (payload, index) — the follower
//       receives, re-executes, publishes and re-encodes it in between — and
//       the follower's own received → published quantiles (follower_status).
//   (b) pending reads: closed-loop eth_getBalance and eth_getStorageAt at
//       "pending" against the sequencer, then the follower (-duration,
//       -conns): requests/s and the follower/sequencer ratio.

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
	"github.com/preconf/preconf/bench/internal/report"
	"github.com/preconf/preconf/bench/internal/workload"
)

const portFollower = 48551

type Options struct {
	Flashblocks int `json:"flashblocks"`
	Txs         int `json:"txs_per_flashblock"`
	// (b): pairs of windows, one on each node, and a window's length.
	Pairs  int           `json:"pairs"`
	Window time.Duration `json:"window_ns"`
}

// AddFlags registers the experiment's own flags.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.Flashblocks, "follow-flashblocks", 50, "(a) flashblocks measured")
	fs.IntVar(&o.Txs, "follow-txs", 100, "(a) transfers per flashblock")
	fs.IntVar(&o.Pairs, "follow-pairs", 24, "(b) pairs of read windows per workload, one on each node back to back, which goes first alternating")
	fs.DurationVar(&o.Window, "follow-window", time.Second, "(b) length of one read window (after -warmup)")
}

type Report struct {
	Started time.Time      `json:"started"`
	Host    map[string]any `json:"host"`
	Options Options        `json:"options"`
	Version string         `json:"version"`
	// ReadConns read the follower during (a) under reads and in (b).
	ReadConns int `json:"read_conns"`
	// Warmup precedes each (b) window.
	Warmup time.Duration `json:"warmup_ns"`
	// (a) idle, then while the follower serves a closed-loop read load.
	Idle   followLatency `json:"idle"`
	Loaded followLatency `json:"under_reads"`
	// (a) the follower's own received → visible quantiles (follower_status)
	InternalMs map[string]float64 `json:"internal_ms"`
	Counters   map[string]uint64  `json:"counters"`
	// (b) each node's median window (by req/s), each pair's
	// follower/sequencer req/s and CPU per request.
	Sequencer map[string]load.Result `json:"sequencer"`
	Follower  map[string]load.Result `json:"follower"`
	Ratios    map[string][]float64   `json:"ratios"`
	CPURatios map[string][]float64   `json:"cpu_ratios"`
	// (b) the CPU the node not being read used meanwhile (cores, median
	// round): the sequencer keeps building flashblocks and the follower
	// keeps applying them, so each measurement shares the cores with both.
	OtherCores map[string]float64 `json:"other_cores"`
}

// followLatency is one run of -follow-flashblocks batches.
type followLatency struct {
	Measured int `json:"flashblocks_measured"`
	// sequencer feed message → follower feed message (batches ≥ 90 % full)
	FeedP50 time.Duration `json:"feed_to_feed_p50_ns"`
	FeedP99 time.Duration `json:"feed_to_feed_p99_ns"`
	FeedMax time.Duration `json:"feed_to_feed_max_ns"`
	// the follower's received → visible Histogram over the run (every
	// flashblock; p99 is a bucket bound)
	VisibleCount int           `json:"visible_count"`
	VisibleMean  time.Duration `json:"visible_mean_ns"`
	VisibleP99   time.Duration `json:"visible_p99_le_ns"`
	Reads        load.Result   `json:"reads"` // on the follower, meanwhile (none when idle)
}

func Run(o harness.Options, fo Options, log io.Writer) (*Report, error) {
	if fo.Flashblocks <= 0 || fo.Txs <= 0 || fo.Pairs <= 0 || fo.Window <= 0 {
		return nil, fmt.Errorf("-follow-flashblocks, -follow-txs, -follow-pairs and -follow-window must be positive")
	}
	e, bin, seq, stop, err := harness.SequencingNode(o, log, "preconf-follow-")
	if err != nil {
		return nil, err
	}
	defer stop()
	followKind := harness.Kind{Name: "preconf-follow", Port: portFollower, Args: func(e *harness.Env, dir string) []string {
		return []string{"follow", "--upstream", "http://" + seq.Addr, "--flashblocks", "ws://" + seq.Addr + "/flashblocks",
			"--genesis", e.Genesis, "--datadir", dir, "--http.addr", "127.0.0.1", "--http.port", strconv.Itoa(portFollower), "--log.level", "warn"}
	}}
	fol, err := harness.StartNode(e, followKind, bin, 0)
	if err != nil {
		return nil, err
	}
	defer fol.Stop()
	rep := &Report{Started: time.Now().UTC(), Host: harness.HostInfo(), Options: fo, Version: seq.Version(), ReadConns: o.Conns, Warmup: o.Warmup,
		Sequencer: map[string]load.Result{}, Follower: map[string]load.Result{}, Ratios: map[string][]float64{}, CPURatios: map[string][]float64{}, OtherCores: map[string]float64{}}

	seqFeed, folFeed, stopFeeds, err := harness.WatchFeeds(seq.Addr, fol.Addr)
	if err != nil {
		return nil, err
	}
	defer stopFeeds()
	s, err := harness.NewSenders(seq.Addr)
	if err != nil {
		return nil, err
	}
	for _, run := range []struct {
		name  string
		into  *followLatency
		conns int
	}{{"idle", &rep.Idle, 0}, {fmt.Sprintf("while the follower serves %d connections of pending reads", o.Conns), &rep.Loaded, o.Conns}} {
		fmt.Fprintf(log, "(a) %d flashblocks of %d transfers, %s: sequencer feed → follower feed\n", fo.Flashblocks, fo.Txs, run.name)
		if *run.into, err = flashblockRun(seq.Addr, fol.Addr, seqFeed, folFeed, s, fo, run.conns); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "  %d measured: p50 %s p99 %s max %s; follower received → visible mean %s p99 ≤ %s; reads %.0f/s p99 %s\n", run.into.Measured,
			report.FmtDur(run.into.FeedP50), report.FmtDur(run.into.FeedP99), report.FmtDur(run.into.FeedMax), report.FmtDur(run.into.VisibleMean), report.FmtDur(run.into.VisibleP99), run.into.Reads.RPS, report.FmtDur(run.into.Reads.P99))
	}
	raw, err := harness.RPCCall(fol.Addr, "follower_status")
	if err != nil {
		return nil, err
	}
	var st struct {
		LatencyMs map[string]float64 `json:"latencyMs"`
		Counters  map[string]uint64  `json:"counters"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	rep.InternalMs, rep.Counters = st.LatencyMs, st.Counters

	fmt.Fprintf(log, "(b) pending reads, %d pairs of %s windows, %d conns\n", fo.Pairs, fo.Window, o.Conns)
	if err := followReads(rep, o, fo, seq, fol, log); err != nil {
		return nil, err
	}
	return rep, nil
}

// flashblockRun sends fo.Flashblocks batches of fo.Txs pre-signed transfers,
// one per flashblock interval, while readConns connections (if any) read
// the follower's pending state, and measures how the follower kept up.
func flashblockRun(seqAddr, folAddr string, seqFeed, folFeed *harness.FeedWatcher, s *harness.Senders, fo Options, readConns int) (followLatency, error) {
	var fl followLatency
	reqs := make([][]byte, fo.Flashblocks*fo.Txs)
	for i := range reqs {
		var err error
		if _, reqs[i], err = s.Next(i%s.Len(), seqAddr); err != nil {
			return fl, err
		}
	}
	c, err := load.Dial(seqAddr)
	if err != nil {
		return fl, err
	}
	defer c.Close()
	visible := []string{"preconf_follower_visible_latency_seconds"}
	before, err := harness.ScrapeHistograms(folAddr, visible)
	if err != nil {
		return fl, err
	}
	start := time.Now()
	readDone := make(chan error, 1)
	if readConns > 0 {
		go func() {
			var err error
			fl.Reads, err = load.Run(load.Config{Addr: folAddr, Conns: readConns, Duration: time.Duration(fo.Flashblocks+5) * 200 * time.Millisecond,
				MaxRequests: 50_000_000, Bodies: workload.Balance("pending").Bodies, Check: load.CheckCalls(1)})
			if err == nil && fl.Reads.Errors > 0 {
				err = fmt.Errorf("follower reads: %d errors, first: %s", fl.Reads.Errors, fl.Reads.FirstError)
			}
			readDone <- err
		}()
	} else {
		readDone <- nil
	}
	tick := time.NewTicker(200 * time.Millisecond)
	for i := range fo.Flashblocks {
		<-tick.C
		for _, req := range reqs[i*fo.Txs : (i+1)*fo.Txs] {
			if err := harness.SendOK(c, req); err != nil {
				tick.Stop()
				<-readDone
				return fl, err
			}
		}
	}
	tick.Stop()
	time.Sleep(time.Second)
	if err := <-readDone; err != nil {
		return fl, err
	}
	after, err := harness.ScrapeHistograms(folAddr, visible)
	if err != nil {
		return fl, err
	}
	fl.VisibleCount, fl.VisibleMean, fl.VisibleP99 = after[0].Since(before[0], 0.99)
	var lats []time.Duration
	fols := folFeed.Snapshot()
	for k, m := range seqFeed.Snapshot() {
		if m.At.Before(start) || m.Txs*10 < fo.Txs*9 {
			continue
		}
		if f, ok := fols[k]; ok {
			lats = append(lats, f.At.Sub(m.At))
		}
	}
	slices.Sort(lats)
	fl.Measured = len(lats)
	fl.FeedP50, fl.FeedP99 = load.Percentile(lats, 0.50), load.Percentile(lats, 0.99)
	if len(lats) > 0 {
		fl.FeedMax = lats[len(lats)-1]
	}
	return fl, nil
}

// followReads measures pending reads on both nodes in pairs of short
// windows, one on each node back to back, alternating which goes first.
// Short paired windows because this machine's cost of loopback I/O drifts
// in spells of seconds (docs/bench.md, "Run it", step 3): two 3 s windows
// apart by 3.5 s fell in different spells often enough to move a 3-round
// median by 2 %, while the two nodes run the same read path.
func followReads(rep *Report, o harness.Options, fo Options, seq, fol *harness.Node, log io.Writer) error {
	nodes := []struct {
		name        string
		node, other *harness.Node
		into        map[string]load.Result
	}{{"sequencer", seq, fol, rep.Sequencer}, {"follower", fol, seq, rep.Follower}}
	for _, w := range []workload.Workload{workload.Balance("pending"), workload.Storage("pending")} {
		all := map[string][]load.Result{}
		others := map[string][]float64{}
		for pair := range fo.Pairs {
			got := map[string]load.Result{}
			for k := range nodes {
				n := nodes[(k+pair)%len(nodes)]
				res, other, err := readWindow(o, fo, n.node, n.other, w)
				if err != nil {
					return fmt.Errorf("%s %s: %w", n.name, w.Name, err)
				}
				all[n.name] = append(all[n.name], res)
				others[n.name] = append(others[n.name], other)
				got[n.name] = res
				fmt.Fprintf(log, "  %-9s %-26s %9.0f req/s  p50 %6s  p99 %6s  CPU %5.1f µs/req  other node %.2f cores\n", n.name, w.Name, res.RPS,
					report.FmtDur(res.P50), report.FmtDur(res.P99), report.Us(res.ServerCPU), other)
			}
			f, s := got["follower"], got["sequencer"]
			rep.Ratios[w.Name] = append(rep.Ratios[w.Name], f.RPS/s.RPS)
			if f.ServerCPU > 0 && s.ServerCPU > 0 {
				rep.CPURatios[w.Name] = append(rep.CPURatios[w.Name], float64(f.ServerCPU)/float64(s.ServerCPU))
			}
		}
		for _, n := range nodes {
			rs := all[n.name]
			slices.SortFunc(rs, func(a, b load.Result) int { return cmp.Compare(a.RPS, b.RPS) })
			n.into[w.Name] = rs[len(rs)/2]
			rep.OtherCores[n.name+" "+w.Name] = report.Median(others[n.name])
		}
	}
	return nil
}

// readWindow warms up, then measures w on node for one window: the result
// with node's CPU per request, and the cores the other node used meanwhile.
func readWindow(o harness.Options, fo Options, node, other *harness.Node, w workload.Workload) (load.Result, float64, error) {
	cfg := load.Config{Addr: node.Addr, Conns: o.Conns, Duration: o.Warmup, MaxRequests: o.MaxRequests, Bodies: w.Bodies, Check: load.CheckCalls(1)}
	if o.Warmup > 0 {
		if _, err := load.Run(cfg); err != nil {
			return load.Result{}, 0, err
		}
	}
	cfg.Duration = fo.Window
	oth0, okO0 := other.CPUTime()
	res, err := node.Load(cfg)
	if err != nil {
		return res, 0, err
	}
	oth1, okO1 := other.CPUTime()
	if res.Errors > 0 {
		return res, 0, fmt.Errorf("%d errors, first: %s", res.Errors, res.FirstError)
	}
	var cores float64
	if okO0 && okO1 && res.Elapsed > 0 {
		cores = float64(oth1-oth0) / float64(res.Elapsed)
	}
	return res, cores, nil
}

func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## preconf follow mode (%s, %s)\n\n", r.Version, r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "(a) %d flashblocks of %d transfers, 200 ms apart, idle and while the follower serves %d connections of `eth_getBalance` pending reads; feed-to-feed over flashblocks with ≥ 90 %% of a batch seen on both feeds, the follower's received → visible from its Histogram (every flashblock of the run; p99 is a bucket bound):\n\n", r.Options.Flashblocks, r.Options.Txs, r.ReadConns)
	b.WriteString("| run | measured | sequencer feed → follower feed p50 / p99 / max | follower received → visible mean / p99 | follower reads/s | read p99 |\n|---|---:|---:|---:|---:|---:|\n")
	for _, run := range []struct {
		name string
		l    followLatency
	}{{"idle", r.Idle}, {"serving reads", r.Loaded}} {
		fmt.Fprintf(&b, "| %s | %d | %s / %s / %s | %s / ≤ %s | %.0f | %s |\n", run.name, run.l.Measured, report.FmtDur(run.l.FeedP50), report.FmtDur(run.l.FeedP99), report.FmtDur(run.l.FeedMax),
			report.FmtDur(run.l.VisibleMean), report.FmtDur(run.l.VisibleP99), run.l.Reads.RPS, report.FmtDur(run.l.Reads.P99))
	}
	fmt.Fprintf(&b, "\nfollower_status at the end (last samples): received → visible p50 %.1f ms, p99 %.1f ms, max %.1f ms.\n\n", r.InternalMs["p50"], r.InternalMs["p99"], r.InternalMs["max"])
	fmt.Fprintf(&b, "(b) pending reads, closed loop, %d pairs of %s windows (after %s of warm-up each), one on each node back to back, which goes first alternating; each node's median window, and the median of the pairs' follower/sequencer ratios (req/s, and node CPU per request):\n\n", r.Options.Pairs, r.Options.Window, r.Warmup)
	b.WriteString("| workload | sequencer req/s | p99 | CPU µs/req | follower req/s | p99 | CPU µs/req | follower/sequencer req/s (median; 95 % CI) | follower/sequencer CPU/req (median; 95 % CI) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var verdicts []string
	for _, name := range []string{"eth_getBalance/pending", "eth_getStorageAt/pending"} {
		s, f := r.Sequencer[name], r.Follower[name]
		q, c := r.Ratios[name], r.CPURatios[name]
		fmt.Fprintf(&b, "| %s | %.0f | %s | %.1f | %.0f | %s | %.1f | **%.3f×** (%s) | %.3f× (%s) |\n", name, s.RPS, report.FmtDur(s.P99), report.Us(s.ServerCPU), f.RPS, report.FmtDur(f.P99), report.Us(f.ServerCPU),
			report.Median(q), report.CIText(q), report.Median(c), report.CIText(c))
		verdicts = append(verdicts, fmt.Sprintf("on `%s` the follower is %s", name, report.RatioVerdict(q, "faster", "slower")))
	}
	fmt.Fprintf(&b, "\nThe intervals are distribution-free (order statistics of the pairs' ratios): %s.\n", strings.Join(verdicts, "; "))
	lo, hi := span(r.OtherCores)
	fmt.Fprintf(&b, "\nThe node not being read used %.2f–%.2f of a core meanwhile (medians per node and workload).\n", lo, hi)
	return b.String()
}

// span is the smallest and largest of m's values (0, 0 for none).
func span(m map[string]float64) (lo, hi float64) {
	vs := slices.Collect(maps.Values(m))
	if len(vs) == 0 {
		return 0, 0
	}
	return slices.Min(vs), slices.Max(vs)
}
