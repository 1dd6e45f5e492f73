package writeload

// Reads while writing (go run ./bench -writeload): preconf with its sequencer
// (2 s blocks, 200 ms flashblocks) on a genesis with -writeload-senders
// funded accounts and a 1G gas limit (room for ~23,000 transfers/s).
//
//   - A generator sends pre-signed transfers open-loop at -writeload-rate
//     per second for -writeload-duration with eth_sendRawTransaction: the
//     whole run is signed before the timed window (signing 3,000/s would
//     take a core), each connection owns a fixed set of senders so their
//     nonces arrive in order, and each transaction has a due time
//     (start + k/rate); the generator's lag behind that schedule is reported.
//   - Meanwhile a closed-loop reader (-writeload-read-conns connections)
//     reads eth_getBalance(sender, "pending") — balances that change in
//     every flashblock — and its p50/p99/max are reported.
//   - Flashblock punctuality: the arrival times of the /flashblocks feed's
//     messages during the window; each interval's deviation from the
//     schedule's (200 ms; 100 ms into flashblocks 0 and 1 on the OP-stack
//     chain) and how many fall outside ±20 ms.
//   - Built → readable: the sequencer's own Histogram
//     preconf_sequencer_built_to_readable_seconds (end of a flashblock's
//     execution → its snapshot readable, WAL fsync included), the difference
//     of /metrics before and after the window; its p99 is a bucket bound.
//   - -writeload-search: the highest rate at which every flashblock of a
//     -writeload-search-duration window is on time and the node keeps up
//     (doubling from -writeload-rate, or halving, then bisecting; bounded
//     by -writeload-search-steps).

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
	"github.com/preconf/preconf/bench/internal/report"
	"github.com/preconf/preconf/chain"
)

type Options struct {
	Rate           float64       `json:"rate_per_s"`
	Duration       time.Duration `json:"duration_ns"`
	Senders        int           `json:"senders"`
	SendConns      int           `json:"send_conns"`
	ReadConns      int           `json:"read_conns"`
	Search         bool          `json:"search"`
	SearchDuration time.Duration `json:"search_duration_ns"`
	SearchSteps    int           `json:"search_steps"`
	// Chain is the genesis the sequencer runs: "l1" (the bench genesis, a
	// plain-Ethereum dev chain) or "op" (the OP-stack dev chain, the node's
	// default: an L1-attributes deposit alone in each block's flashblock 0,
	// L1 data fees).
	Chain string `json:"chain"`
	out   string // where a stuck node's goroutines go (-profile)
}

const (
	flashblockInterval = 200 * time.Millisecond
	sendTimeout        = 30 * time.Second
	punctualTolerance  = 20 * time.Millisecond
	writeloadGasLimit  = 1_000_000_000
)

// AddFlags registers the experiment's own flags.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.Float64Var(&o.Rate, "writeload-rate", 3000, "transfers sent per second")
	fs.DurationVar(&o.Duration, "writeload-duration", 60*time.Second, "measuring window")
	fs.IntVar(&o.Senders, "writeload-senders", 512, "funded sender accounts (a multiple of -writeload-send-conns)")
	fs.IntVar(&o.SendConns, "writeload-send-conns", 128, "connections the generator sends on (each waits for its transaction's WAL fsync, so the rate it can reach is about conns ÷ fsync time)")
	fs.IntVar(&o.ReadConns, "writeload-read-conns", 32, "closed-loop reader connections")
	fs.BoolVar(&o.Search, "writeload-search", false, "also search the highest rate with every flashblock on time (±20 ms)")
	fs.DurationVar(&o.SearchDuration, "writeload-search-duration", 10*time.Second, "window of each search step")
	fs.IntVar(&o.SearchSteps, "writeload-search-steps", 6, "search steps at most")
	fs.StringVar(&o.Chain, "writeload-chain", "l1", "the sequencer's chain: l1 (the bench genesis, plain Ethereum) or op (the OP-stack dev chain, preconf's default: deposits alone in each block's flashblock 0, L1 data fees)")
}

// writeStep is one window at one rate.
type writeStep struct {
	Rate     float64       `json:"rate_per_s"`
	Duration time.Duration `json:"duration_ns"`
	Sent     int           `json:"sent"`
	// SendLagMax is how far the generator fell behind its schedule; SendP50
	// and SendP99 are eth_sendRawTransaction's answer times (admission
	// includes the WAL fsync).
	SendLagMax time.Duration `json:"send_lag_max_ns"`
	SendP50    time.Duration `json:"send_p50_ns"`
	SendP99    time.Duration `json:"send_p99_ns"`
	// Preconfirmed counts transactions in flashblocks that arrived in the
	// window; Backlog is what was sent but not pre-confirmed 400 ms after it.
	Preconfirmed int     `json:"preconfirmed"`
	PerSecond    float64 `json:"preconfirmed_per_s"`
	Backlog      int     `json:"backlog"`
	// Flashblocks seen in the window and their intervals' deviation from the
	// schedule's (scheduledInterval).
	Flashblocks int           `json:"flashblocks"`
	DevP50      time.Duration `json:"interval_dev_p50_ns"`
	DevP99      time.Duration `json:"interval_dev_p99_ns"`
	DevMax      time.Duration `json:"interval_dev_max_ns"`
	Late        int           `json:"intervals_outside_20ms"`
	// Long and Short count those intervals by the index (in its block) of
	// the flashblock that ended them, longer or shorter than scheduled: where
	// in the block time is lost.
	Long  map[uint64]int `json:"intervals_over_20ms_long_by_index,omitempty"`
	Short map[uint64]int `json:"intervals_over_20ms_short_by_index,omitempty"`
	// Built → readable from the sequencer's Histogram (seconds buckets).
	ReadableCount int           `json:"readable_count"`
	ReadableMean  time.Duration `json:"readable_mean_ns"`
	ReadableP99   time.Duration `json:"readable_p99_le_ns"` // the bucket bound holding the p99
	Reads         load.Result   `json:"reads"`
	OnTime        bool          `json:"on_time"`
	// Phases are the sequencer's other histograms over the window (mean,
	// p99 bucket bound): build, WAL fsync, publish, seal.
	Phases map[string][2]time.Duration `json:"phases_mean_p99_ns"`
}

// phaseMetrics are the sequencer's histograms a window reads; the first is
// built → readable.
var phaseMetrics = []string{"preconf_sequencer_built_to_readable_seconds", "preconf_sequencer_flashblock_build_seconds",
	"preconf_sequencer_wal_fsync_seconds", "preconf_sequencer_flashblock_publish_seconds", "preconf_sequencer_seal_seconds"}

type Report struct {
	Started time.Time      `json:"started"`
	Host    map[string]any `json:"host"`
	Options Options        `json:"options"`
	Version string         `json:"version"`
	SignTPS float64        `json:"signed_per_s"`
	Main    writeStep      `json:"main"`
	Search  []writeStep    `json:"search,omitempty"`
	Highest float64        `json:"highest_on_time_rate"`
	Seconds float64        `json:"seconds"`
}

// Section is the docs/bench.md section (and result file name) of a run
// with these options.
func (o Options) Section() string {
	if o.Chain == "op" {
		return "writeload-op"
	}
	return "writeload"
}

// genesis is the chain's genesis (the shared one for "l1", the OP-stack
// dev chain's for "op") plus the senders, 1000 ETH each, and a gas limit
// with room for the search.
func genesis(s *harness.Signers, chainName string) func(path string) error {
	return func(path string) error {
		var g *core.Genesis
		if chainName == "op" {
			var err error
			if g, err = chain.DevL2Genesis(); err != nil {
				return err
			}
		} else {
			g = harness.BenchGenesis()
		}
		g.GasLimit = writeloadGasLimit
		for _, a := range s.Addrs {
			g.Alloc[a] = types.Account{Balance: new(big.Int).Mul(big.NewInt(1000), big.NewInt(params.Ether))}
		}
		return harness.WriteGenesisFile(path, g)
	}
}

func Run(o harness.Options, wo Options, log io.Writer) (*Report, error) {
	wo.out = o.Out
	if wo.Rate <= 0 || wo.Duration <= 0 || wo.Senders <= 0 || wo.SendConns <= 0 || wo.ReadConns <= 0 || wo.Senders%wo.SendConns != 0 {
		return nil, errors.New("-writeload-rate, -duration, -senders, -send-conns and -read-conns must be positive; -writeload-senders a multiple of -writeload-send-conns")
	}
	if wo.Chain != "l1" && wo.Chain != "op" {
		return nil, fmt.Errorf("-writeload-chain %q: want l1 or op", wo.Chain)
	}
	start := time.Now()
	s := harness.NewSigners("preconf bench writeload sender", wo.Senders)
	_, _, n, stop, err := harness.SequencingNodeWith(o, log, "preconf-writeload-", genesis(s, wo.Chain))
	if err != nil {
		return nil, err
	}
	defer stop()
	rep := &Report{Started: time.Now().UTC(), Host: harness.HostInfo(), Options: wo, Version: n.Version()}
	fw, err := harness.WatchFeed(n.Addr)
	if err != nil {
		return nil, err
	}
	defer fw.Close()
	var reads [][]byte
	for i, a := range s.Addrs[:min(len(s.Addrs), 256)] {
		reads = append(reads, load.Encode(load.NewCall(i+1, "eth_getBalance", a, "pending")))
	}
	step := func(rate float64, d time.Duration) (writeStep, error) {
		total := int(rate * d.Seconds())
		t := time.Now()
		reqs, err := s.Sign(n.Addr, total, harness.Transfer)
		if err != nil {
			return writeStep{}, err
		}
		rep.SignTPS = float64(total) / time.Since(t).Seconds()
		if err := harness.WaitPoolEmpty(n.Addr, 30*time.Second); err != nil { // the previous step's backlog
			return writeStep{}, err
		}
		fmt.Fprintf(log, "  %.0f transfers/s for %s: %d signed in %s; sending\n", rate, d, total, time.Since(t).Round(time.Millisecond))
		st, err := writeWindow(n.Addr, fw, reqs, reads, rate, d, wo)
		if err == nil {
			fmt.Fprintf(log, "  %s\n", st.summary())
		}
		return st, err
	}
	fmt.Fprintf(log, "writeload: %.0f transfers/s for %s from %d senders, %d reader conns, %s chain\n", wo.Rate, wo.Duration, wo.Senders, wo.ReadConns, wo.Chain)
	if rep.Main, err = step(wo.Rate, wo.Duration); err != nil {
		return nil, err
	}
	if wo.Search {
		if err := searchRate(rep, wo, step, log); err != nil {
			return nil, err
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// searchRate finds the highest on-time rate: from the main run's rate it
// doubles (or halves) until the verdict flips, then bisects.
func searchRate(rep *Report, wo Options, step func(float64, time.Duration) (writeStep, error), log io.Writer) error {
	lo, hi := 0.0, math.Inf(1)
	if rep.Main.OnTime {
		lo = wo.Rate
	} else {
		hi = wo.Rate
	}
	for range wo.SearchSteps {
		var rate float64
		switch {
		case math.IsInf(hi, 1):
			rate = lo * 2
		case lo == 0:
			rate = hi / 2
		default:
			rate = math.Round((lo + hi) / 2)
		}
		if rate < 50 || (!math.IsInf(hi, 1) && hi-lo < max(100, lo/20)) {
			break
		}
		fmt.Fprintf(log, "search (on time at %.0f, late at %.0f):\n", lo, hi)
		st, err := step(rate, wo.SearchDuration)
		if err != nil {
			return err
		}
		rep.Search = append(rep.Search, st)
		if st.OnTime {
			lo = rate
		} else {
			hi = rate
		}
	}
	rep.Highest = lo
	return nil
}

// writeWindow sends reqs on schedule while reading, and measures.
func writeWindow(addr string, fw *harness.FeedWatcher, reqs, reads [][]byte, rate float64, d time.Duration, wo Options) (writeStep, error) {
	st := writeStep{Rate: rate, Duration: d, Sent: len(reqs)}
	before, err := harness.ScrapeHistograms(addr, phaseMetrics)
	if err != nil {
		return st, err
	}
	start := time.Now().Add(50 * time.Millisecond)
	end := start.Add(d)
	lags := make([]time.Duration, wo.SendConns)
	sendTimes := make([][]time.Duration, wo.SendConns)
	errs := make([]error, wo.SendConns)
	// A stuck node's goroutines are saved by the first send that fails,
	// before its connection closes: the goroutines serving it end then.
	var dumpOnce sync.Once
	var dump string
	saveDump := func() {
		if path, err := saveGoroutines(wo.out); err == nil {
			dump = path
		}
	}
	var wg sync.WaitGroup
	for c := range wo.SendConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := load.Dial(addr)
			if err != nil {
				errs[c] = err
				return
			}
			defer cl.Close()
			// Sender k%K is on connection k%C (K is a multiple of C), so
			// each sender's transactions go out in nonce order.
			for k := c; k < len(reqs); k += wo.SendConns {
				due := start.Add(time.Duration(float64(k) / rate * float64(time.Second)))
				if w := time.Until(due); w > 0 {
					time.Sleep(w)
				} else {
					lags[c] = max(lags[c], -w)
				}
				t := time.Now()
				// Bounded: an answer that never comes ends the run
				// (with -profile, the node's goroutines are saved).
				cl.Conn.SetDeadline(t.Add(sendTimeout))
				if err := harness.SendOK(cl, reqs[k]); err != nil {
					errs[c] = fmt.Errorf("transfer %d sent at %s: %w", k, t.Format("15:04:05.000"), err)
					dumpOnce.Do(saveDump)
					return
				}
				sendTimes[c] = append(sendTimes[c], time.Since(t))
			}
		}()
	}
	time.Sleep(time.Until(start))
	res, rerr := load.Run(load.Config{Addr: addr, Conns: wo.ReadConns, Duration: d, MaxRequests: 50_000_000, Bodies: reads, Check: load.CheckCalls(1)})
	wg.Wait()
	time.Sleep(time.Until(end.Add(2 * flashblockInterval)))
	if err := errors.Join(append(errs, rerr)...); err != nil {
		dumpOnce.Do(saveDump)
		if dump != "" {
			err = fmt.Errorf("%w (node goroutines: %s)", err, dump)
		}
		return st, err
	}
	if res.Errors > 0 {
		return st, fmt.Errorf("%d failed reads, first: %s", res.Errors, res.FirstError)
	}
	st.Reads = res
	st.SendLagMax = slices.Max(lags)
	sends := slices.Concat(sendTimes...)
	slices.Sort(sends)
	st.SendP50, st.SendP99 = load.Percentile(sends, 0.5), load.Percentile(sends, 0.99)

	// Flashblocks in arrival order.
	var fbs []harness.FeedMsg
	for _, m := range fw.Snapshot() {
		if !m.At.Before(start) && !m.At.After(end.Add(2*flashblockInterval)) {
			fbs = append(fbs, m)
		}
	}
	slices.SortFunc(fbs, func(a, b harness.FeedMsg) int { return a.At.Compare(b.At) })
	var devs []time.Duration
	for i, m := range fbs {
		if m.At.After(end) {
			st.Backlog -= m.Txs // pre-confirmed just after the window: not backlog
			continue
		}
		st.Flashblocks++
		st.Preconfirmed += m.Txs
		if i > 0 {
			dev := m.At.Sub(fbs[i-1].At) - scheduledInterval(wo.Chain == "op", m.Index)
			off := &st.Long
			if dev < 0 {
				dev, off = -dev, &st.Short
			}
			devs = append(devs, dev)
			if dev > punctualTolerance {
				st.Late++
				if *off == nil {
					*off = map[uint64]int{}
				}
				(*off)[m.Index]++
			}
		}
	}
	st.Backlog += st.Sent - st.Preconfirmed
	st.PerSecond = float64(st.Preconfirmed) / d.Seconds()
	slices.Sort(devs)
	if len(devs) > 0 {
		st.DevP50, st.DevP99, st.DevMax = load.Percentile(devs, 0.5), load.Percentile(devs, 0.99), devs[len(devs)-1]
	}
	after, err := harness.ScrapeHistograms(addr, phaseMetrics)
	if err != nil {
		return st, err
	}
	st.ReadableCount, st.ReadableMean, st.ReadableP99 = after[0].Since(before[0], 0.99)
	st.Phases = map[string][2]time.Duration{}
	for i, name := range phaseMetrics[1:] {
		_, mean, p99 := after[i+1].Since(before[i+1], 0.99)
		st.Phases[strings.TrimSuffix(strings.TrimPrefix(name, "preconf_sequencer_"), "_seconds")] = [2]time.Duration{mean, p99}
	}
	// On time: every interval within ±20 ms, no flashblock missing, the
	// generator on schedule and everything sent pre-confirmed.
	st.OnTime = st.Late == 0 && st.Flashblocks >= int(d/flashblockInterval)-1 &&
		st.SendLagMax < flashblockInterval && st.Backlog <= 0
	return st, nil
}

// scheduledInterval is the sequencer's interval before a flashblock of
// index i (sequencer/schedule.go): on the OP-stack chain the flashblocks
// after 0 are published half an interval before their grid points, so the
// intervals into flashblocks 0 and 1 are half ones.
func scheduledInterval(op bool, i uint64) time.Duration {
	if op && i <= 1 {
		return flashblockInterval / 2
	}
	return flashblockInterval
}

func (st writeStep) summary() string {
	var ph []string
	for _, k := range slices.Sorted(maps.Keys(st.Phases)) {
		ph = append(ph, fmt.Sprintf("%s %s/≤%s", k, report.FmtDur(st.Phases[k][0]), report.FmtDur(st.Phases[k][1])))
	}
	return fmt.Sprintf("phases (mean/p99): %s\n  ", strings.Join(ph, ", ")) + fmt.Sprintf("sent %d (answers p50 %s p99 %s, lag ≤ %s), pre-confirmed %.0f/s, backlog %d; %d flashblocks, interval deviation p50 %s p99 %s max %s, %d outside ±20 ms (by index: long %v, short %v); built→readable mean %s p99 ≤ %s; reads %.0f/s p50 %s p99 %s max %s; on time: %v",
		st.Sent, report.FmtDur(st.SendP50), report.FmtDur(st.SendP99), report.FmtDur(st.SendLagMax), st.PerSecond, st.Backlog, st.Flashblocks, report.FmtDur(st.DevP50), report.FmtDur(st.DevP99), report.FmtDur(st.DevMax), st.Late, st.Long, st.Short,
		report.FmtDur(st.ReadableMean), report.FmtDur(st.ReadableP99), st.Reads.RPS, report.FmtDur(st.Reads.P50), report.FmtDur(st.Reads.P99), report.FmtDur(st.Reads.Max), st.OnTime)
}

// saveGoroutines stores the node's goroutine dump from its pprof listener
// (-profile only) under dir.
func saveGoroutines(dir string) (string, error) {
	resp, err := harness.ProbeClient.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/goroutine?debug=2", harness.PortPprof))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("goroutines: HTTP %d %v", resp.StatusCode, err)
	}
	path := filepath.Join(dir, "writeload-node-goroutines.txt")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, raw, 0o644)
}
