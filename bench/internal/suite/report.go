package suite

import (
	"fmt"
	"strings"
	"time"

	"github.com/preconf/preconf/bench/internal/report"
)

// Markdown is the loop's table: per node the medians over rounds.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## A test suite's loop through viem, automine (%s)\n\n", r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "viem (tests/clients' pinned version) against preconf `--automine%s` (its datadir on disk, and `preconf-memory` with nothing on disk) and anvil (automine), fresh nodes from the bench genesis, %d rounds, the node order rotating: deploy a counter; %d `increment()` calls, each awaited to its receipt (`writeContract` + `waitForTransactionReceipt`); %d reads (`readContract`); %d `evm_snapshot` → `increment()` → receipt → `evm_revert` cycles. The end state (counter, nonce, block number, contract address) is checked to be the same on every node. Medians over rounds; write and cycle quantiles over every round's.\n\n",
		prefixed(r.Options.PreconfArgs), len(r.Runs["preconf"]), r.Options.Writes, r.Options.Reads, r.Options.Cycles)
	fmt.Fprintf(&b, "Nodes — preconf: `%s`; anvil: `%s`\n\n", r.Version["preconf"], r.Version["anvil"])
	b.WriteString("| node | loop (ms) | deploy | writes | write p50 / p90 | reads | cycles | cycle p50 | node CPU (ms) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, n := range r.Nodes {
		runs := r.Runs[n]
		col := func(f func(Loop) float64) float64 {
			v := make([]float64, len(runs))
			for i, l := range runs {
				v[i] = f(l)
			}
			return report.Median(v)
		}
		var writes, cycles []float64
		for _, l := range runs {
			writes = append(writes, l.WritesMs...)
			cycles = append(cycles, l.CyclesMs...)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f | %.2f / %.2f | %.0f | %.0f | %.2f | %.0f |\n", n,
			col(func(l Loop) float64 { return l.TotalMs }), col(func(l Loop) float64 { return l.DeployMs }),
			col(func(l Loop) float64 { return l.WriteMs }), report.Quantile(writes, 0.5), report.Quantile(writes, 0.9),
			col(func(l Loop) float64 { return l.ReadMs }), col(func(l Loop) float64 { return l.CycleMs }), report.Quantile(cycles, 0.5),
			col(func(l Loop) float64 { return l.CPUMs }))
	}
	b.WriteString("\nLoop time ÷ anvil's in the same round (median over rounds):")
	for _, n := range r.Nodes {
		if v, ok := r.Ratio[n]; ok {
			fmt.Fprintf(&b, " %s **%.2f×**;", n, v)
		}
	}
	b.WriteString(" `preconf-memory` is `preconf --automine --datadir ''`: the chain in memory and no write-ahead log, nothing on disk.\n")
	return b.String()
}

func prefixed(s string) string {
	if s == "" {
		return ""
	}
	return " " + s
}
