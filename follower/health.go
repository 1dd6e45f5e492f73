package follower

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/preconf/preconf/follower/feed"
	"github.com/preconf/preconf/remote"
)

// DefaultStall is how long the feed may stay silent, the upstream leave a
// head poll unanswered, or the upstream stay behind the feed before the
// follower says it is unhealthy (Config.Stall): flashblocks come every
// 200-250 ms, so a second is four or five missed ones.
const DefaultStall = time.Second

// A cause of ill health, watched so that each episode is logged once and
// counted.
type cause int

const (
	causeFeed     cause = iota // the feed is silent or disconnected
	causeUpstream              // the upstream does not answer head polls
	causeLag                   // the upstream's head is behind the feed
	numCauses
)

var causeCounters = [numCauses]string{"feed_stalls", "upstream_stalls", "upstream_lags"}

// upstreamWatch is what the head poller records about the upstream
// (lowerRun and lastLower are the poller's alone).
type upstreamWatch struct {
	lowerHeads          atomic.Uint64 // heads below the one followed, ignored
	behind              feed.Episode  // lower heads keep coming
	lowerRun, lastLower time.Time
}

// Health says what has been wrong for longer than Config.Stall, naming the
// cause (nil: healthy): the feed silent or disconnected, the upstream not
// answering head polls, or the upstream's head behind the blocks the feed
// is pre-confirming. It recovers by itself when the cause goes away.
func (f *Follower) Health() []string {
	var reasons []string
	for c := range numCauses {
		if r := f.check(c, time.Now()); r != "" {
			reasons = append(reasons, r)
		}
	}
	return reasons
}

// check is one cause's reason, or "" when it is fine.
func (f *Follower) check(c cause, now time.Time) string {
	stall := f.cfg.Stall
	f.mu.Lock()
	started, headErr, headOK := f.started, f.headErr, f.headOK
	f.mu.Unlock()
	if started.IsZero() {
		return ""
	}
	switch c {
	case causeFeed:
		last := f.feed.LastFrame()
		if last.Before(started) {
			last = started
		}
		silent := now.Sub(last)
		if silent <= stall {
			return ""
		}
		if connected, err := f.feed.Status(); !connected {
			msg := fmt.Sprintf("flashblocks feed %s disconnected, no flashblock for %s", remote.RedactURL(f.cfg.Feed), silent.Round(100*time.Millisecond))
			if err != nil {
				msg += ": " + f.redact(err.Error())
			}
			return msg
		}
		return fmt.Sprintf("flashblocks feed %s connected but silent for %s", remote.RedactURL(f.cfg.Feed), silent.Round(100*time.Millisecond))
	case causeUpstream:
		if headOK.Before(started) {
			headOK = started
		}
		if d := now.Sub(headOK); d > stall {
			msg := fmt.Sprintf("upstream %s has not answered a head poll for %s", remote.RedactURL(f.cfg.Upstream), d.Round(100*time.Millisecond))
			if headErr != nil {
				msg += ": " + f.redact(headErr.Error())
			}
			return msg
		}
	case causeLag:
		since := f.lagSince.Load()
		if since == 0 {
			return ""
		}
		if d := now.Sub(time.Unix(0, since)); d > stall {
			var head uint64
			if h := f.Head(); h != nil {
				head = h.Number.Uint64()
			}
			return fmt.Sprintf("upstream %s is behind the feed: its head is block %d, the feed pre-confirms block %d (for %s)",
				remote.RedactURL(f.cfg.Upstream), head, f.tip.Load(), d.Round(100*time.Millisecond))
		}
	}
	return ""
}

// noteTip records a flashblock index 0 for block n, and whether the
// upstream's head is behind the feed (the feed's newest block is more
// than one past it). Called on the loop.
func (f *Follower) noteTip(n uint64) {
	if n > f.tip.Load() {
		f.tip.Store(n)
	}
	f.noteLag()
}

// noteLag updates lagSince after the head or the tip moved (loop only).
func (f *Follower) noteLag() {
	h := f.Head()
	behind := h != nil && f.tip.Load() > h.Number.Uint64()+1
	switch {
	case behind && f.lagSince.Load() == 0:
		f.lagSince.Store(time.Now().UnixNano())
	case !behind:
		f.lagSince.Store(0)
	}
}

// watch logs each episode of ill health once when it starts and once when
// it ends, and counts the episodes, checking every quarter of Config.Stall.
func (f *Follower) watch(ctx context.Context) {
	t := time.NewTicker(max(f.cfg.Stall/4, 10*time.Millisecond))
	defer t.Stop()
	var since [numCauses]time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		for c := range numCauses {
			r := f.check(c, now)
			switch {
			case r != "" && since[c].IsZero():
				since[c] = now
				f.episodes[c].Add(1)
				f.log.Warn("follower unhealthy", "reason", r)
			case r == "" && !since[c].IsZero():
				f.log.Info("follower healthy again", "was", causeCounters[c], "for", now.Sub(since[c]).Round(time.Millisecond))
				since[c] = time.Time{}
			}
		}
	}
}
