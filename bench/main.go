// Command bench compares preconf's JSON-RPC read throughput and latency with
// anvil's and geth's in one run, on the same machine, from the same genesis:
//
//	go run ./bench                      # 3 rounds × 7 workloads × 3 nodes
//	go run ./bench -duration 5s -rounds 5 -conns 64
//
// It installs missing peers (anvil from npm, geth with go install) into a
// cache (-install op-geth builds op-geth's geth there for the op-geth
// differential test), builds preconf from this checkout, starts each node in turn on
// loopback (ports 48545-48560), drives each workload with a closed-loop Go
// load generator (keep-alive HTTP/1.1, N connections, fixed duration, bounded
// request count), alternates the node order across rounds, and reports the
// per-workload medians and the ratios preconf/peer as a Markdown table (on
// stdout and in a file) and as JSON. It exits non-zero on errors (a peer
// missing, a node failing, wrong or failed answers), never on slowness.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/preconf/preconf/internal/tools"
)

// options are the command line.
type options struct {
	Duration    time.Duration `json:"duration_ns"`
	Warmup      time.Duration `json:"warmup_ns"`
	Rounds      int           `json:"rounds"`
	Conns       int           `json:"conns"`
	MaxRequests int64         `json:"max_requests"`
	Nodes       []string      `json:"nodes"`
	Workloads   []string      `json:"workloads,omitempty"`
	Cache       string        `json:"-"`
	Out         string        `json:"-"`
	NoInstall   bool          `json:"-"`
	Profile     bool          `json:"-"`
	Sequencer   bool          `json:"preconf_sequencer"`
	// Pin runs the load generator and the nodes on separate CPUs (pin.go).
	Pin     bool     `json:"pin,omitempty"`
	Keep    bool     `json:"-"`
	Install []string `json:"-"`
	// BaseRepo is the checkout preconf-base is built from.
	BaseRepo string `json:"preconf_base,omitempty"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.Duration, "duration", 3*time.Second, "measuring time per workload, node and round")
	fs.DurationVar(&o.Warmup, "warmup", 500*time.Millisecond, "unmeasured load before each measurement")
	fs.IntVar(&o.Rounds, "rounds", 3, "rounds; the node order rotates every round (A B C, B C A, …)")
	fs.IntVar(&o.Conns, "conns", 32, "concurrent keep-alive connections")
	fs.Int64Var(&o.MaxRequests, "max-requests", 2_000_000, "request budget per measurement (bounds memory and time)")
	nodes := fs.String("nodes", "preconf,anvil,geth", "nodes to compare (comma separated; preconf is the reference)")
	wls := fs.String("workloads", "", "only workloads whose name contains one of these (comma separated; default all)")
	fs.StringVar(&o.Cache, "cache", tools.DefaultCache(), "where installed peers are kept")
	fs.StringVar(&o.Out, "out", ".bench/results", "directory for the JSON and Markdown results")
	fs.BoolVar(&o.NoInstall, "no-install", false, "do not install missing peers (report them missing)")
	fs.BoolVar(&o.Profile, "profile", false, "collect a CPU profile of preconf during each workload of the last round (into -out)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the scratch dir (node logs and data) after the run")
	fs.StringVar(&o.BaseRepo, "preconf-base", "", "also run preconf built from this checkout (e.g. a `git worktree` of main) as node preconf-base, so preconf/preconf-base is a before/after ratio from one run")
	fs.BoolVar(&o.Sequencer, "preconf-sequencer", false, "run preconf with its sequencer (2 s blocks, 200 ms flashblocks) instead of --no-sequencer, so pending reads are served from live pending snapshots")
	fs.BoolVar(&o.Pin, "pin", false, "run the load generator on the first quarter of the CPUs (at least one) and the nodes on the rest (taskset), so that they do not share cores")
	addLatencyFlags(fs)   // -preconf-latency and its options (preconf_latency.go)
	addFollowFlags(fs)    // -follow and its options (follow.go)
	addWriteloadFlags(fs) // -writeload and its options (writeload.go)
	addBigstateFlags(fs)  // -bigstate and its options (bigstate.go)
	addDocsFlags(fs)      // -all, -write-docs (docs.go)
	addShapeFlags(fs)     // -shape (shape.go)
	list := fs.Bool("list", false, "list the workloads and exit")
	install := fs.String("install", "", "only install these peers (comma separated: anvil, geth, op-geth) and print their paths, one a line")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *list {
		for _, w := range workloads() {
			fmt.Fprintln(stderr, w.Name)
		}
		return o, errList
	}
	if *install != "" {
		for _, n := range strings.Split(*install, ",") {
			if n = strings.TrimSpace(n); n != "op-geth" && (n == "preconf" || n == "preconf-base" || nodeKinds[n].install == nil) {
				return o, fmt.Errorf("-install: unknown peer %q (anvil, geth, op-geth)", n)
			}
			o.Install = append(o.Install, n)
		}
		return o, nil
	}
	for _, n := range strings.Split(*nodes, ",") {
		n = strings.TrimSpace(n)
		if _, ok := nodeKinds[n]; !ok {
			return o, fmt.Errorf("unknown node %q (preconf, preconf-base, anvil, geth)", n)
		}
		if !slices.Contains(o.Nodes, n) {
			o.Nodes = append(o.Nodes, n)
		}
	}
	if len(o.Nodes) == 0 || o.Nodes[0] != "preconf" {
		return o, errors.New("-nodes must start with preconf (the ratios are preconf/peer)")
	}
	if o.BaseRepo != "" {
		if abs, err := filepath.Abs(o.BaseRepo); err == nil {
			o.BaseRepo = abs
		}
		if !slices.Contains(o.Nodes, "preconf-base") {
			o.Nodes = slices.Insert(o.Nodes, 1, "preconf-base")
		}
	} else if slices.Contains(o.Nodes, "preconf-base") {
		return o, errors.New("node preconf-base needs -preconf-base DIR")
	}
	if *wls != "" {
		o.Workloads = strings.Split(*wls, ",")
	}
	if o.Duration <= 0 || o.Rounds <= 0 || o.Conns <= 0 || o.Warmup < 0 {
		return o, errors.New("-duration, -rounds and -conns must be positive")
	}
	return o, nil
}

var errList = errors.New("list")

// run is the whole benchmark; the result is the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, errList) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	if len(o.Install) > 0 {
		return installOnly(o, stdout, stderr)
	}
	if shapeOpts.Server != "" {
		return shapeServe(shapeOpts.Server, shapeOpts.Work)
	}
	if shapeOpts.Enabled {
		return runShape(o, stdout, stderr)
	}
	if allParts {
		return runAll(o, args, stdout, stderr)
	}
	start := time.Now()
	docs := func(sections ...docSection) int {
		if !writeDocs {
			return 0
		}
		if err := updateDocs(sections, args, start, time.Since(start)); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		return 0
	}
	if latencyOpts.Enabled {
		return runLatency(o, stdout, stderr)
	}
	if followOpts.Enabled {
		return runFollowBench(o, stdout, stderr, docs)
	}
	if writeloadOpts.Enabled {
		return runWriteload(o, stdout, stderr, docs)
	}
	if bigstateOpts.Enabled {
		return runBigstate(o, stdout, stderr, docs)
	}
	rep, err := benchmark(o, stderr)
	if rep != nil {
		md := rep.markdown()
		fmt.Fprint(stdout, md)
		if werr := rep.write(o.Out, md); werr != nil {
			fmt.Fprintln(stderr, "bench:", werr)
			return 1
		}
		fmt.Fprintf(stderr, "results: %s/latest.json, %s/latest.md\n", o.Out, o.Out)
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	if len(rep.Errors) > 0 {
		fmt.Fprintf(stderr, "bench: %d error(s):\n  %s\n", len(rep.Errors), strings.Join(rep.Errors, "\n  "))
		return 1
	}
	return docs(docSection{"docs/bench.md", "main", rep.markdown()}, docSection{"README.md", "readme", rep.readmeRatios()})
}

// installOnly installs the peers of -install and prints their paths:
//
//	PRECONF_OPGETH=$(go run ./bench -install op-geth) go test -run OpGeth ./api/
func installOnly(o options, stdout, stderr io.Writer) int {
	repo, err := repoRoot()
	if err == nil {
		err = os.MkdirAll(o.Cache, 0o755)
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	e := &env{repo: repo, cache: o.Cache, install: !o.NoInstall, log: stderr}
	for _, name := range o.Install {
		var bin string
		if name == "op-geth" {
			bin, err = withHint(tools.OpGeth(e.repo, e.cache, e.install, e.log))
		} else {
			bin, err = nodeKinds[name].install(e)
		}
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		fmt.Fprintln(stdout, bin)
	}
	return 0
}

// benchmark installs, starts and measures; it returns a report even when
// some nodes failed (their errors are in it).
func benchmark(o options, log io.Writer) (*report, error) {
	start := time.Now()
	repo, err := repoRoot()
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
	e := &env{repo: repo, cache: o.Cache, work: work, genesis: filepath.Join(work, "genesis.json"),
		install: !o.NoInstall, pprof: o.Profile, sequencer: o.Sequencer, baseRepo: o.BaseRepo, log: log}
	headMoves = o.Sequencer
	if err := writeGenesis(e.genesis); err != nil {
		return nil, err
	}
	wls := selectWorkloads(o.Workloads)
	if len(wls) == 0 {
		return nil, errors.New("no workload matches -workloads")
	}
	rep := newReport(o, wls)

	// Install (or build) every node first; a peer that cannot be installed is
	// reported missing and counts as an error.
	bins := map[string]string{}
	var nodes []string
	for _, name := range o.Nodes {
		bin, err := nodeKinds[name].install(e)
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

	restore, err := pinIf(o.Pin, e, &rep.Layout)
	if err != nil {
		return rep, err
	}
	defer restore()
	for round := 0; round < o.Rounds; round++ {
		order := rotate(nodes, round)
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
func measureRound(e *env, o options, rep *report, order []string, bins map[string]string, round int, wls []workload) {
	running := map[string]*runningNode{}
	defer func() {
		for _, n := range running {
			n.stop()
		}
	}()
	for _, name := range order {
		n, err := startNode(e, nodeKinds[name], bins[name], round)
		if err != nil {
			rep.fail(name, round, err)
			fmt.Fprintf(e.log, "  %s: %v\n", name, err)
			continue
		}
		running[name] = n
		rep.version(name, n.version())
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
				fmt.Fprintf(e.log, "  %s: %v\n", name, err)
				failed[name] = true
			}
		}
	}
}

// measureWorkload runs one workload on a running node and records it.
func measureWorkload(e *env, o options, rep *report, n *runningNode, round int, w workload, profile bool) error {
	kind := n.kind
	if err := w.probe(n.addr); err != nil {
		rep.fail(kind.Name, round, fmt.Errorf("%s: %w", w.Name, err))
		rep.add(round, kind.Name, w.Name, loadResult{}, false)
		return nil
	}
	cfg := loadConfig{Addr: n.addr, Conns: o.Conns, Duration: o.Warmup, MaxRequests: o.MaxRequests, Bodies: w.Bodies, Check: checkCalls(w.Calls)}
	if o.Warmup > 0 {
		if _, err := runLoad(cfg); err != nil {
			return err
		}
	}
	var prof chan error
	if profile {
		prof = make(chan error, 1)
		go func(name string) {
			prof <- captureProfile(filepath.Join(o.Out, "preconf-"+fileName(name)+".pprof"), o.Duration)
		}(w.Name)
	}
	cfg.Duration = o.Duration
	var rt0 map[string]float64
	if kind.Name == "preconf" || kind.Name == "preconf-base" {
		rt0 = scrapeMetrics(n.addr) // runtime.go; nil if the node has no /metrics
	}
	res, err := n.load(cfg)
	if rt0 != nil && err == nil {
		res.Runtime = runtimeDelta(rt0, scrapeMetrics(n.addr), res.Requests)
	}
	if prof != nil {
		if perr := <-prof; perr != nil {
			fmt.Fprintf(e.log, "  profile %s: %v\n", w.Name, perr)
		}
	}
	if err != nil {
		return err
	}
	if res.Errors > 0 {
		rep.fail(kind.Name, round, fmt.Errorf("%s: %d failed requests, first: %s", w.Name, res.Errors, res.FirstError))
	}
	rep.add(round, kind.Name, w.Name, res, true)
	fmt.Fprintf(e.log, "  %-8s %-28s %9.0f req/s  p50 %6s  p99 %6s (in socket %6s)  max %7s  cpu/req %5.1fµs (generator %5.1fµs)  errors %d%s\n", kind.Name, w.Name, res.RPS,
		fmtDur(res.P50), fmtDur(res.P99), fmtDur(res.SockP99), fmtDur(res.Max), us(res.ServerCPU), us(res.ClientCPU), res.Errors, res.Runtime)
	return nil
}

// probe sends the workload's first body once with net/http and checks the
// answer fully, so that a node that lacks a method or holds other state
// fails loudly instead of being measured.
func (w workload) probe(addr string) error {
	raw, err := post(addr, w.Bodies[0])
	if err != nil {
		return err
	}
	return w.verify(raw)
}

// captureProfile fetches a CPU profile from preconf's pprof listener.
func captureProfile(path string, d time.Duration) error {
	secs := max(1, int(d.Seconds()))
	c := &http.Client{Timeout: d + 30*time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", portPprof, secs))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof: HTTP %d", resp.StatusCode)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

func selectWorkloads(filter []string) []workload {
	all := workloads()
	if len(filter) == 0 {
		return all
	}
	var out []workload
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

// rotate is the node order of a round: A B C, B C A, C A B, …
func rotate(nodes []string, round int) []string {
	if len(nodes) == 0 {
		return nil
	}
	k := round % len(nodes)
	return append(slices.Clone(nodes[k:]), nodes[:k]...)
}

// repoRoot finds the preconf module root from the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		raw, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(raw), "module github.com/preconf/preconf\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from inside the preconf repository (go run ./bench)")
		}
		dir = parent
	}
}

func hostInfo() map[string]any {
	return map[string]any{"goos": runtime.GOOS, "goarch": runtime.GOARCH, "cpus": runtime.NumCPU(), "go": runtime.Version()}
}
