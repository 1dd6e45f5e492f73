package harness

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

// Histogram is one Prometheus histogram's cumulative buckets.
type Histogram struct {
	bounds []float64 // seconds, ascending; +Inf last
	counts []float64
	sum    float64
	count  float64
}

// ScrapeHistograms reads histograms from the node's /metrics.
func ScrapeHistograms(addr string, names []string) ([]Histogram, error) {
	resp, err := ProbeClient.Get("http://" + addr + "/metrics")
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
	out := make([]Histogram, len(names))
	for i, name := range names {
		if out[i], err = ParseHistogram(bytes.NewReader(raw), name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func ParseHistogram(r io.Reader, name string) (Histogram, error) {
	var h Histogram
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
		return h, fmt.Errorf("/metrics has no Histogram %s", name)
	}
	return h, nil
}

// Since is what was observed between before and h: the count, the mean and
// the upper bound of the bucket holding quantile q (+Inf: above the last).
func (h Histogram) Since(before Histogram, q float64) (int, time.Duration, time.Duration) {
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
