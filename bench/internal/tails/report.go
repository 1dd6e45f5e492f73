package tails

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/preconf/preconf/bench/internal/report"
)

// median is the median over rounds of f of the samples of node, workload,
// harness and pacing.
func (r *Report) median(node, w, harness string, think time.Duration, f func(Sample) time.Duration) float64 {
	var v []float64
	for _, s := range r.Samples {
		if s.Node == node && s.Workload == w && s.Harness == harness && s.Think == think {
			v = append(v, report.Ms(f(s)))
		}
	}
	return report.Median(v)
}

// Markdown is the two harnesses' p99s side by side, and each one's ratio:
// one table back to back, one paced.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Tails by two harnesses (%s)\n\n", r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "The same nodes (preconf `--no-sequencer`, anvil; bench genesis), each workload measured by the bench's generator and by `%s` (`-t %d -c %d --latency`, a Lua script posting the same body), one after the other, %d rounds × %s after %s of warm-up, %d connections, loopback, generator and nodes sharing every CPU. p99 in ms, medians over rounds; the bench's in-socket p99 is the node's part (send → answer in the client's socket).\n\n",
		r.Version, r.Options.Threads, r.Common.Conns, r.Common.Rounds, r.Common.Duration, r.Common.Warmup, r.Common.Conns)
	var names []string
	var thinks []time.Duration
	for _, s := range r.Samples {
		if !slices.Contains(names, s.Workload) {
			names = append(names, s.Workload)
		}
		if !slices.Contains(thinks, s.Think) {
			thinks = append(thinks, s.Think)
		}
	}
	slices.Sort(thinks)
	for _, think := range thinks {
		if think == 0 {
			b.WriteString("**Back to back** (closed loop: each connection sends its next request as soon as it has the answer, so the faster node is offered more):\n\n")
		} else {
			fmt.Fprintf(&b, "**Paced**: each connection waits %s after each answer before its next request (the generator's `Think`, wrk's Lua `delay()`), which offers both nodes about the same rate (the req/s columns show how close):\n\n", think)
		}
		r.table(&b, names, think)
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func (r *Report) table(b *strings.Builder, names []string, think time.Duration) {
	b.WriteString("| workload | preconf: bench / in socket / wrk | anvil: bench / in socket / wrk | p99 preconf ÷ anvil, bench | p99 preconf ÷ anvil, wrk | req/s preconf ÷ anvil, bench / wrk |\n|---|---:|---:|---:|---:|---:|\n")
	p99 := func(s Sample) time.Duration { return s.P99 }
	sock := func(s Sample) time.Duration { return s.SockP99 }
	rps := func(s Sample) time.Duration { return time.Duration(s.RPS * float64(time.Millisecond)) }
	for _, w := range names {
		m := func(node, harness string, f func(Sample) time.Duration) float64 {
			return r.median(node, w, harness, think, f)
		}
		pb, pw := m("preconf", "bench", p99), m("preconf", "wrk", p99)
		ab, aw := m("anvil", "bench", p99), m("anvil", "wrk", p99)
		fmt.Fprintf(b, "| %s | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | %.2f× | %.2f× | %.2f× / %.2f× |\n", w,
			pb, m("preconf", "bench", sock), pw, ab, m("anvil", "bench", sock), aw, pb/ab, pw/aw,
			m("preconf", "bench", rps)/m("anvil", "bench", rps), m("preconf", "wrk", rps)/m("anvil", "wrk", rps))
	}
}
