package compare

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
	"github.com/preconf/preconf/bench/internal/report"
	"github.com/preconf/preconf/bench/internal/workload"
)

// Results is the machine-readable result (written as JSON).
type Results struct {
	Started      time.Time      `json:"started"`
	TotalSeconds float64        `json:"total_seconds"`
	Host         map[string]any `json:"host"`
	Options      Options        `json:"options"`
	// Layout says where the generator and the nodes ran (-pin); empty: on
	// every CPU, shared.
	Layout    string            `json:"layout,omitempty"`
	Nodes     []string          `json:"nodes"`
	Versions  map[string]string `json:"versions"`
	Missing   map[string]string `json:"missing,omitempty"`
	Errors    []string          `json:"errors,omitempty"`
	Workloads []string          `json:"workloads"`
	Runs      []measurement     `json:"runs"`
	Summary   []summary         `json:"summary"`

	mu sync.Mutex
}

// measurement is one measurement: a workload on a node in a round.
type measurement struct {
	Round    int    `json:"round"`
	Node     string `json:"node"`
	Workload string `json:"workload"`
	OK       bool   `json:"ok"`
	load.Result
}

// nodeStats are a node's medians over the rounds for one workload.
type nodeStats struct {
	Rounds int     `json:"rounds"`
	RPS    float64 `json:"rps"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	// SockP99Ms is the p99 of the node's part (send → answer in the
	// client's socket; loadResult.SockP99), 0 when not measured.
	SockP99Ms float64 `json:"sock_p99_ms,omitempty"`
	// CPUUs is the node's CPU time per request in µs (0: not measured).
	CPUUs float64 `json:"server_cpu_per_request_us"`
	// ClientCPUUs is the load generator's CPU time per request in µs
	// while it loaded this node (0: not measured).
	ClientCPUUs float64 `json:"client_cpu_per_request_us"`
	Errors      int64   `json:"errors"`
}

// summary is one workload across nodes.
type summary struct {
	Workload string                `json:"workload"`
	Nodes    map[string]*nodeStats `json:"nodes"`
	// Ratio is preconf's requests/s over the peer's (>1: preconf faster):
	// the median over rounds of each round's ratio (see pairedRatio).
	Ratio map[string]float64 `json:"ratio_rps"`
	// P99Ratio is preconf's median p99 over the peer's (<1: preconf lower).
	P99Ratio map[string]float64 `json:"ratio_p99"`
	// SockP99Ratio is the same for the node's part (SockP99Ms).
	SockP99Ratio map[string]float64 `json:"ratio_sock_p99,omitempty"`
	// CPURatio is the peer's CPU per request over preconf's (>1: preconf
	// needs less CPU per answer), paired by round like Ratio.
	CPURatio map[string]float64 `json:"ratio_cpu_per_request"`
}

func newReport(o Options, wls []workload.Workload) *Results {
	r := &Results{Started: time.Now().UTC(), Host: harness.HostInfo(), Options: o, Nodes: o.Nodes,
		Versions: map[string]string{}, Missing: map[string]string{}}
	for _, w := range wls {
		r.Workloads = append(r.Workloads, w.Name)
	}
	return r
}

func (r *Results) missing(node string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Missing[node] = err.Error()
	r.Errors = append(r.Errors, fmt.Sprintf("%s missing: %v", node, err))
}

func (r *Results) fail(node string, round int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Errors = append(r.Errors, fmt.Sprintf("%s round %d: %v", node, round+1, err))
}

func (r *Results) version(node, v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Versions[node] = v
}

func (r *Results) add(round int, node, workload string, res load.Result, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Runs = append(r.Runs, measurement{Round: round + 1, Node: node, Workload: workload, OK: ok, Result: res})
}

// summarise computes per-workload medians and ratios from the runs.
func (r *Results) summarise() {
	r.Summary = nil
	for _, w := range r.Workloads {
		s := summary{Workload: w, Nodes: map[string]*nodeStats{}, Ratio: map[string]float64{}, P99Ratio: map[string]float64{}, SockP99Ratio: map[string]float64{}, CPURatio: map[string]float64{}}
		for _, n := range r.Nodes {
			var rps, p50, p99, sp99, mx, cpu, ccpu []float64
			var errs int64
			for _, run := range r.Runs {
				if run.Node != n || run.Workload != w {
					continue
				}
				errs += run.Errors
				if !run.OK {
					errs++ // a failed probe
					continue
				}
				rps = append(rps, run.RPS)
				p50 = append(p50, report.Ms(run.P50))
				p99 = append(p99, report.Ms(run.P99))
				if run.SockP99 > 0 {
					sp99 = append(sp99, report.Ms(run.SockP99))
				}
				mx = append(mx, report.Ms(run.Max))
				if run.ServerCPU > 0 {
					cpu = append(cpu, report.Us(run.ServerCPU))
				}
				if run.ClientCPU > 0 {
					ccpu = append(ccpu, report.Us(run.ClientCPU))
				}
			}
			if len(rps) == 0 && errs == 0 {
				continue
			}
			s.Nodes[n] = &nodeStats{Rounds: len(rps), RPS: report.Median(rps), P50Ms: report.Median(p50), P99Ms: report.Median(p99), SockP99Ms: report.Median(sp99), MaxMs: report.Median(mx), CPUUs: report.Median(cpu), ClientCPUUs: report.Median(ccpu), Errors: errs}
		}
		if base := s.Nodes["preconf"]; base != nil && base.Rounds > 0 {
			for n, st := range s.Nodes {
				if n == "preconf" || st.Rounds == 0 {
					continue
				}
				if st.RPS > 0 {
					s.Ratio[n] = r.pairedRatio(w, n, base.RPS/st.RPS, func(pre, peer *measurement) float64 { return pre.RPS / peer.RPS })
				}
				if st.P99Ms > 0 {
					s.P99Ratio[n] = base.P99Ms / st.P99Ms
				}
				if st.SockP99Ms > 0 && base.SockP99Ms > 0 {
					s.SockP99Ratio[n] = base.SockP99Ms / st.SockP99Ms
				}
				if base.CPUUs > 0 && st.CPUUs > 0 {
					s.CPURatio[n] = r.pairedRatio(w, n, st.CPUUs/base.CPUUs, func(pre, peer *measurement) float64 {
						if pre.ServerCPU <= 0 || peer.ServerCPU <= 0 {
							return 0
						}
						return float64(peer.ServerCPU) / float64(pre.ServerCPU)
					})
				}
			}
		}
		r.Summary = append(r.Summary, s)
	}
}

// pairedRatio is the median over rounds of f(preconf's run, peer's run)
// for workload w, over the rounds where both ran and f is positive;
// fallback (the ratio of the medians) when no round has both. A round
// measures a workload on its nodes back to back, so a round's ratio
// compares the nodes in (mostly) the same spell of this machine's speed,
// which the ratio of medians taken from different rounds does not.
func (r *Results) pairedRatio(w, peer string, fallback float64, f func(pre, peer *measurement) float64) float64 {
	pre := map[int]*measurement{}
	for i := range r.Runs {
		if x := &r.Runs[i]; x.OK && x.Workload == w && x.Node == "preconf" {
			pre[x.Round] = x
		}
	}
	var ratios []float64
	for i := range r.Runs {
		x := &r.Runs[i]
		if !x.OK || x.Workload != w || x.Node != peer || pre[x.Round] == nil {
			continue
		}
		if v := f(pre[x.Round], x); v > 0 {
			ratios = append(ratios, v)
		}
	}
	if len(ratios) == 0 {
		return fallback
	}
	return report.Median(ratios)
}

// sockTable writes each node's p99 beside its part in the node (send →
// answer in the client's socket), when a run measured it.
func (r *Results) sockTable(b *strings.Builder) {
	measured := false
	for _, s := range r.Summary {
		for _, st := range s.Nodes {
			measured = measured || st.SockP99Ms > 0
		}
	}
	if !measured {
		return
	}
	b.WriteString("\np99 (ms) as the generator measured it, and its part in the node: send → answer in the client's socket (the kernel's receive time, on one connection in " +
		strconv.Itoa(load.SockSample) + "). The rest is the generator's own delay in reading the answer:\n\n| workload |")
	for _, n := range r.Nodes {
		fmt.Fprintf(b, " %s | %s, in socket |", n, n)
	}
	b.WriteString("\n|---|")
	for range r.Nodes {
		b.WriteString("---:|---:|")
	}
	b.WriteString("\n")
	for _, s := range r.Summary {
		fmt.Fprintf(b, "| %s |", s.Workload)
		for _, n := range r.Nodes {
			st := s.Nodes[n]
			ok := st != nil && st.Rounds > 0
			var p99, sock float64
			if ok {
				p99, sock = st.P99Ms, st.SockP99Ms
			}
			report.Cell(b, " %.2f |", p99, ok)
			report.Cell(b, " %.2f |", sock, ok && sock > 0)
		}
		b.WriteString("\n")
	}
}

// Markdown renders the summary: per workload the median req/s and latency
// of every node and preconf's ratios.
func (r *Results) Markdown() string {
	var b strings.Builder
	o := r.Options
	fmt.Fprintf(&b, "## preconf vs peers — %s\n\n", r.Started.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "%d rounds × %s per workload and node (after %s warm-up), %d keep-alive connections (the EVM-bound `eth_call`s %d), loopback, %v CPUs, %s.\n",
		o.Rounds, o.Duration, o.Warmup, o.Conns, min(o.Conns, workload.EVMConns), r.Host["cpus"], r.Host["go"])
	if r.Layout != "" {
		fmt.Fprintf(&b, "Pinned (-pin): %s, so that they do not share cores.\n", r.Layout)
	} else {
		fmt.Fprintf(&b, "The load generator and the nodes share every CPU.\n")
	}
	if o.Sequencer {
		fmt.Fprintf(&b, "preconf runs its sequencer (2 s blocks, 200 ms flashblocks): its pending reads are served from live pending snapshots.\n")
	} else {
		fmt.Fprintf(&b, "No node produces blocks (preconf --no-sequencer): every node serves the same genesis state at latest and pending.\n")
	}
	fmt.Fprintf(&b, "Medians over rounds; ratio = preconf req/s ÷ peer req/s in the same round (the nodes measured back to back), median over rounds (> 1: preconf faster).\n\n")
	var vers []string
	for _, n := range r.Nodes {
		if v, ok := r.Versions[n]; ok {
			vers = append(vers, fmt.Sprintf("%s: `%s`", n, v))
		} else if why, ok := r.Missing[n]; ok {
			vers = append(vers, fmt.Sprintf("%s: **missing** (%s)", n, report.FirstLine(why)))
		}
	}
	fmt.Fprintf(&b, "Nodes — %s\n\n", strings.Join(vers, "; "))

	peers := r.Nodes[1:]
	b.WriteString("| workload |")
	for _, n := range r.Nodes {
		fmt.Fprintf(&b, " %s req/s | %s p50 / p99 / max (ms) |", n, n)
	}
	for _, p := range peers {
		fmt.Fprintf(&b, " preconf/%s |", p)
	}
	b.WriteString("\n|---|")
	for range r.Nodes {
		b.WriteString("---:|---:|")
	}
	for range peers {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, s := range r.Summary {
		fmt.Fprintf(&b, "| %s |", s.Workload)
		for _, n := range r.Nodes {
			st := s.Nodes[n]
			switch {
			case st == nil:
				b.WriteString(" – | – |")
			case st.Rounds == 0:
				fmt.Fprintf(&b, " failed | %d errors |", st.Errors)
			default:
				errs := ""
				if st.Errors > 0 {
					errs = fmt.Sprintf(" (%d errors)", st.Errors)
				}
				fmt.Fprintf(&b, " %.0f%s | %.2f / %.2f / %.1f |", st.RPS, errs, st.P50Ms, st.P99Ms, st.MaxMs)
			}
		}
		for _, p := range peers {
			x, ok := s.Ratio[p]
			report.Cell(&b, " **%.2f×** |", x, ok)
		}
		b.WriteString("\n")
	}
	r.sockTable(&b)
	// The node's own CPU time per answer: independent of how much CPU the
	// rest of the machine (load generator included) took meanwhile.
	// The generator's own beside it: which of the two used the cores the
	// run shares.
	b.WriteString("\nNode CPU time per request (µs, user + system, median over rounds; ratio = peer ÷ preconf in the same round, median over rounds, > 1: preconf cheaper), and the load generator's own (the bench process, every thread) while it loaded each node:\n\n| workload |")
	for _, n := range r.Nodes {
		fmt.Fprintf(&b, " %s |", n)
	}
	for _, p := range peers {
		fmt.Fprintf(&b, " %s/preconf |", p)
	}
	for _, n := range r.Nodes {
		fmt.Fprintf(&b, " generator, %s |", n)
	}
	b.WriteString("\n|---|")
	for range 2*len(r.Nodes) + len(peers) {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, s := range r.Summary {
		fmt.Fprintf(&b, "| %s |", s.Workload)
		// perNode writes a µs cell per node (a dash where not measured).
		perNode := func(us func(*nodeStats) float64) {
			for _, n := range r.Nodes {
				var v float64
				if st := s.Nodes[n]; st != nil {
					v = us(st)
				}
				report.Cell(&b, " %.1f |", v, v > 0)
			}
		}
		perNode(func(st *nodeStats) float64 { return st.CPUUs })
		for _, p := range peers {
			x, ok := s.CPURatio[p]
			report.Cell(&b, " %.2f× |", x, ok)
		}
		perNode(func(st *nodeStats) float64 { return st.ClientCPUUs })
		b.WriteString("\n")
	}
	if len(r.Errors) > 0 {
		b.WriteString("\nErrors:\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "- %s\n", report.FirstLine(e))
		}
	}
	fmt.Fprintf(&b, "\nTotal run time %.0f s.\n", r.TotalSeconds)
	return b.String()
}

// Write stores the JSON and Markdown under dir, as a timestamped pair and as
// latest.json / latest.md.
func (r *Results) Write(dir, md string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	stamp := r.Started.Format("20060102-150405")
	for name, data := range map[string][]byte{
		"bench-" + stamp + ".json": raw, "bench-" + stamp + ".md": []byte(md),
		"latest.json": raw, "latest.md": []byte(md),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ReadmeRatios is the README's summary: each workload's ratios to the peers.
func (r *Results) ReadmeRatios() string {
	var b strings.Builder
	layout := "generator and nodes sharing every CPU"
	if r.Layout != "" {
		layout = r.Layout
	}
	fmt.Fprintf(&b, "Latest same-run ratios (%s, %d rounds, %s; req/s of preconf ÷ peer, p99 of preconf ÷ peer (< 1: preconf's lower), "+
		"and the same for the node's part of the p99, send → answer in the client's socket; tables in docs/bench.md):\n\n", r.Started.Format("2006-01-02"), r.Options.Rounds, layout)
	peers := r.Nodes[1:]
	b.WriteString("| workload |")
	for _, p := range peers {
		fmt.Fprintf(&b, " vs %s | p99 vs %s | node's p99 vs %s |", p, p, p)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|---:|---:|", len(peers)) + "\n")
	for _, s := range r.Summary {
		fmt.Fprintf(&b, "| %s |", s.Workload)
		for _, p := range peers {
			for _, m := range []map[string]float64{s.Ratio, s.P99Ratio, s.SockP99Ratio} {
				if v, ok := m[p]; ok {
					fmt.Fprintf(&b, " %.2f× |", v)
				} else {
					b.WriteString(" — |")
				}
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
