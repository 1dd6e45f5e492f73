package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// scrapeHistograms reads histograms from the node's /metrics.
func scrapeHistograms(addr string, names []string) ([]histogram, error) {
	resp, err := probeClient.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: HTTP %d", resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	out := make([]histogram, len(names))
	for i, name := range names {
		if out[i], err = parseHistogram(bytes.NewReader(raw), name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parseHistogram(r io.Reader, name string) (histogram, error) {
	var h histogram
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"_") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		switch key := line[len(name):sp]; {
		case strings.HasPrefix(key, `_bucket{le="`):
			le, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(key, `_bucket{le="`), `"}`), 64)
			if err != nil {
				return h, fmt.Errorf("%s: bucket %q", name, key)
			}
			h.bounds, h.counts = append(h.bounds, le), append(h.counts, v)
		case key == "_sum":
			h.sum = v
		case key == "_count":
			h.count = v
		}
	}
	if err := sc.Err(); err != nil {
		return h, err
	}
	if len(h.bounds) == 0 {
		return h, fmt.Errorf("/metrics has no histogram %s", name)
	}
	return h, nil
}

// since is what was observed between before and h: the count, the mean and
// the upper bound of the bucket holding quantile q (+Inf: above the last).
func (h histogram) since(before histogram, q float64) (int, time.Duration, time.Duration) {
	n := h.count - before.count
	if n <= 0 || len(before.counts) != len(h.counts) {
		return 0, 0, 0
	}
	mean := time.Duration((h.sum - before.sum) / n * 1e9)
	for i, c := range h.counts {
		if c-before.counts[i] >= q*n {
			if math.IsInf(h.bounds[i], 1) {
				return int(n), mean, time.Duration(math.MaxInt64)
			}
			return int(n), mean, time.Duration(h.bounds[i] * 1e9)
		}
	}
	return int(n), mean, 0
}

func (r *writeloadReport) markdown() string {
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
			st.Rate, st.Duration, fmtDur(st.SendP50), fmtDur(st.SendP99), fmtDur(st.SendLagMax), st.PerSecond, st.Backlog, st.Reads.RPS, fmtDur(st.Reads.P50), fmtDur(st.Reads.P99), fmtDur(st.Reads.Max),
			fmtDur(st.ReadableMean), fmtDur(st.ReadableP99), st.Flashblocks, fmtDur(st.DevP50), fmtDur(st.DevP99), fmtDur(st.DevMax), st.Late, yesNo(st.OnTime))
	}
	b.WriteString("\nThe sequencer's phases over each window (mean / p99 bucket bound): a flashblock's execution, its WAL fsync and publication, and the seal that precedes each block's first flashblock.\n\n")
	b.WriteString("| rate sent | build | WAL fsync | publish | seal |\n|---:|---:|---:|---:|---:|\n")
	for _, st := range steps {
		fmt.Fprintf(&b, "| %.0f/s |", st.Rate)
		for _, k := range []string{"flashblock_build", "wal_fsync", "flashblock_publish", "seal"} {
			fmt.Fprintf(&b, " %s / ≤ %s |", fmtDur(st.Phases[k][0]), fmtDur(st.Phases[k][1]))
		}
		b.WriteString("\n")
	}
	if r.Options.Search {
		fmt.Fprintf(&b, "\nHighest rate with every flashblock on time (±20 ms), nothing left behind and the generator on schedule: **%.0f transfers/s** (search windows of %s).\n", r.Highest, r.Options.SearchDuration)
	}
	fmt.Fprintf(&b, "\nThe generator signed %.0f transfers/s before each window (not timed). The first row's p99 of built → readable is the upper bound of the sequencer's histogram bucket that holds it.\n", r.SignTPS)
	return b.String()
}

// chainDescription names the writeload's chain (-writeload-chain).
func chainDescription(name string) string {
	if name == "op" {
		return "the OP-stack dev chain: each block's flashblock 0 holds its L1-attributes deposit alone, flashblocks 1–10 follow half an interval early, so the intervals into flashblocks 0 and 1 are 100 ms"
	}
	return "the bench genesis, a plain-Ethereum dev chain"
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}
