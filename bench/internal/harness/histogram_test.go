package harness

import (
	"strings"
	"testing"
	"time"
)

const metricsBefore = `# HELP x_seconds x
# TYPE x_seconds histogram
x_seconds_bucket{le="0.001"} 10
x_seconds_bucket{le="0.01"} 20
x_seconds_bucket{le="+Inf"} 20
x_seconds_sum 0.05
x_seconds_count 20
x_other 3
`

const metricsAfter = `x_seconds_bucket{le="0.001"} 10
x_seconds_bucket{le="0.01"} 119
x_seconds_bucket{le="+Inf"} 120
x_seconds_sum 0.55
x_seconds_count 120
`

func TestHistogramSince(t *testing.T) {
	before, err := ParseHistogram(strings.NewReader(metricsBefore), "x_seconds")
	if err != nil {
		t.Fatal(err)
	}
	after, err := ParseHistogram(strings.NewReader(metricsAfter), "x_seconds")
	if err != nil {
		t.Fatal(err)
	}
	// 100 new observations: 99 at ≤ 10 ms, one above; the mean is 5 ms.
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 10 * time.Millisecond}, {0.99, 10 * time.Millisecond}, {0.999, time.Duration(1<<63 - 1)}} {
		n, mean, got := after.Since(before, tc.q)
		if n != 100 || mean != 5*time.Millisecond || got != tc.want {
			t.Errorf("q %v: n %d mean %v bound %v, want 100 5ms %v", tc.q, n, mean, got, tc.want)
		}
	}
	if _, err := ParseHistogram(strings.NewReader(metricsAfter), "y_seconds"); err == nil {
		t.Error("a missing histogram parsed")
	}
}
