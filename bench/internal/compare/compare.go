package compare

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
	"github.com/preconf/preconf/bench/internal/report"
	"github.com/preconf/preconf/bench/internal/workload"
)

// Options are the peer comparison's own flags beside the shared ones.
type Options struct {
	harness.Options
	Workloads []string `json:"workloads,omitempty"`
	Sequencer bool     `json:"preconf_sequencer"`

	workloads string // -workloads as given
}

// AddFlags registers the comparison's own flags.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.workloads, "workloads", "", "only workloads whose name contains one of these (comma separated; default all)")
	fs.BoolVar(&o.Sequencer, "preconf-sequencer", false, "run preconf with its sequencer (2 s blocks, 200 ms flashblocks) instead of --no-sequencer, so pending reads are served from live pending snapshots")
}

// Finish resolves -workloads.
func (o *Options) Finish() {
	o.Workloads = nil
	if o.workloads != "" {
		o.Workloads = strings.Split(o.workloads, ",")
	}
}

// Select is the workloads whose name contains one of filter's (every
// workload when filter is empty), in the order they run; the head is the
// genesis.
// The Uniswap bundle needs its contracts in the genesis, so it is not
// among them.
func Select(filter []string) []workload.Workload { return selectWorkloads(filter, false, nil) }

// Names are the workloads' names, in the order they run.
func Names() []string {
	var out []string
	for _, w := range workloads(false, nil) {
		out = append(out, w.Name)
	}
	return append(out, workload.UniswapName("pending"))
}

// Run installs, starts and measures; it returns a report even when some
// nodes failed (their errors are in it).
func Run(o Options, log io.Writer) (*Results, error) {
	start := time.Now()
	repo, err := harness.RepoRoot()
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(o.Out) {
		o.Out = filepath.Join(repo, o.Out)
	}
	if err := os.MkdirAll(o.Cache, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "preconf-bench-")
	if err != nil {
		return nil, err
	}
	if o.Keep {
		fmt.Fprintf(log, "scratch dir (kept): %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}
	e := &harness.Env{Repo: repo, Cache: o.Cache, Work: work, Genesis: filepath.Join(work, "genesis.json"),
		Install: !o.NoInstall, Pprof: o.Profile, Sequencer: o.Sequencer, BaseRepo: o.BaseRepo, Log: log}
	// The bench genesis with Uniswap V2 deployed (harness/uniswap.go).
	g, uni, err := harness.UniswapGenesis(filepath.Join(repo, harness.UniswapArtifacts))
	if err != nil {
		return nil, fmt.Errorf("uniswap genesis: %w", err)
	}
	if err := harness.WriteGenesisFile(e.Genesis, g); err != nil {
		return nil, err
	}
	wls := selectWorkloads(o.Workloads, o.Sequencer, uni)
	if len(wls) == 0 {
		return nil, errors.New("no workload matches -workloads")
	}
	rep := newReport(o, wls)

	// Install (or build) every node first; a peer that cannot be installed is
	// reported missing and counts as an error.
	bins := map[string]string{}
	var nodes []string
	for _, name := range o.Nodes {
		bin, err := harness.Kinds[name].Install(e)
		if err != nil {
			rep.missing(name, err)
			continue
		}
		bins[name] = bin
		nodes = append(nodes, name)
	}
	if bins["preconf"] == "" {
		return rep, errors.New("preconf could not be built")
	}

	restore, err := harness.PinIf(o.Pin, e, &rep.Layout)
	if err != nil {
		return rep, err
	}
	defer restore()
	for round := 0; round < o.Rounds; round++ {
		order := harness.Rotate(nodes, round)
		fmt.Fprintf(log, "round %d/%d: %s\n", round+1, o.Rounds, strings.Join(order, " "))
		measureRound(e, o, rep, order, bins, round, wls)
	}
	rep.summarise()
	rep.TotalSeconds = time.Since(start).Seconds()
	return rep, nil
}

// measureRound starts every node of the round, measures each workload on
// them one after another (in the round's order), and stops them. The nodes
// are measured back to back per workload rather than one node's workloads
// after another's because this machine's speed for loopback I/O drifts in
// spells of 10–20 s (a node's eth_getBalance CPU per request 7.9 µs in
// some, 9.9 µs in others, the generator's with it; twelve rounds of one
// workload, 09:50 UTC 2026-11-27): a node measured whole, 25–40 s, fell
// in other spells than the next one. Idle nodes wait meanwhile at under
// 1 % of a core.
func measureRound(e *harness.Env, o Options, rep *Results, order []string, bins map[string]string, round int, wls []workload.Workload) {
	running := map[string]*harness.Node{}
	defer func() {
		for _, n := range running {
			n.Stop()
		}
	}()
	for _, name := range order {
		n, err := harness.StartNode(e, harness.Kinds[name], bins[name], round)
		if err != nil {
			rep.fail(name, round, err)
			fmt.Fprintf(e.Log, "  %s: %v\n", name, err)
			continue
		}
		running[name] = n
		rep.version(name, n.Version())
	}
	failed := map[string]bool{}
	for _, w := range wls {
		for _, name := range order {
			n := running[name]
			if n == nil || failed[name] {
				continue
			}
			profile := o.Profile && name == "preconf" && round == o.Rounds-1
			if err := measureWorkload(e, o, rep, n, round, w, profile); err != nil {
				rep.fail(name, round, err)
				fmt.Fprintf(e.Log, "  %s: %v\n", name, err)
				failed[name] = true
			}
		}
	}
}

// measureWorkload runs one workload on a running node and records it.
func measureWorkload(e *harness.Env, o Options, rep *Results, n *harness.Node, round int, w workload.Workload, profile bool) error {
	kind := n.Kind
	if err := w.Probe(n.Addr); err != nil {
		rep.fail(kind.Name, round, fmt.Errorf("%s: %w", w.Name, err))
		rep.add(round, kind.Name, w.Name, load.Result{}, false)
		return nil
	}
	cfg := load.Config{Addr: n.Addr, Conns: w.ConnsOr(o.Conns), Duration: o.Warmup, MaxRequests: o.MaxRequests, Bodies: w.Bodies, Check: load.CheckCalls(w.Calls)}
	if o.Warmup > 0 {
		if _, err := load.Run(cfg); err != nil {
			return err
		}
	}
	var prof chan error
	if profile {
		prof = make(chan error, 1)
		go func(name string) {
			prof <- harness.CaptureProfile(filepath.Join(o.Out, "preconf-"+harness.FileName(name)+".pprof"), o.Duration)
		}(w.Name)
	}
	cfg.Duration = o.Duration
	var rt0 map[string]float64
	if kind.Name == "preconf" || kind.Name == "preconf-base" {
		rt0 = load.ScrapeMetrics(n.Addr) // runtime.go; nil if the node has no /metrics
	}
	res, err := n.Load(cfg)
	if rt0 != nil && err == nil {
		res.Runtime = load.RuntimeDelta(rt0, load.ScrapeMetrics(n.Addr), res.Requests)
	}
	if prof != nil {
		if perr := <-prof; perr != nil {
			fmt.Fprintf(e.Log, "  profile %s: %v\n", w.Name, perr)
		}
	}
	if err != nil {
		return err
	}
	if res.Errors > 0 {
		rep.fail(kind.Name, round, fmt.Errorf("%s: %d failed requests, first: %s", w.Name, res.Errors, res.FirstError))
	}
	rep.add(round, kind.Name, w.Name, res, true)
	fmt.Fprintf(e.Log, "  %-8s %-28s %9.0f req/s  p50 %6s  p99 %6s (in socket %6s)  max %7s  cpu/req %5.1fµs (generator %5.1fµs)  errors %d%s\n", kind.Name, w.Name, res.RPS,
		report.FmtDur(res.P50), report.FmtDur(res.P99), report.FmtDur(res.SockP99), report.FmtDur(res.Max), report.Us(res.ServerCPU), report.Us(res.ClientCPU), res.Errors, res.Runtime)
	return nil
}

func selectWorkloads(filter []string, headMoves bool, uni *harness.Uniswap) []workload.Workload {
	all := workloads(headMoves, uni)
	if len(filter) == 0 {
		return all
	}
	var out []workload.Workload
	for _, w := range all {
		for _, f := range filter {
			if f = strings.TrimSpace(f); f != "" && strings.Contains(w.Name, f) {
				out = append(out, w)
				break
			}
		}
	}
	return out
}

// workloads are run in this order; headMoves when preconf produces blocks
// (-preconf-sequencer), so the head's number is not checked; uni, when
// given, adds the Uniswap bundle.
func workloads(headMoves bool, uni *harness.Uniswap) []workload.Workload {
	wls := append([]workload.Workload{
		workload.Balance("latest"),
		workload.Balance("pending"),
		workload.Storage("latest"),
		workload.Storage("pending"),
		workload.Single("eth_blockNumber", nil, workload.ExpectHead(headMoves)),
		workload.Single("eth_getBlockByNumber", []any{"latest", false}, workload.ExpectBlock(0, headMoves)),
		workload.MixedBatch(),
	}, slices.Concat(workload.Simulations(), workload.EVMCalls("pending"))...) // workload/simulate.go, evm.go
	if uni != nil {
		wls = append(wls, workload.Uniswap(uni, "pending"))
	}
	return wls
}
