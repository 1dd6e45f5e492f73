package followload

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/preconf/preconf/bench/internal/report"
)

// Markdown is the run's table for docs/bench.md.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## A follower at a DeFi load (%s, %s)\n\n", r.Version, r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "A sequencing preconf (2 s blocks, 200 ms flashblocks) receives DeFi-shaped transactions open-loop from %d senders on %d connections, pre-signed: each calls a router that calls three pools, %d storage slots across the four contracts, %d of them never touched before (%d gas). `preconf follow` reaches the sequencer, its upstream and its feed, through a proxy that delays every byte %s each way (a %s round trip). %s per rate, after %s at the first rate unmeasured (the follower warm); the chains' highest gas rate is %d Mgas/s (World Chain's 100M gas limit per 2 s block in op-geth's superchain registry), so %.0f Mgas/s is twice it. Per flashblock: the follower's upstream HTTP requests, JSON-RPC calls, state values fetched and the state round trips applying it took (`follower_status` counters; a batch is one round trip, and so is each read the execution makes itself). The follower's upstream reads: %s. Cores: CPU time over the step of the follower, the sequencer (its upstream) and the bench process (load generator, proxy, feed watchers), all on the same machine.\n\n",
		r.Options.Senders, r.Options.SendConn, r.SlotsPerTx, r.FreshPerTx, r.GasPerTx, report.FmtDur(r.Options.RTT/2), report.FmtDur(r.Options.RTT), report.FmtDur(r.Options.Step), report.FmtDur(r.Options.Warmup), r.ChainsMgas, 2.0*float64(r.ChainsMgas), proofsText(r.Options.Proofs))
	b.WriteString("| offered Mgas/s (tx/s) | included Mgas/s | flashblocks (missing on the follower) | follower received → visible mean / p99 | sequencer feed → follower feed p50 / p99 / max | upstream requests / calls / state fetches / state round trips per flashblock | upstream round trip mean / p99 | cores: follower / sequencer / bench | sustained |\n|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, st := range r.Steps {
		fmt.Fprintf(&b, "| %.0f (%.0f) | %.1f | %d (%d) | %s / %s | %s / %s / %s | %.1f / %.1f / %.1f / %.1f | %s / %s | %.2f / %.2f / %.2f | %s |\n", st.Mgas, st.TxRate, st.IncludedMgas, st.Flashblocks, st.Missing,
			report.FmtDur(st.VisibleMean), bound(st.VisibleP99), report.FmtDur(st.FeedP50), report.FmtDur(st.FeedP99), report.FmtDur(st.FeedMax),
			st.RequestsPerFB, st.CallsPerFB, st.FetchesPerFB, st.RoundsPerFB, report.FmtDur(st.RoundTripMean), bound(st.RoundTripP99), st.FollowerCores, st.SequencerCores, st.BenchCores, report.YesNo(st.Sustained))
	}
	if r.Stopped != "" {
		fmt.Fprintf(&b, "\nThe steps stopped %s.\n", r.Stopped)
	}
	if r.Highest > 0 {
		fmt.Fprintf(&b, "\nHighest rate sustained (the sequencer included ≥ 99 %% of it, the follower published every flashblock, received → visible p99 ≤ 50 ms): **%.0f Mgas/s**, %.2f× the chains' highest.\n", r.Highest, r.Highest/float64(r.ChainsMgas))
	} else {
		b.WriteString("\nNo rate was sustained (the sequencer included ≥ 99 % of it, the follower published every flashblock, received → visible p99 ≤ 50 ms).\n")
	}
	return b.String()
}

// bound is a Histogram quantile's bucket bound: "≤ b", or past the last
// bucket.
func bound(d time.Duration) string {
	if d == time.Duration(math.MaxInt64) {
		return "> last bucket"
	}
	return "≤ " + report.FmtDur(d)
}

// proofsText says what the follower's --proofs meant in a run.
func proofsText(mode string) string {
	if mode == "off" {
		return "`--proofs off`, plain reads (`eth_getStorageAt`, `eth_getBalance`, `eth_getTransactionCount`, `eth_getCode`) at the parent block's hash, trusted"
	}
	return "`--proofs auto`, `eth_getProof` checked against the parent block's state root"
}
