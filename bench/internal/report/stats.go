package report

import (
	"fmt"
	"math"
	"slices"
)

// MedianCI is a confidence interval for the median of the distribution v
// was drawn from, with no assumption about its shape: the k-th smallest and
// k-th largest values, k the largest rank for which a median outside them
// has probability ≤ 1-conf (each side ≤ (1-conf)/2: fewer than k of n fair
// coin flips). coverage is the interval's exact level (≥ conf). ok is false
// when v is too short for any interval at that level (n < 6 at 95 %).
func MedianCI(v []float64, conf float64) (lo, hi, coverage float64, ok bool) {
	n := len(v)
	s := slices.Clone(v)
	slices.Sort(s)
	tail := 0.0 // P(fewer than k heads in n flips)
	k := 0
	for j := 0; j < n/2; j++ {
		next := tail + binomHalf(n, j)
		if next > (1-conf)/2 {
			break
		}
		tail, k = next, j+1
	}
	if k == 0 {
		return 0, 0, 0, false
	}
	return s[k-1], s[n-k], 1 - 2*tail, true
}

// binomHalf is P(X = j) for X ~ Binomial(n, 1/2).
func binomHalf(n, j int) float64 {
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
	return math.Exp(lg(n) - lg(j) - lg(n-j) - float64(n)*math.Ln2)
}

// CIText is "lo–hi" of medianCI at 95 % (or why there is none).
func CIText(v []float64) string {
	lo, hi, _, ok := MedianCI(v, 0.95)
	if !ok {
		return fmt.Sprintf("%d pairs: too few", len(v))
	}
	return fmt.Sprintf("%.3f–%.3f", lo, hi)
}

// RatioVerdict says where 1.0 lies against the 95 % interval of v's median.
func RatioVerdict(v []float64, above, below string) string {
	lo, hi, _, ok := MedianCI(v, 0.95)
	switch {
	case !ok:
		return "not measured (too few pairs for an interval)"
	case lo > 1:
		return above + " (the interval lies above 1)"
	case hi < 1:
		return below + " (the interval lies below 1)"
	}
	return "neither faster nor slower measurably (the interval holds 1)"
}
