package feed

import (
	"sync"
	"time"
)

// Episode tracks a condition that is logged once when it starts and once
// when it ends, with how long it lasted and how often it was seen, instead
// of once per occurrence: a feed sending garbage five times a second, or
// refusing every reconnect, must not flood the log. Safe for concurrent use.
type Episode struct {
	mu    sync.Mutex
	on    bool
	since time.Time
	n     uint64
}

// Begin records one occurrence and reports whether it starts an episode
// (the caller logs it then).
func (e *Episode) Begin() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if e.on {
		return false
	}
	e.on, e.since, e.n = true, time.Now(), 1
	return true
}

// End closes the episode; ok is false when none was open. It returns how
// long the episode lasted and how many occurrences it had.
func (e *Episode) End() (ok bool, lasted time.Duration, n uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.on {
		return false, 0, 0
	}
	e.on = false
	return true, time.Since(e.since), e.n
}

// Since is when the open episode began (zero when none is open).
func (e *Episode) Since() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.on {
		return time.Time{}
	}
	return e.since
}
