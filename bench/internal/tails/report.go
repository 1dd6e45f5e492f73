package tails

import (
	"fmt"
	"strings"
	"time"

	"github.com/preconf/preconf/bench/internal/report"
)

// median is the median over rounds of f of the samples of node, workload
// and harness.
func (r *Report) median(node, w, harness string, f func(Sample) time.Duration) float64 {
	var v []float64
	for _, s := range r.Samples {
		if s.Node == node && s.Workload == w && s.Harness == harness {
			v = append(v, report.Ms(f(s)))
		}
	}
	return report.Median(v)
}

// Markdown is the two harnesses' p99s side by side, and each one's ratio.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Tails by two harnesses (%s)\n\n", r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "The same nodes (preconf `--no-sequencer`, anvil; bench genesis), each workload measured by the bench's generator and by `%s` (`-t %d -c %d --latency`, a Lua script posting the same body), one after the other, %d rounds × %s after %s of warm-up, %d connections, loopback, generator and nodes sharing every CPU. p99 in ms, medians over rounds; the bench's in-socket p99 is the node's part (send → answer in the client's socket).\n\n",
		r.Version, r.Options.Threads, r.Common.Conns, r.Common.Rounds, r.Common.Duration, r.Common.Warmup, r.Common.Conns)
	b.WriteString("| workload | preconf: bench / in socket / wrk | anvil: bench / in socket / wrk | p99 preconf ÷ anvil, bench | p99 preconf ÷ anvil, wrk | req/s preconf ÷ anvil, bench / wrk |\n|---|---:|---:|---:|---:|---:|\n")
	var names []string
	for _, s := range r.Samples {
		if !contains(names, s.Workload) {
			names = append(names, s.Workload)
		}
	}
	p99 := func(s Sample) time.Duration { return s.P99 }
	sock := func(s Sample) time.Duration { return s.SockP99 }
	rps := func(s Sample) time.Duration { return time.Duration(s.RPS * float64(time.Millisecond)) }
	for _, w := range names {
		pb, pw := r.median("preconf", w, "bench", p99), r.median("preconf", w, "wrk", p99)
		ab, aw := r.median("anvil", w, "bench", p99), r.median("anvil", w, "wrk", p99)
		fmt.Fprintf(&b, "| %s | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | %.2f× | %.2f× | %.2f× / %.2f× |\n", w,
			pb, r.median("preconf", w, "bench", sock), pw, ab, r.median("anvil", w, "bench", sock), aw, pb/ab, pw/aw,
			r.median("preconf", w, "bench", rps)/r.median("anvil", w, "bench", rps), r.median("preconf", w, "wrk", rps)/r.median("anvil", w, "wrk", rps))
	}
	return b.String()
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
