package node

import (
	"net/http"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/preconf/preconf/rpc"
)

// Metrics are exposed on /metrics in the Prometheus text format, by
// prometheus/client_golang. go-ethereum's metrics package was the first
// choice (the brief prefers it), but its Prometheus handler writes no
// # HELP lines, types counters as gauges, has no labels and exports
// histograms as quantile summaries, which cannot be added up across
// replicas: `promtool check metrics` rejects its output (exit 3, "no help
// text", "counter metrics should have _total suffix"; measured with
// go-ethereum v1.17.5 and promtool 2.42, see docs/reliability.md).

// durationBuckets (seconds) for the sequencer's and follower's phases: from
// tens of microseconds (a publish) to seconds (a slow seal).
var durationBuckets = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// runtimeRules add to the Go collector's defaults the runtime metrics that
// explain latency tails: how long runnable goroutines waited for a thread
// (go_sched_latencies_seconds), the stop-the-world pauses
// (go_sched_pauses_*), the GC's pauses and cycles (go_gc_*), and where the
// CPU went (go_cpu_classes_*: GC marking and assists against user code).
// go run ./bench reads them to report each workload's scheduler latency and
// GC share.
var runtimeRules = []collectors.GoRuntimeMetricsRule{collectors.MetricsScheduler, collectors.MetricsGC,
	{Matcher: regexp.MustCompile(`^/cpu/classes/`)}}

// newRegistry is a node's registry: the Go runtime and process collectors
// (heap, GC, scheduler, RSS, open descriptors) and the transport's metrics.
func newRegistry() (*prometheus.Registry, *rpc.Metrics) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(runtimeRules...)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg, rpc.NewMetrics(reg)
}

// metricsHandler serves reg.
func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}

// snapshotWatch follows the pending source: when the last snapshot was
// published (health, age gauge) and, on a sequencing node, the phases of
// each flashblock and seal (the sequencer keeps them in its Stats, set
// before it publishes; this is the one place that turns them into
// histograms, so the sequencer needs no metrics code).
type snapshotWatch struct {
	last atomic.Int64 // unix nanoseconds of the last publication seen; 0: none yet

	build, wal, publish, seal prometheus.Histogram
	readable                  prometheus.Histogram
	txs                       prometheus.Histogram
	flashblocks               prometheus.Counter
}

func newSnapshotWatch(reg prometheus.Registerer, sequencing bool) *snapshotWatch {
	w := &snapshotWatch{}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "preconf_pending_snapshot_age_seconds",
		Help: "Time since the last pending snapshot (flashblock) was published; 0 before the first."}, func() float64 {
		if t := w.last.Load(); t != 0 {
			return time.Since(time.Unix(0, t)).Seconds()
		}
		return 0
	}))
	w.flashblocks = prometheus.NewCounter(prometheus.CounterOpts{Name: "preconf_pending_snapshots_total",
		Help: "Pending snapshots (flashblocks) published."})
	w.txs = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "preconf_flashblock_transactions",
		Help: "Transactions a flashblock added.", Buckets: []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}})
	reg.MustRegister(w.flashblocks, w.txs)
	if !sequencing {
		return w
	}
	h := func(name, help string) prometheus.Histogram {
		m := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: durationBuckets})
		reg.MustRegister(m)
		return m
	}
	w.build = h("preconf_sequencer_flashblock_build_seconds", "Executing the transactions of one flashblock.")
	w.wal = h("preconf_sequencer_wal_fsync_seconds", "Writing and fsyncing one flashblock's write-ahead log record.")
	w.publish = h("preconf_sequencer_flashblock_publish_seconds", "Publishing one flashblock's snapshot (atomic swap, notifications).")
	w.seal = h("preconf_sequencer_seal_seconds", "Sealing one block.")
	// Finer buckets around the 10 ms goal (bench -writeload reads them).
	w.readable = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "preconf_sequencer_built_to_readable_seconds",
		Help:    "From the end of a flashblock's execution to its snapshot being readable (WAL write and fsync included).",
		Buckets: []float64{.0005, .001, .002, .003, .004, .005, .0075, .01, .015, .02, .03, .05, .1, .25, 1}})
	reg.MustRegister(w.readable)
	return w
}

// stats are the sequencer's last-phase times (nanoseconds).
type stats interface {
	phases() (build, wal, publish, seal int64)
	// readable is the last flashblock's built → readable time.
	readable() int64
}

// observe records one published snapshot; s is nil without a sequencer.
func (w *snapshotWatch) observe(newTxs int, index uint64, s stats) {
	w.last.Store(time.Now().UnixNano())
	w.flashblocks.Inc()
	w.txs.Observe(float64(newTxs))
	if s == nil || w.build == nil {
		return
	}
	build, wal, publish, seal := s.phases()
	sec := func(ns int64) float64 { return float64(ns) / 1e9 }
	w.build.Observe(sec(build))
	if r := s.readable(); r > 0 {
		w.readable.Observe(sec(r)) // set just after Publish: at worst the previous flashblock's, like publish
	}
	if wal > 0 {
		w.wal.Observe(sec(wal))
	}
	if publish > 0 {
		w.publish.Observe(sec(publish)) // the previous flashblock's: it is stored after Publish returns
	}
	if index == 0 && seal > 0 {
		w.seal.Observe(sec(seal)) // the block sealed just before this one opened
	}
}

// age is the time since the last snapshot (0 before the first).
func (w *snapshotWatch) age() time.Duration {
	if t := w.last.Load(); t != 0 {
		return time.Since(time.Unix(0, t))
	}
	return 0
}
