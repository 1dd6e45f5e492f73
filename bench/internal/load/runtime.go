package load

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RuntimeStats are preconf's Go runtime figures over one measurement, the
// difference of its /metrics (node/metrics.go exports the runtime/metrics
// behind them) read before and after the load: what the latency tail is
// made of. The runtime's histograms are exported with coarse buckets
// (…, 82 µs, 0.92 ms, 10.5 ms, …), so the scheduler figures are a mean and
// the shares of waits above two bounds, not percentiles.
type RuntimeStats struct {
	// GCCycles is the number of collections; GCCPU their share of the
	// node's CPU time (marking, assists and pauses).
	GCCycles int64   `json:"gc_cycles"`
	GCCPU    float64 `json:"gc_cpu_share"`
	// GCPauseMeanUs and GCPauseTotalMs are the stop-the-world pauses of
	// the collections (stopping the goroutines included).
	GCPauseMeanUs  float64 `json:"gc_pause_mean_us"`
	GCPauseTotalMs float64 `json:"gc_pause_total_ms"`
	// SchedMeanUs is the mean time a runnable goroutine waited for a
	// thread; SchedOver1ms and SchedOver10ms the shares of waits longer
	// than 0.92 ms and 10.5 ms (bucket bounds).
	SchedMeanUs   float64 `json:"sched_latency_mean_us"`
	SchedOver1ms  float64 `json:"sched_latency_over_0_92ms"`
	SchedOver10ms float64 `json:"sched_latency_over_10_5ms"`
	// AllocBytes and AllocObjects are heap allocations per answered request.
	AllocBytes   float64 `json:"alloc_bytes_per_request"`
	AllocObjects float64 `json:"alloc_objects_per_request"`
	// RSSMB is the node's resident memory after the measurement.
	RSSMB float64 `json:"rss_mb"`
}

// ScrapeMetrics reads the go_* series and the RSS of a node's /metrics (name with
// labels → value); nil when the node has none.
func ScrapeMetrics(addr string) map[string]float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "go_") && !strings.HasPrefix(line, "process_resident_memory_bytes") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m
}

// RuntimeDelta is the runtime's figures between two scrapes over requests
// answered; nil when either scrape is missing.
func RuntimeDelta(before, after map[string]float64, requests int64) *RuntimeStats {
	if before == nil || after == nil {
		return nil
	}
	d := func(name string) float64 { return after[name] - before[name] }
	share := func(a, b float64) float64 {
		if b <= 0 {
			return 0
		}
		return a / b
	}
	cpu := d("go_cpu_classes_total_cpu_seconds_total") - d("go_cpu_classes_idle_cpu_seconds_total")
	s := &RuntimeStats{
		GCCycles:       int64(d("go_gc_cycles_total_gc_cycles_total")),
		GCCPU:          share(d("go_cpu_classes_gc_total_cpu_seconds_total"), cpu),
		GCPauseMeanUs:  1e6 * share(d("go_sched_pauses_total_gc_seconds_sum"), d("go_sched_pauses_total_gc_seconds_count")),
		GCPauseTotalMs: 1e3 * d("go_sched_pauses_total_gc_seconds_sum"),
		SchedMeanUs:    1e6 * share(d("go_sched_latencies_seconds_sum"), d("go_sched_latencies_seconds_count")),
		RSSMB:          after["process_resident_memory_bytes"] / (1 << 20),
	}
	n := d("go_sched_latencies_seconds_count")
	s.SchedOver1ms = share(n-d(bucketAtMost(after, "go_sched_latencies_seconds", 0.001)), n)
	s.SchedOver10ms = share(n-d(bucketAtMost(after, "go_sched_latencies_seconds", 0.011)), n)
	if requests > 0 {
		s.AllocBytes = d("go_gc_heap_allocs_bytes_total") / float64(requests)
		s.AllocObjects = d("go_gc_heap_allocs_objects_total") / float64(requests)
	}
	return s
}

// bucketAtMost is the series name of the histogram's largest bucket bound
// not above limit.
func bucketAtMost(m map[string]float64, hist string, limit float64) string {
	best, bestLe := "", math.Inf(-1)
	prefix := hist + `_bucket{le="`
	for k := range m {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		le, err := strconv.ParseFloat(strings.TrimSuffix(k[len(prefix):], `"}`), 64)
		if err == nil && le <= limit && le > bestLe {
			best, bestLe = k, le
		}
	}
	return best
}

func (s *RuntimeStats) String() string {
	if s == nil {
		return ""
	}
	return fmt.Sprintf("  gc %d (%.1f%% cpu, pauses %.0fµs mean %.1fms total)  sched wait %.0fµs mean, %.2f%% >0.9ms, %.3f%% >10ms  alloc %.0fB %.0f objs/req  rss %.0fMB",
		s.GCCycles, 100*s.GCCPU, s.GCPauseMeanUs, s.GCPauseTotalMs, s.SchedMeanUs, 100*s.SchedOver1ms, 100*s.SchedOver10ms, s.AllocBytes, s.AllocObjects, s.RSSMB)
}

// metricsClient keeps no idle connections: an idle client socket would hold
// an ephemeral port, possibly one a node is about to listen on.
var metricsClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
