package report

import (
	"math"
	"testing"
)

// TestMedianCI checks the ranks and levels against the published table of
// distribution-free 95 % intervals for a median (the k-th smallest to the
// k-th largest of n).
func TestMedianCI(t *testing.T) {
	for _, tc := range []struct {
		n, k     int
		coverage float64
	}{
		{5, 0, 0}, // too few: even min–max covers only 93.75 %
		{6, 1, 0.96875},
		{10, 2, 0.97852},
		{12, 3, 0.96143},
		{20, 6, 0.95861},
		{24, 7, 0.97734},
	} {
		v := make([]float64, tc.n)
		for i := range v {
			v[i] = float64((i*7)%tc.n + 1) // 1..n, shuffled
		}
		lo, hi, cov, ok := MedianCI(v, 0.95)
		if ok != (tc.k > 0) {
			t.Fatalf("n=%d: ok=%v", tc.n, ok)
		}
		if !ok {
			continue
		}
		if lo != float64(tc.k) || hi != float64(tc.n-tc.k+1) || math.Abs(cov-tc.coverage) > 5e-6 {
			t.Errorf("n=%d: [%v, %v] at %.5f, want [%d, %d] at %.5f", tc.n, lo, hi, cov, tc.k, tc.n-tc.k+1, tc.coverage)
		}
	}
}

func TestMedian(t *testing.T) {
	if got := Median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median odd = %v", got)
	}
	if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median even = %v", got)
	}
}
