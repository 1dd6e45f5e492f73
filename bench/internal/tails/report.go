package tails

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/preconf/preconf/bench/internal/load"
	"github.com/preconf/preconf/bench/internal/report"
)

// median is the median over rounds of f of the samples of node, workload,
// harness and pacing.
func (r *Report) median(node, w, harness string, p pacing, f func(Sample) float64) float64 {
	var v []float64
	for _, s := range r.Samples {
		if s.Node == node && s.Workload == w && s.Harness == harness && s.pacing() == p {
			v = append(v, f(s))
		}
	}
	return report.Median(v)
}

func (s Sample) pacing() pacing { return pacing{s.Think, s.Pacing} }

// Markdown is the two harnesses' p99s side by side, and each one's ratio:
// one table back to back, one paced.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Tails by two harnesses (%s)\n\n", r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "The same nodes (preconf `--no-sequencer`, anvil; bench genesis), each workload measured by the bench's generator and by `%s` (`-t %d -c %d --latency`, a Lua script posting the same body), one after the other, %d rounds × %s after %s of warm-up, %d connections, loopback, generator and nodes sharing every CPU. p99 in ms, medians over rounds; the bench's in-socket p99 is the node's part (send → answer in the client's socket).\n\n",
		r.Version, r.Options.Threads, r.Common.Conns, r.Common.Rounds, r.Common.Duration, r.Common.Warmup, r.Common.Conns)
	var names []string
	var pacings []pacing
	for _, s := range r.Samples {
		if !slices.Contains(names, s.Workload) {
			names = append(names, s.Workload)
		}
		if !slices.Contains(pacings, s.pacing()) {
			pacings = append(pacings, s.pacing())
		}
	}
	for _, p := range pacings {
		switch p.Pace {
		case "":
			b.WriteString("**Back to back** (closed loop: each connection sends its next request as soon as it has the answer, so the faster node is offered more):\n\n")
		case load.PaceExp:
			fmt.Fprintf(&b, "**Paced, out of step** (`-tails-pacing exp`): each connection waits a pause drawn from an exponential distribution of mean %s after each answer, and one before its first request (the generator's `PaceExp`; wrk's Lua `delay()` draws the same, in whole ms), so the connections' requests do not fall into step; both nodes are offered about the same rate (the req/s columns show how close). %s\n\n", p.Think, r.crowds(p))
		default:
			fmt.Fprintf(&b, "**Paced, in step** (`-tails-pacing fixed`): each connection waits %s after each answer, all starting together (wrk's constant `delay()`), so requests arrive in crowds. %s\n\n", p.Think, r.crowds(p))
		}
		r.table(&b, names, p)
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// crowds says how many other requests the generator sent within ±250 µs of
// each one (median over requests, then over rounds and workloads).
func (r *Report) crowds(p pacing) string {
	var v []float64
	for _, s := range r.Samples {
		if s.Harness == "bench" && s.pacing() == p {
			v = append(v, s.Crowd)
		}
	}
	if len(v) == 0 {
		return ""
	}
	return fmt.Sprintf("The generator sent each request with a median %.0f others within ±250 µs of it.", report.Median(v))
}

func (r *Report) table(b *strings.Builder, names []string, p pacing) {
	b.WriteString("| workload | preconf: bench / in socket / wrk | anvil: bench / in socket / wrk | p99 preconf ÷ anvil, bench | p99 preconf ÷ anvil, in socket | p99 preconf ÷ anvil, wrk | req/s preconf ÷ anvil, bench / wrk |\n|---|---:|---:|---:|---:|---:|---:|\n")
	p99 := func(s Sample) float64 { return report.Ms(s.P99) }
	sock := func(s Sample) float64 { return report.Ms(s.SockP99) }
	rps := func(s Sample) float64 { return s.RPS }
	for _, w := range names {
		m := func(node, harness string, f func(Sample) float64) float64 {
			return r.median(node, w, harness, p, f)
		}
		pb, pw := m("preconf", "bench", p99), m("preconf", "wrk", p99)
		ab, aw := m("anvil", "bench", p99), m("anvil", "wrk", p99)
		ps, as := m("preconf", "bench", sock), m("anvil", "bench", sock)
		fmt.Fprintf(b, "| %s | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | %.2f× | %.2f× | %.2f× | %.2f× / %.2f× |\n", w,
			pb, ps, pw, ab, as, aw, pb/ab, ps/as, pw/aw,
			m("preconf", "bench", rps)/m("anvil", "bench", rps), m("preconf", "wrk", rps)/m("anvil", "wrk", rps))
	}
}
