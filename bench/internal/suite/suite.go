// Package suite is a test suite's inner loop, driven by viem exactly as a
// suite drives a dev node (loop.mjs): deploy, state-changing calls each
// awaited to its receipt, reads, evm_snapshot → transaction → evm_revert
// cycles, on preconf --automine and on anvil (automine by default), fresh
// nodes from the same genesis, node after node for several rounds.
package suite

import (
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/report"
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/internal/peers"
)

//go:embed loop.mjs
var loopScript []byte

// counterCode is the client tests' Counter (tests/clients/lib.mjs).
const counterCode = "0x6080604052348015600e575f5ffd5b5060c680601a5f395ff3fe6080604052348015600e575f5ffd5b50600436106030575f3560e01c80638381f58a146034578063d09de08a14604d575b5f5ffd5b603b5f5481565b60405190815260200160405180910390f35b60536055565b005b60015f5f8282546064919060a2565b90915550505f5460405190815233907f38ac789ed44572701765277c4d0970f2db1c1a571ed39e84358095ae4eaa54209060200160405180910390a2565b8082018082111560c057634e487b7160e01b5f52601160045260245ffd5b9291505056"

// Options are the loop's own flags.
type Options struct {
	Writes int `json:"writes"`
	Reads  int `json:"reads"`
	Cycles int `json:"cycles"`
	// PreconfArgs are extra flags for preconf.
	PreconfArgs string `json:"preconf_args,omitempty"`
	// Memory also runs preconf-memory: preconf --datadir '' (chain in
	// memory, no write-ahead log: nothing on disk).
	Memory bool `json:"memory"`
	// Poll is the clients' polling interval (viem's pollingInterval).
	Poll time.Duration `json:"poll_ns"`
}

// AddFlags registers the loop's flags.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.Writes, "suite-writes", 200, "state-changing calls, each awaited to its receipt")
	fs.IntVar(&o.Reads, "suite-reads", 200, "reads (eth_call of a view function)")
	fs.IntVar(&o.Cycles, "suite-cycles", 20, "evm_snapshot → transaction → evm_revert cycles")
	fs.StringVar(&o.PreconfArgs, "suite-preconf-args", "", "extra flags for preconf --automine (space separated)")
	fs.BoolVar(&o.Memory, "suite-memory", true, "also run preconf-memory: preconf --automine --datadir '' (nothing on disk)")
	fs.DurationVar(&o.Poll, "suite-poll", 50*time.Millisecond, "viem's pollingInterval on every node (Hardhat's viem integration sets 50ms for a development network)")
}

// Loop is what one run of loop.mjs measured.
type Loop struct {
	DeployMs float64   `json:"deploy_ms"`
	WritesMs []float64 `json:"writes_ms"`
	WriteMs  float64   `json:"write_phase_ms"`
	ReadsMs  []float64 `json:"reads_ms"`
	ReadMs   float64   `json:"read_phase_ms"`
	CyclesMs []float64 `json:"cycles_ms"`
	CycleMs  float64   `json:"cycle_phase_ms"`
	// Requests are the JSON-RPC requests viem sent in each phase (deploy,
	// writes, reads, cycles), by method.
	Requests map[string]map[string]int `json:"requests"`
	// PhaseClientCPUMs is the client process's (Node.js running viem) own
	// CPU time in each phase; PhaseClientThreadCPUMs its main thread's,
	// where the JavaScript runs between the node's answers.
	PhaseClientCPUMs       map[string]float64 `json:"client_cpu_ms"`
	PhaseClientThreadCPUMs map[string]float64 `json:"client_thread_cpu_ms"`
	End                    End                `json:"end"`
	// TotalMs is the loop's wall time (deploy + phases); CPUMs the node's
	// CPU time over it; ClientCPUMs and ClientThreadCPUMs the client's over
	// the same phases. The main thread's is the loop's floor: no node's
	// answers can make the loop shorter than that.
	TotalMs           float64 `json:"total_ms"`
	CPUMs             float64 `json:"node_cpu_ms"`
	ClientCPUMs       float64 `json:"client_total_cpu_ms"`
	ClientThreadCPUMs float64 `json:"client_thread_total_cpu_ms"`
}

// End is the loop's end state; it must be the same on every node.
type End struct {
	Number   string `json:"number"`
	Nonce    int    `json:"nonce"`
	Block    string `json:"block"`
	Contract string `json:"contract"`
}

// Report is every round's loop on every node.
type Report struct {
	Started time.Time          `json:"started"`
	Host    map[string]any     `json:"host"`
	Options Options            `json:"options"`
	Nodes   []string           `json:"nodes"`
	Runs    map[string][]Loop  `json:"runs"`
	Version map[string]string  `json:"versions"`
	Ratio   map[string]float64 `json:"time_ratio"` // node ÷ anvil, median of rounds' ratios
	// Floor is, per node, the client's main-thread CPU over its loop ÷
	// anvil's loop time in the same round (median of rounds): the loop
	// time ratio that node would reach if it answered in no time.
	Floor map[string]float64 `json:"client_floor_ratio"`
}

// Run runs the loop h.Rounds times on preconf and anvil (preconf first in
// odd rounds, anvil first in even ones).
func Run(h harness.Options, o Options, log io.Writer) (*Report, error) {
	if o.Writes <= 0 || o.Reads < 0 || o.Cycles < 0 || o.Poll <= 0 {
		return nil, errors.New("-suite-writes and -suite-poll must be positive, -suite-reads and -suite-cycles not negative")
	}
	repo, err := harness.RepoRoot()
	if err != nil {
		return nil, err
	}
	node, err := peers.Node(repo)
	if err != nil {
		return nil, err
	}
	viem := filepath.Join(repo, "tests/clients/node_modules/viem/_esm")
	if _, err := os.Stat(filepath.Join(viem, "index.js")); err != nil {
		return nil, fmt.Errorf("viem is not installed under tests/clients (run scripts/setup-clients): %w", err)
	}
	work, err := os.MkdirTemp("", "preconf-suite-")
	if err != nil {
		return nil, err
	}
	if h.Keep {
		fmt.Fprintf(log, "scratch dir (kept): %s\n", work)
	} else {
		defer os.RemoveAll(work)
	}
	script := filepath.Join(work, "loop.mjs")
	if err := os.WriteFile(script, loopScript, 0o644); err != nil {
		return nil, err
	}
	e := &harness.Env{Repo: repo, Cache: h.Cache, Work: work, Genesis: filepath.Join(work, "genesis.json"), Install: !h.NoInstall, BaseRepo: h.BaseRepo, Log: log}
	if err := harness.WriteGenesis(e.Genesis); err != nil {
		return nil, err
	}
	// With -preconf-base, preconf-base (and preconf-base-memory) is the
	// same loop on preconf built from that checkout: a before/after pair
	// measured in the same rounds.
	builds := []string{"preconf"}
	if h.BaseRepo != "" {
		builds = append(builds, "preconf-base")
	}
	kinds := map[string]harness.Kind{"anvil": harness.Kinds["anvil"]}
	bins := map[string]string{}
	var names []string
	for _, build := range builds {
		kinds[build] = preconfKind(h, o, build, false)
		names = append(names, build)
		if o.Memory {
			kinds[build+"-memory"] = preconfKind(h, o, build, true)
			names = append(names, build+"-memory")
		}
	}
	names = append(names, "anvil")
	for _, name := range append(builds, "anvil") {
		if bins[name], err = kinds[name].Install(e); err != nil {
			return nil, err
		}
		bins[name+"-memory"] = bins[name]
	}
	rep := &Report{Started: time.Now().UTC(), Host: harness.HostInfo(), Options: o, Nodes: names,
		Runs: map[string][]Loop{}, Version: map[string]string{}}
	env := append(os.Environ(), "BENCH_KEY="+chain.DevKeys[0], "BENCH_BYTECODE="+counterCode,
		"BENCH_VIEM="+filepath.Join(viem, "index.js"), "BENCH_VIEM_ACCOUNTS="+filepath.Join(viem, "accounts/index.js"),
		fmt.Sprintf("BENCH_WRITES=%d", o.Writes), fmt.Sprintf("BENCH_READS=%d", o.Reads), fmt.Sprintf("BENCH_CYCLES=%d", o.Cycles),
		fmt.Sprintf("BENCH_POLL_MS=%d", o.Poll.Milliseconds()))
	for round := 0; round < h.Rounds; round++ {
		for _, name := range harness.Rotate(rep.Nodes, round) {
			n, err := harness.StartNode(e, kinds[name], bins[name], round)
			if err != nil {
				return rep, err
			}
			rep.Version[name] = n.Version()
			var prof chan error
			if h.Profile && name != "anvil" {
				// The first seconds of the loop: the deploy and the writes.
				prof = make(chan error, 1)
				go func() {
					prof <- harness.CaptureProfile(filepath.Join(h.Out, fmt.Sprintf("%s-suite-%d.pprof", name, round+1)), 5*time.Second)
				}()
			}
			loop, err := runLoop(node, script, n, env)
			if prof != nil {
				if perr := <-prof; perr != nil {
					fmt.Fprintf(log, "  profile: %v\n", perr)
				}
			}
			n.Stop()
			if err != nil {
				return rep, fmt.Errorf("%s, round %d: %w", name, round+1, err)
			}
			rep.Runs[name] = append(rep.Runs[name], loop)
			fmt.Fprintf(log, "  %-14s loop %6.0f ms (deploy %.0f, writes %.0f, reads %.0f, cycles %.0f; p50 write %.2f, read %.2f, cycle %.2f ms; receipt checks per write %.2f), node CPU %.0f ms, client CPU %.0f ms (main thread %.0f), end %+v\n",
				name, loop.TotalMs, loop.DeployMs, loop.WriteMs, loop.ReadMs, loop.CycleMs, report.Median(loop.WritesMs), report.Median(loop.ReadsMs),
				report.Median(loop.CyclesMs), loop.checksPerWrite(), loop.CPUMs, loop.ClientCPUMs, loop.ClientThreadCPUMs, loop.End)
		}
	}
	return rep, rep.check()
}

// preconfKind is preconf (build: preconf or preconf-base) under automine,
// its chain in the datadir or, with memory, in memory (--datadir ”: no
// database, no write-ahead log).
func preconfKind(h harness.Options, o Options, build string, memory bool) harness.Kind {
	k := harness.Kinds[build]
	extra := strings.Fields(o.PreconfArgs)
	if h.Profile {
		extra = append(extra, "--pprof", "--pprof.addr", fmt.Sprintf("127.0.0.1:%d", harness.PortPprof))
	}
	if memory {
		k.Name = build + "-memory"
	}
	port := k.Port
	k.Args = func(e *harness.Env, dir string) []string {
		if memory {
			dir = ""
		}
		return append([]string{"--datadir=" + dir, "--genesis", e.Genesis, "--automine", "--http.addr", "127.0.0.1",
			"--http.port", strconv.Itoa(port), "--log.level", "warn"}, extra...)
	}
	return k
}

// runLoop runs loop.mjs against n and measures the node's CPU meanwhile.
func runLoop(node, script string, n *harness.Node, env []string) (Loop, error) {
	cmd := exec.Command(node, script)
	cmd.Env = append(slices.Clone(env), "BENCH_URL=http://"+n.Addr)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cpu0, _ := n.CPUTime()
	out, err := cmd.Output()
	cpu1, _ := n.CPUTime()
	if err != nil {
		return Loop{}, fmt.Errorf("%v: %s", err, stderr.String())
	}
	var l Loop
	if err := json.Unmarshal(out, &l); err != nil {
		return Loop{}, fmt.Errorf("loop output %.300s: %w", out, err)
	}
	l.TotalMs = l.DeployMs + l.WriteMs + l.ReadMs + l.CycleMs
	l.CPUMs = float64(cpu1-cpu0) / float64(time.Millisecond)
	for _, v := range l.PhaseClientCPUMs {
		l.ClientCPUMs += v
	}
	for _, v := range l.PhaseClientThreadCPUMs {
		l.ClientThreadCPUMs += v
	}
	return l, nil
}

// check requires the same end state on every node and computes the ratios.
func (r *Report) check() error {
	var first *End
	for _, name := range r.Nodes {
		for i := range r.Runs[name] {
			end := r.Runs[name][i].End
			if first == nil {
				first = &end
			} else if end != *first {
				return fmt.Errorf("end state differs: %s %+v, %s %+v", r.Nodes[0], *first, name, end)
			}
		}
	}
	r.Ratio, r.Floor = map[string]float64{}, map[string]float64{}
	for _, name := range r.Nodes {
		var ratios, floors []float64
		for i := range min(len(r.Runs[name]), len(r.Runs["anvil"])) {
			anvil := r.Runs["anvil"][i].TotalMs
			ratios = append(ratios, r.Runs[name][i].TotalMs/anvil)
			floors = append(floors, r.Runs[name][i].ClientThreadCPUMs/anvil)
		}
		if name != "anvil" {
			r.Ratio[name] = report.Median(ratios)
		}
		r.Floor[name] = report.Median(floors)
	}
	return nil
}
