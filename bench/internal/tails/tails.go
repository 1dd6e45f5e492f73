// Package tails measures the same nodes' latency tails with two harnesses,
// one right after the other: the bench's closed-loop generator
// (bench/internal/load) and Debian's wrk with a Lua script posting the same
// body, both at -conns connections. Where their p99s disagree, the
// generator's in-socket p99 (the node's part: send → answer in the
// client's socket) says how much of each is the client's own delay.
//
// Back to back, the node that answers faster is sent more requests, and on
// a machine whose CPUs the generator shares it then also slows the
// generator down more: a closed loop's p99 compares two different loads.
// So each workload is also measured paced (-tails-think): every connection
// waits a pause after each answer, in both harnesses (wrk's Lua delay()),
// which offers both nodes about the same rate. A constant pause keeps the
// connections in step, in crowds whose size the harness and the node set
// (docs/bench.md, "Tails by two harnesses"), so by default the pauses are
// also drawn at random (-tails-pacing exp), which offers both nodes the
// same pattern too.
package tails

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
	"github.com/preconf/preconf/bench/internal/workload"
)

// Options are the experiment's own flags.
type Options struct {
	Workloads string `json:"workloads"`
	// Threads is wrk's -t: its event-loop threads (the connections are
	// split among them).
	Threads int `json:"wrk_threads"`
	// Think is the paced windows' pause after each answer (0: closed loop
	// only). Whole milliseconds: wrk's delay() counts in them.
	Think time.Duration `json:"think_ns"`
	// Pacings are how the paced windows draw their pauses, each measured
	// in its own window (load.PaceExp, load.PaceFixed), in both harnesses.
	Pacings string `json:"pacings"`
}

// AddFlags registers the experiment's flags.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Workloads, "tails-workloads", "eth_getBalance/pending,eth_getStorageAt/latest,eth_simulateV1/2 transfers/pending", "workloads measured by both harnesses (names of the comparison's, comma separated)")
	fs.IntVar(&o.Threads, "tails-wrk-threads", 2, "wrk -t (event-loop threads)")
	fs.DurationVar(&o.Think, "tails-think", 10*time.Millisecond, "mean pause after each answer in the paced windows, whole milliseconds (0: closed loop only)")
	fs.StringVar(&o.Pacings, "tails-pacing", "exp,fixed", "paced windows, comma separated: exp (pauses drawn exponential, mean -tails-think, the first before the first request: clients out of step) or fixed (every pause -tails-think, all connections starting together)")
}

// pacing is one way of sending: back to back (Think 0) or paced.
type pacing struct {
	Think time.Duration
	Pace  load.Pacing // "" back to back
}

// pacings are the windows measured: back to back, then each paced one.
func (o Options) pacings() ([]pacing, error) {
	out := []pacing{{}}
	if o.Think <= 0 {
		return out, nil
	}
	for _, name := range strings.Split(o.Pacings, ",") {
		p, err := load.ParsePacing(strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("-tails-pacing: %w", err)
		}
		out = append(out, pacing{o.Think, p})
	}
	return out, nil
}

// Sample is one window of one harness on one node.
type Sample struct {
	Node, Workload, Harness string
	Round                   int
	Think                   time.Duration // 0: back to back
	Pacing                  load.Pacing   // paced windows only
	RPS                     float64
	// Crowd is the median of how many other requests each one was sent
	// within ±250 µs of (the generator's windows, paced only).
	Crowd             float64
	P50, P99, SockP99 time.Duration
}

// Report is every window.
type Report struct {
	Started time.Time       `json:"started"`
	Host    map[string]any  `json:"host"`
	Options Options         `json:"options"`
	Common  harness.Options `json:"common"`
	Version string          `json:"wrk_version"`
	Samples []Sample        `json:"samples"`
}

// Run measures each workload on preconf and anvil, each node with the
// generator then wrk (wrk then the generator in odd rounds).
func Run(h harness.Options, o Options, wls []workload.Workload, log io.Writer) (*Report, error) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		return nil, errors.New("wrk is not installed (apt-get install wrk)")
	}
	if o.Threads <= 0 || o.Threads > h.Conns {
		return nil, errors.New("-tails-wrk-threads must be between 1 and -conns")
	}
	if o.Think < 0 || o.Think%time.Millisecond != 0 {
		return nil, errors.New("-tails-think must be whole milliseconds (wrk's delay() counts in them)")
	}
	pacings, err := o.pacings()
	if err != nil {
		return nil, err
	}
	repo, err := harness.RepoRoot()
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "preconf-tails-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	e := &harness.Env{Repo: repo, Cache: h.Cache, Work: work, Genesis: filepath.Join(work, "genesis.json"), Install: !h.NoInstall, Log: log}
	if err := harness.WriteGenesis(e.Genesis); err != nil {
		return nil, err
	}
	ver, _ := exec.Command(wrk, "--version").CombinedOutput()
	rep := &Report{Started: time.Now().UTC(), Host: harness.HostInfo(), Options: o, Common: h, Version: strings.TrimSpace(strings.SplitN(strings.SplitN(string(ver), "\n", 2)[0], " [", 2)[0])}
	nodes := []string{"preconf", "anvil"}
	bins := map[string]string{}
	for _, n := range nodes {
		if bins[n], err = harness.Kinds[n].Install(e); err != nil {
			return nil, err
		}
	}
	for round := 0; round < h.Rounds; round++ {
		running := map[string]*harness.Node{}
		for _, n := range nodes {
			node, err := harness.StartNode(e, harness.Kinds[n], bins[n], round)
			if err != nil { // a failed start leaves no node to stop
				for _, r := range running {
					r.Stop()
				}
				return rep, fmt.Errorf("start %s: %w", n, err)
			}
			running[n] = node
		}
		err := measureRound(rep, h, o, pacings, wrk, work, running, harness.Rotate(nodes, round), wls, round, log)
		for _, r := range running {
			r.Stop()
		}
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func measureRound(rep *Report, h harness.Options, o Options, pacings []pacing, wrk, work string, running map[string]*harness.Node, order []string, wls []workload.Workload, round int, log io.Writer) error {
	for _, w := range wls {
		for _, p := range pacings {
			if err := measureWorkload(rep, h, o, wrk, work, running, order, w, p, round, log); err != nil {
				return err
			}
		}
	}
	return nil
}

// measureWorkload measures one workload at one pacing on every node, with
// both harnesses.
func measureWorkload(rep *Report, h harness.Options, o Options, wrk, work string, running map[string]*harness.Node, order []string, w workload.Workload, p pacing, round int, log io.Writer) error {
	script, err := luaScript(work, w.Bodies[0], p)
	if err != nil {
		return err
	}
	for _, n := range order {
		node := running[n]
		if err := w.Probe(node.Addr); err != nil {
			return fmt.Errorf("%s %s: %w", n, w.Name, err)
		}
		gen := func() error {
			cfg := load.Config{Addr: node.Addr, Conns: h.Conns, Duration: h.Warmup, MaxRequests: h.MaxRequests, Bodies: w.Bodies, Check: load.CheckCalls(w.Calls), Think: p.Think, Pacing: p.Pace}
			if h.Warmup > 0 {
				if _, err := load.Run(cfg); err != nil {
					return err
				}
			}
			cfg.Duration = h.Duration
			res, err := load.Run(cfg)
			if err != nil {
				return err
			}
			if res.Errors > 0 {
				return fmt.Errorf("%s %s: %d failed requests: %s", n, w.Name, res.Errors, res.FirstError)
			}
			rep.Samples = append(rep.Samples, Sample{Node: n, Workload: w.Name, Harness: "bench", Round: round, Think: p.Think, Pacing: p.Pace, RPS: res.RPS, P50: res.P50, P99: res.P99, SockP99: res.SockP99, Crowd: res.CrowdP50})
			return nil
		}
		wr := func() error {
			s, err := runWrk(wrk, script, node.Addr, h, o)
			if err != nil {
				return fmt.Errorf("%s %s: %w", n, w.Name, err)
			}
			s.Node, s.Workload, s.Round, s.Think, s.Pacing = n, w.Name, round, p.Think, p.Pace
			rep.Samples = append(rep.Samples, s)
			return nil
		}
		steps := []func() error{gen, wr}
		if round%2 == 1 {
			steps = []func() error{wr, gen}
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		k := len(rep.Samples)
		for _, s := range rep.Samples[k-2:] {
			fmt.Fprintf(log, "  %-8s %-36s %-5s think %-4s %-5s %9.0f req/s  p50 %8s  p99 %8s  in socket %8s\n", s.Node, s.Workload, s.Harness, s.Think, s.Pacing, s.RPS, s.P50, s.P99, s.SockP99)
		}
	}
	return nil
}

// luaScript writes wrk's script: POST the body with a JSON content type,
// and pause after each answer as p says: Think (fixed), or drawn as the
// generator's load.PaceExp draws it, rounded to wrk's whole milliseconds,
// each thread seeded apart. wrk sends every connection's first request at
// the start whatever delay() says.
func luaScript(dir string, body []byte, p pacing) (string, error) {
	bodyPath := filepath.Join(dir, fmt.Sprintf("body-%d.json", time.Now().UnixNano()))
	if err := os.WriteFile(bodyPath, body, 0o644); err != nil {
		return "", err
	}
	script := bodyPath + ".lua"
	lua := fmt.Sprintf("wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\nlocal f = io.open(%q, \"rb\")\nwrk.body = f:read(\"*a\")\nf:close()\n", bodyPath)
	switch ms := p.Think.Milliseconds(); {
	case ms <= 0:
	case p.Pace == load.PaceExp:
		lua += fmt.Sprintf(`local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("seed", threads)
end
function init(args)
  math.randomseed(seed)
end
function delay()
  return math.floor(math.min(-math.log(1 - math.random()) * %d, %d) + 0.5)
end
`, ms, ms*load.MaxThinks)
	default:
		lua += fmt.Sprintf("function delay()\n  return %d\nend\n", ms)
	}
	return script, os.WriteFile(script, []byte(lua), 0o644)
}

// runWrk runs wrk for the warm-up (discarded), then the window; wrk counts
// in whole seconds, so each is rounded to at least 1 s.
func runWrk(wrk, script, addr string, h harness.Options, o Options) (Sample, error) {
	args := func(d time.Duration) []string {
		return []string{"-t", strconv.Itoa(o.Threads), "-c", strconv.Itoa(h.Conns), "-d", fmt.Sprintf("%ds", max(1, int(d.Round(time.Second).Seconds()))),
			"--latency", "-s", script, "http://" + addr + "/"}
	}
	if h.Warmup > 0 {
		if out, err := exec.Command(wrk, args(h.Warmup)...).CombinedOutput(); err != nil {
			return Sample{}, fmt.Errorf("wrk: %v: %s", err, out)
		}
	}
	out, err := exec.Command(wrk, args(h.Duration)...).CombinedOutput()
	if err != nil {
		return Sample{}, fmt.Errorf("wrk: %v: %s", err, out)
	}
	return parseWrk(string(out))
}

var (
	wrkPercentile = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$`)
	wrkRate       = regexp.MustCompile(`(?m)^Requests/sec:\s+([\d.]+)`)
	wrkErrors     = regexp.MustCompile(`(?m)^\s+(Non-2xx or 3xx responses|Socket errors):.*$`)
)

// parseWrk reads wrk's --latency output: requests/s, p50 and p99; non-2xx
// answers or socket errors fail the window.
func parseWrk(out string) (Sample, error) {
	s := Sample{Harness: "wrk"}
	if m := wrkErrors.FindString(out); m != "" {
		return s, fmt.Errorf("wrk reported %q", strings.TrimSpace(m))
	}
	m := wrkRate.FindStringSubmatch(out)
	if m == nil {
		return s, fmt.Errorf("no Requests/sec in wrk's output: %.300s", out)
	}
	s.RPS, _ = strconv.ParseFloat(m[1], 64)
	for _, p := range wrkPercentile.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(p[2], 64)
		unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[p[3]]
		d := time.Duration(v * float64(unit))
		if p[1] == "50" {
			s.P50 = d
		} else {
			s.P99 = d
		}
	}
	if s.P99 == 0 {
		return s, fmt.Errorf("no latency distribution in wrk's output: %.300s", out)
	}
	return s, nil
}
