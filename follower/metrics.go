package follower

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/preconf/preconf/follower/feed"
)

// The follower's numbers for Prometheus: the counters it keeps anyway
// (feed outcomes, upstream traffic, re-execution results) are read at
// scrape time by a collector, and the two latencies are histograms, whose
// buckets add up across replicas (follower_status keeps its ring-buffer
// quantiles for people).

var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// visibleBuckets are finer around the 30 ms goal for received → visible
// (bench -follow reads its p99 from them).
var visibleBuckets = []float64{.0005, .001, .0025, .005, .0075, .01, .015, .02, .025, .03, .04, .05, .075, .1, .25, .5, 1, 2.5, 5, 10}

// metrics are the follower's histograms (nil without Config.Metrics).
type metrics struct {
	visible, firstVisible prometheus.Histogram
	roundTrip             prometheus.Histogram
}

func (f *Follower) registerMetrics(reg prometheus.Registerer) {
	f.hist = &metrics{
		visible: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "preconf_follower_visible_latency_seconds",
			Help: "From a flashblock's arrival on the feed to the pending snapshot showing it.", Buckets: visibleBuckets}),
		firstVisible: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "preconf_follower_first_visible_latency_seconds",
			Help: "From the arrival of a block's first flashblock (index 0) to the pending snapshot showing it: a block boundary's freshness.", Buckets: visibleBuckets}),
		roundTrip: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "preconf_follower_upstream_round_trip_seconds",
			Help: "One HTTP exchange with the upstream (a call or a batch).", Buckets: latencyBuckets}),
	}
	f.client.RoundTrip = func(d time.Duration) { f.hist.roundTrip.Observe(d.Seconds()) }
	reg.MustRegister(f.hist.visible, f.hist.firstVisible, f.hist.roundTrip, &collector{f: f})
}

// noteVisible records one flashblock's received → visible time; a block's
// first flashblock (index 0) is recorded in the first-flashblock ring and
// histogram too: the block boundary's freshness.
func (f *Follower) noteVisible(index uint64, d time.Duration) {
	f.lat.add(d)
	if index == 0 {
		f.latFirst.add(d)
	}
	if f.hist != nil {
		f.hist.visible.Observe(d.Seconds())
		if index == 0 {
			f.hist.firstVisible.Observe(d.Seconds())
		}
	}
}

var (
	outcomeDesc = prometheus.NewDesc("preconf_follower_flashblocks_total",
		"Feed events by what became of them (accepted, buffered, duplicate, gap, …, and heads: head_new, caught_up, reorg).",
		[]string{"outcome"}, nil)
	counterDescs = map[string]*prometheus.Desc{}
	gaugeDescs   = map[string]*prometheus.Desc{}
)

// counterHelp and gaugeHelp name the status counters exported as such.
var counterHelp = map[string]string{
	"connects":                 "Successful connections to the flashblocks feed.",
	"disconnects":              "Feed connections lost.",
	"frames":                   "Feed frames read.",
	"frame_bytes":              "Feed frame bytes read.",
	"brotli_frames":            "Binary (brotli) feed frames read.",
	"published":                "Pending snapshots published.",
	"upstream_requests":        "HTTP requests sent to the upstream.",
	"upstream_calls":           "JSON-RPC calls sent to the upstream (a batch counts each).",
	"upstream_failures":        "Upstream exchanges that failed (transport, non-JSON answer).",
	"state_fetches":            "State values read from the upstream.",
	"state_cache_hits":         "State values served from the follower's cache.",
	"proofs_verified":          "eth_getProof answers verified against the state root.",
	"block_hash_match":         "Sealed blocks whose hash matched the pre-confirmed one.",
	"block_hash_mismatch":      "Sealed blocks whose hash differed from the pre-confirmed one.",
	"carried_over":             "Pending blocks carried over onto a new head without re-execution.",
	"flashblock_fetch_rounds":  "Upstream state round trips while applying flashblocks (prefetch and discovery batches, reads during execution).",
	"exec_retryable_failures":  "Re-executions that failed and will be retried.",
	"ahead_opened":             "Blocks opened on a pre-confirmed parent the upstream had not sealed yet.",
	"ahead_kept":               "Blocks opened ahead whose parent was sealed as pre-confirmed: kept, not executed again.",
	"ahead_dropped":            "Blocks opened ahead that were dropped (their parent sealed differently, or superseded).",
	"blocks_opened":            "Blocks whose re-execution was opened (their first flashblock applied).",
	"blocks_opened_cold":       "Blocks opened that read state from the upstream before their first snapshot.",
	"open_state_fetches":       "State values read from the upstream while blocks were opened, before their first snapshot.",
	"exec_invalid_flashblocks": "Flashblocks that did not apply on the sealed state (block dropped).",
	"reconnects":               "Feed connections re-established after a loss.",
	"freezes":                  "Feed connections dropped because the feed answered neither a ping nor with a frame.",
	"dial_failures":            "Failed attempts to connect to the feed.",
	"resyncs":                  "Feed connections ended on purpose to have the feed replay the block after a gap (?replay=block).",
	"feed_stalls":              "Episodes of the feed silent or disconnected for longer than --flashblocks.stall.",
	"upstream_stalls":          "Episodes of the upstream leaving head polls unanswered for longer than --flashblocks.stall.",
	"upstream_lags":            "Episodes of the upstream's head behind the feed for longer than --flashblocks.stall.",
	"upstream_lower_heads":     "Head polls answered below the head followed (a pool's node behind), ignored.",
}

var gaugeHelp = map[string]string{
	"feed_connected":       "1 while the flashblocks feed is connected.",
	"upstream_ok":          "1 while the upstream answers head polls.",
	"head":                 "The upstream's latest block number.",
	"pending_number":       "The pending block's number.",
	"pending_index":        "The pending block's last flashblock index.",
	"pending_transactions": "Pre-confirmed transactions in the pending block.",
}

func init() {
	for name, help := range counterHelp {
		counterDescs[name] = prometheus.NewDesc("preconf_follower_"+name+"_total", help, nil, nil)
	}
	for name, help := range gaugeHelp {
		gaugeDescs[name] = prometheus.NewDesc("preconf_follower_"+name, help, nil, nil)
	}
}

// collector reads the follower's status at scrape time.
type collector struct{ f *Follower }

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- outcomeDesc
	for _, d := range counterDescs {
		ch <- d
	}
	for _, d := range gaugeDescs {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st := c.f.Status()
	for _, o := range feed.Outcomes() {
		ch <- prometheus.MustNewConstMetric(outcomeDesc, prometheus.CounterValue, float64(st.Counters[o.String()]), o.String())
	}
	for name, d := range counterDescs {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(st.Counters[name]))
	}
	gauge := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(gaugeDescs[name], prometheus.GaugeValue, v)
	}
	gauge("feed_connected", b2f(st.FeedConnected))
	gauge("upstream_ok", b2f(st.UpstreamError == ""))
	gauge("head", float64(st.Head))
	var number, index, txs float64
	if st.Pending != nil {
		number, index, txs = float64(st.Pending.Number), float64(st.Pending.Index), float64(st.Pending.Txs)
	}
	gauge("pending_number", number)
	gauge("pending_index", index)
	gauge("pending_transactions", txs)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
