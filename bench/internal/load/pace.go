package load

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Pacing is how a paced run (Config.Think > 0) spends its pauses.
type Pacing string

const (
	// PaceFixed: every pause is Think, and every connection sends its
	// first request at the start, as wrk's delay() returning a constant.
	// The connections then stay in step: measured against a stub that
	// answers at once (32 connections, 10 ms), a request arrived with a
	// median 16 others within ±250 µs of it, against 1.4 for arrivals at
	// random (docs/bench.md, "Tails by two harnesses").
	PaceFixed Pacing = "fixed"
	// PaceExp: each pause, the first one before the connection's first
	// request included, is drawn from an exponential distribution of mean
	// Think, cut at 10 × Think (as TPC-C draws its think times): a
	// population of clients that each think a different time, whose
	// arrivals do not fall into step.
	PaceExp Pacing = "exp"
)

// ParsePacing checks a pacing's name.
func ParsePacing(s string) (Pacing, error) {
	switch p := Pacing(s); p {
	case PaceFixed, PaceExp:
		return p, nil
	}
	return "", fmt.Errorf("unknown pacing %q (want %q or %q)", s, PaceFixed, PaceExp)
}

// MaxThinks is the cut of an exponential pause, in means.
const MaxThinks = 10

// pacer draws one connection's pauses.
type pacer struct {
	mean  time.Duration
	pace  Pacing
	rng   *rand.Rand
	first bool
}

// newPacer paces connection conn; the seed makes a run's pauses repeatable.
func newPacer(think time.Duration, p Pacing, conn int) *pacer {
	return &pacer{mean: think, pace: p, rng: rand.New(rand.NewPCG(0x7a11, uint64(conn))), first: true}
}

// next is the pause before the connection's next request (0: none).
func (p *pacer) next() time.Duration {
	first := p.first
	p.first = false
	switch {
	case p.mean <= 0:
		return 0
	case p.pace == PaceExp:
		return min(time.Duration(p.rng.ExpFloat64()*float64(p.mean)), MaxThinks*p.mean)
	case first:
		return 0
	default:
		return p.mean
	}
}

// crowdWindow: two sends this close count as one crowd.
const crowdWindow = 250 * time.Microsecond

// crowd is, for each send, how many other sends (of any connection) fell
// within ±crowdWindow of it; sends must be sorted. It tells a run whose
// connections send in step (32 connections: up to 31) from arrivals at
// random (rate × 2 × crowdWindow).
func crowd(sends []int64) []int {
	out := make([]int, len(sends))
	lo, hi := 0, 0
	w := crowdWindow.Nanoseconds()
	for i, s := range sends {
		for sends[lo] < s-w {
			lo++
		}
		for hi < len(sends) && sends[hi] <= s+w {
			hi++
		}
		out[i] = hi - lo - 1
	}
	return out
}

// crowdQuantiles are the median and p90 of crowd(sends) (sends unsorted).
func crowdQuantiles(sends []int64) (p50, p90 float64) {
	if len(sends) == 0 {
		return 0, 0
	}
	slices.Sort(sends)
	c := crowd(sends)
	slices.Sort(c)
	q := func(f float64) float64 { return float64(c[min(len(c)-1, int(f*float64(len(c))))]) }
	return q(0.5), q(0.9)
}
