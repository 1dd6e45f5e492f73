package bigstate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/preconf/preconf/bench/internal/report"
)

// Markdown renders the big-state report: per node start-up, RSS, disk and
// the page-cache read, then per workload each node's median round.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## A big state: %d accounts, %d storage slots (%s)\n\n", r.Meta.Accounts, r.Meta.Slots, r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "Generated once with `chain.CreateBulk` in %.1f s, of which %.1f s compacting the store (genesis %s); geth opens a hard-linked copy of the same store (%.1f s). Random keys over the whole state, %d rounds, median round; start-up is process start → first answer. Reads start once preconf's `/readyz` answers 200 (a state snapshot generated again after an unclean stop makes it 503 meanwhile); a start-up marked \"ready\" waited for that.\n\n",
		r.Meta.GenerateSecond, r.Meta.CompactSeconds, r.Meta.Genesis, r.Meta.CopySeconds, r.Rounds)
	if r.Layout != "" {
		fmt.Fprintf(&b, "Pinned (-pin): %s, so that they do not share cores.\n\n", r.Layout)
	} else {
		b.WriteString("The load generator and the nodes share every CPU.\n\n")
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range r.Nodes {
			if !yield(k) {
				return
			}
		}
	})
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(boolInt(b == "preconf"), boolInt(a == "preconf")) })
	b.WriteString("Before each node starts, its datadir's files are read once, so that the random reads meet the OS page cache as on a node that has been serving this state (bench/internal/harness/pagecache.go says why).\n\n")
	b.WriteString("| node | start-up (each round) | RSS after reads | disk | datadir read before each round |\n|---|---:|---:|---:|---:|\n")
	for _, name := range names {
		bn := r.Nodes[name]
		var su, rss []string
		for i, d := range bn.Startup {
			su = append(su, report.FmtDur(d)+readyNote(d, bn.Ready[i])) // appended together (bigstateRound)
		}
		for _, v := range bn.RSS {
			rss = append(rss, fmt.Sprintf("%d MiB", v>>20))
		}
		var warm []string
		for _, d := range bn.Warm {
			warm = append(warm, report.FmtDur(d))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f GiB | %s |\n", name, strings.Join(su, ", "), strings.Join(rss, ", "), float64(bn.Disk)/(1<<30), strings.Join(warm, ", "))
	}
	b.WriteString("\n| workload |")
	for _, name := range names {
		fmt.Fprintf(&b, " %s req/s | %s p50 / p99 / max | %s CPU/req |", name, name, name)
	}
	if len(names) > 1 {
		b.WriteString(" preconf/geth |")
	}
	b.WriteString("\n|---|")
	for range names {
		b.WriteString("---:|---:|---:|")
	}
	if len(names) > 1 {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	p := r.Nodes["preconf"]
	if p == nil { // -bigstate-generate-only measures nothing
		return b.String()
	}
	for _, w := range slices.Sorted(func(yield func(string) bool) {
		for k := range p.Results {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "| %s |", w)
		for _, name := range names {
			res := r.Nodes[name].Results[w]
			fmt.Fprintf(&b, " %.0f | %s / %s / %s | %.1f µs |", res.RPS, report.FmtDur(res.P50), report.FmtDur(res.P99), report.FmtDur(res.Max), report.Us(res.ServerCPU))
		}
		if g, ok := r.Nodes["geth"]; ok && g.Results[w].RPS > 0 {
			fmt.Fprintf(&b, " **%.2f×** |", p.Results[w].RPS/g.Results[w].RPS)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
