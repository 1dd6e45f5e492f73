package writeload

import (
	"fmt"
	"strings"
	"time"

	"github.com/preconf/preconf/bench/internal/report"
)

func (r *Report) Markdown() string {
	var b strings.Builder
	title := "Reads while writing"
	if r.Options.Chain == "op" {
		title += ", OP-stack dev chain"
	}
	fmt.Fprintf(&b, "## %s (%s, %s)\n\n", title, r.Version, r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "Transfers sent open-loop to the sequencer (%s; 200 ms flashblocks, 2 s blocks, %d senders, %d connections, pre-signed) while %d connections read `eth_getBalance(sender, \"pending\")` closed-loop:\n\n",
		chainDescription(r.Options.Chain), r.Options.Senders, r.Options.SendConns, r.Options.ReadConns)
	b.WriteString("| rate sent | window | send answer p50 / p99, lag | pre-confirmed/s | backlog | read req/s | read p50 / p99 / max | built→readable mean / p99 | flashblocks | interval deviation p50 / p99 / max | outside ±20 ms | on time |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	steps := append([]writeStep{r.Main}, r.Search...)
	for _, st := range steps {
		fmt.Fprintf(&b, "| %.0f/s | %s | %s / %s, %s | %.0f | %d | %.0f | %s / %s / %s | %s / ≤ %s | %d | %s / %s / %s | %d | %s |\n",
			st.Rate, st.Duration, report.FmtDur(st.SendP50), report.FmtDur(st.SendP99), report.FmtDur(st.SendLagMax), st.PerSecond, st.Backlog, st.Reads.RPS, report.FmtDur(st.Reads.P50), report.FmtDur(st.Reads.P99), report.FmtDur(st.Reads.Max),
			report.FmtDur(st.ReadableMean), report.FmtDur(st.ReadableP99), st.Flashblocks, report.FmtDur(st.DevP50), report.FmtDur(st.DevP99), report.FmtDur(st.DevMax), st.Late, report.YesNo(st.OnTime))
	}
	b.WriteString("\nThe sequencer's phases over each window (mean / p99 bucket bound): a flashblock's execution, its WAL fsync and publication, and the seal that precedes each block's first flashblock.\n\n")
	b.WriteString("| rate sent | build | WAL fsync | publish | seal |\n|---:|---:|---:|---:|---:|\n")
	for _, st := range steps {
		fmt.Fprintf(&b, "| %.0f/s |", st.Rate)
		for _, k := range []string{"flashblock_build", "wal_fsync", "flashblock_publish", "seal"} {
			fmt.Fprintf(&b, " %s / ≤ %s |", report.FmtDur(st.Phases[k][0]), report.FmtDur(st.Phases[k][1]))
		}
		b.WriteString("\n")
	}
	if r.Options.Search {
		fmt.Fprintf(&b, "\nHighest rate with every flashblock on time (±20 ms), nothing left behind and the generator on schedule: **%.0f transfers/s** (search windows of %s).\n", r.Highest, r.Options.SearchDuration)
	}
	fmt.Fprintf(&b, "\nThe generator signed %.0f transfers/s before each window (not timed). The first row's p99 of built → readable is the upper bound of the sequencer's Histogram bucket that holds it.\n", r.SignTPS)
	return b.String()
}

// chainDescription names the writeload's chain (-writeload-chain).
func chainDescription(name string) string {
	if name == "op" {
		return "the OP-stack dev chain: each block's flashblock 0 holds its L1-attributes deposit alone, flashblocks 1–10 follow half an interval early, so the intervals into flashblocks 0 and 1 are 100 ms"
	}
	return "the bench genesis, a plain-Ethereum dev chain"
}
