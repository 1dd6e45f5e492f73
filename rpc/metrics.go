package rpc

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LatencyBuckets are the bounds (seconds) of the request-duration
// histograms: from a cached read (~50 µs) to the request deadline. Buckets,
// unlike quantiles, add up across replicas.
var LatencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// Metrics are the transport's and the dispatcher's counters. One Metrics
// serves one node (a server without one keeps unregistered ones).
type Metrics struct {
	requests  *prometheus.CounterVec
	errors    *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	inflight  prometheus.Gauge
	timeouts  prometheus.Counter
	tooLarge  prometheus.Counter
	throttled prometheus.Counter

	conns       prometheus.Gauge
	connsTotal  prometheus.Counter
	rejected    prometheus.Counter
	evicted     prometheus.Counter
	acceptErrs  prometheus.Counter
	wsConns     prometheus.Gauge
	wsSubs      prometheus.Gauge
	slowDropped prometheus.Counter
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "preconf_rpc_requests_total",
			Help: "JSON-RPC calls answered, by method (unknown methods count as \"unknown\")."}, []string{"method"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "preconf_rpc_errors_total",
			Help: "JSON-RPC calls answered with an error, by method."}, []string{"method"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "preconf_rpc_request_duration_seconds",
			Help: "Time to answer one JSON-RPC call, by method.", Buckets: LatencyBuckets}, []string{"method"}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "preconf_rpc_inflight_requests",
			Help: "JSON-RPC messages (calls or batches) being answered."}),
		timeouts: prometheus.NewCounter(prometheus.CounterOpts{Name: "preconf_rpc_timeouts_total",
			Help: "Calls answered -32002 \"request timed out\" (--rpc.timeout)."}),
		tooLarge: prometheus.NewCounter(prometheus.CounterOpts{Name: "preconf_rpc_responses_too_large_total",
			Help: "Answers replaced by a -32005 error for exceeding --rpc.max-response-size."}),
		throttled: prometheus.NewCounter(prometheus.CounterOpts{Name: "preconf_rpc_throttled_total",
			Help: "Tracing or simulation calls that waited for a slot (--rpc.max-tracing-requests)."}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{Name: "preconf_http_open_connections",
			Help: "Open HTTP and websocket connections (bounded by --rpc.max-connections)."}),
		connsTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "preconf_http_connections_total",
			Help: "Connections accepted."}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "preconf_http_connections_rejected_total",
			Help: "Connections answered 503 and closed because --rpc.max-connections were open and none was idle."}),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{Name: "preconf_http_connections_evicted_total",
			Help: "Idle connections closed to make room for a new one at --rpc.max-connections."}),
		acceptErrs: prometheus.NewCounter(prometheus.CounterOpts{Name: "preconf_http_accept_errors_total",
			Help: "Failed accepts (e.g. too many open files); the listener backs off and retries."}),
		wsConns: prometheus.NewGauge(prometheus.GaugeOpts{Name: "preconf_ws_connections",
			Help: "Open JSON-RPC websocket connections."}),
		wsSubs: prometheus.NewGauge(prometheus.GaugeOpts{Name: "preconf_ws_subscriptions",
			Help: "Live eth_subscribe subscriptions."}),
		slowDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "preconf_ws_slow_consumers_dropped_total",
			Help: "Websocket peers closed with 1008 because their outgoing queue was full."}),
	}
	reg.MustRegister(m.requests, m.errors, m.duration, m.inflight, m.timeouts, m.tooLarge, m.throttled,
		m.conns, m.connsTotal, m.rejected, m.evicted, m.acceptErrs, m.wsConns, m.wsSubs, m.slowDropped)
	return m
}

// methodMetrics are one method's series, resolved once at registration so
// that a call costs no label lookup.
type methodMetrics struct {
	requests prometheus.Counter
	errors   prometheus.Counter
	duration prometheus.Observer
}

func (m *Metrics) forMethod(name string) *methodMetrics {
	return &methodMetrics{requests: m.requests.WithLabelValues(name), errors: m.errors.WithLabelValues(name),
		duration: m.duration.WithLabelValues(name)}
}

func (mm *methodMetrics) observe(start time.Time, failed bool) {
	mm.requests.Inc()
	if failed {
		mm.errors.Inc()
	}
	mm.duration.Observe(time.Since(start).Seconds())
}
