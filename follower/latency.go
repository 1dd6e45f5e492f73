package follower

import (
	"slices"
	"sync"
	"time"
)

// latencies keeps the last samples of flashblock-received → visible times.
type latencies struct {
	mu    sync.Mutex
	ring  []time.Duration
	next  int
	full  bool
	count uint64
}

const latencySamples = 4096

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	if l.ring == nil {
		l.ring = make([]time.Duration, latencySamples)
	}
	l.ring[l.next] = d
	l.next++
	if l.next == len(l.ring) {
		l.next, l.full = 0, true
	}
	l.count++
	l.mu.Unlock()
}

// quantiles returns the requested quantiles (0..1) of the kept samples and
// how many samples were ever recorded.
func (l *latencies) quantiles(qs ...float64) ([]time.Duration, uint64) {
	l.mu.Lock()
	n := l.next
	if l.full {
		n = len(l.ring)
	}
	s := slices.Clone(l.ring[:n])
	count := l.count
	l.mu.Unlock()
	out := make([]time.Duration, len(qs))
	if len(s) == 0 {
		return out, count
	}
	slices.Sort(s)
	for i, q := range qs {
		k := int(q*float64(len(s)-1) + 0.5)
		out[i] = s[min(max(k, 0), len(s)-1)]
	}
	return out, count
}
