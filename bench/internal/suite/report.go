package suite

import (
	"fmt"
	"strings"
	"time"

	"github.com/preconf/preconf/bench/internal/report"
)

// checksPerWrite is how many times viem asked for a write's receipt, on
// average: 1 when every receipt was there at the first check, more when the
// node answered the send before the block was sealed and viem polled again.
func (l Loop) checksPerWrite() float64 {
	if len(l.WritesMs) == 0 {
		return 0
	}
	return float64(l.Requests["writes"]["eth_getTransactionReceipt"]) / float64(len(l.WritesMs))
}

// pooled is every round's values of one operation.
func pooled(runs []Loop, f func(Loop) []float64) []float64 {
	var v []float64
	for _, l := range runs {
		v = append(v, f(l)...)
	}
	return v
}

// medianOf is the median over rounds of one figure.
func medianOf(runs []Loop, f func(Loop) float64) float64 {
	v := make([]float64, len(runs))
	for i, l := range runs {
		v[i] = f(l)
	}
	return report.Median(v)
}

func (l Loop) writes() []float64 { return l.WritesMs }
func (l Loop) reads() []float64  { return l.ReadsMs }
func (l Loop) cycles() []float64 { return l.CyclesMs }

// Markdown is the loop's table: per node the medians over rounds, and each
// operation's median and p90 over every round's.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## A test suite's loop through viem, automine (%s)\n\n", r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "viem (tests/clients' pinned version, `pollingInterval` %s and no cache on every node, as Hardhat's viem integration sets for a development network) against preconf `--automine%s` (its datadir on disk, and `preconf-memory` with nothing on disk) and anvil (automine), fresh nodes from the bench genesis, %d rounds, the node order rotating: deploy a counter; %d `increment()` calls, each awaited to its receipt (`writeContract` + `waitForTransactionReceipt`); %d reads (`readContract`); %d `evm_snapshot` → `increment()` → receipt → `evm_revert` cycles. The end state (counter, nonce, block number, contract address) is checked to be the same on every node. Phase times: medians over rounds; each operation's p50 and p90 over every round's.\n\n",
		r.Options.Poll, prefixed(r.Options.PreconfArgs), len(r.Runs["preconf"]), r.Options.Writes, r.Options.Reads, r.Options.Cycles)
	fmt.Fprintf(&b, "Nodes — preconf: `%s`; anvil: `%s`\n\n", r.Version["preconf"], r.Version["anvil"])
	b.WriteString("| node | loop (ms) | deploy | writes | write p50 / p90 | receipt checks per write | reads | read p50 / p90 | cycles | cycle p50 / p90 | node CPU (ms) | client CPU (ms): process / main thread | client floor ÷ anvil's loop |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	q := func(v []float64) string {
		return fmt.Sprintf("%.2f / %.2f", report.Quantile(v, 0.5), report.Quantile(v, 0.9))
	}
	for _, n := range r.Nodes {
		runs := r.Runs[n]
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f | %s | %.2f | %.0f | %s | %.0f | %s | %.0f | %.0f / %.0f | %.2f |\n", n,
			medianOf(runs, func(l Loop) float64 { return l.TotalMs }), medianOf(runs, func(l Loop) float64 { return l.DeployMs }),
			medianOf(runs, func(l Loop) float64 { return l.WriteMs }), q(pooled(runs, Loop.writes)), medianOf(runs, Loop.checksPerWrite),
			medianOf(runs, func(l Loop) float64 { return l.ReadMs }), q(pooled(runs, Loop.reads)),
			medianOf(runs, func(l Loop) float64 { return l.CycleMs }), q(pooled(runs, Loop.cycles)),
			medianOf(runs, func(l Loop) float64 { return l.CPUMs }), medianOf(runs, func(l Loop) float64 { return l.ClientCPUMs }),
			medianOf(runs, func(l Loop) float64 { return l.ClientThreadCPUMs }), r.Floor[n])
	}
	b.WriteString("\nLoop time ÷ anvil's in the same round (median over rounds):")
	for _, n := range r.Nodes {
		if v, ok := r.Ratio[n]; ok {
			fmt.Fprintf(&b, " %s **%.2f×**;", n, v)
		}
	}
	b.WriteString(" `preconf-memory` is `preconf --automine --datadir ''`: the chain in memory and no write-ahead log, nothing on disk.")
	b.WriteString(" Receipt checks per write: `eth_getTransactionReceipt` requests per write, 1.00 when every receipt was there at viem's first check.")
	b.WriteString(" Client CPU: the Node.js process running viem, its CPU time (user + system) over the loop's phases, all its threads and its main thread alone (where the JavaScript runs between the node's answers).")
	b.WriteString(" Client floor: that main thread's CPU ÷ anvil's loop time in the same round (median over rounds), the ratio the node would reach if it answered in no time.\n")
	return b.String()
}

func prefixed(s string) string {
	if s == "" {
		return ""
	}
	return " " + s
}
