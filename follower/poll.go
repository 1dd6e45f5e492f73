package follower

import (
	"context"
	"errors"
	"time"

	"github.com/preconf/preconf/remote"
)

// The upstream's head is polled every Config.PollInterval (and quickly
// after a flashblock announces a block the upstream may not have yet). A
// poll that takes longer than Config.Stall is abandoned: a stalled upstream
// must not keep the poller waiting past the point where it is reported.
//
// Heads never go backwards here: an upstream that is a pool of nodes may
// answer from one a few blocks behind the one before. A lower head is
// ignored (counted as upstream_behind) unless every poll answers lower for
// lowerAccept: then the chain did shrink (a reorg to a shorter chain, or
// the pool lost its leading node) and the lower head is followed.

// lowerAccept is how long lower heads must persist to be followed.
const lowerAccept = 2 * time.Second

// After a flashblock of a block whose parent the upstream did not have, the
// head is polled every hurryInterval, hurryPolls times at most.
const (
	hurryInterval = 5 * time.Millisecond
	hurryPolls    = 40
)

func (f *Follower) pollHeads(ctx context.Context) {
	t := time.NewTicker(f.cfg.PollInterval)
	defer t.Stop()
	var (
		last  *remote.Head // the last head sent to the loop
		hurry int          // quick re-polls left: a flashblock announced a block the upstream may not have yet
	)
	if h := f.head.Load(); h != nil {
		last = h
	}
	for {
		var soon <-chan time.Time
		if hurry > 0 {
			soon = time.After(hurryInterval)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-f.pollNow:
			hurry = hurryPolls
		case <-soon:
			hurry--
		}
		h, err := f.pollHead(ctx)
		if err != nil {
			continue
		}
		if last != nil && h.Header.Number.Cmp(last.Header.Number) < 0 {
			if !f.acceptLower(h, last) {
				continue
			}
		} else {
			f.notLower()
		}
		if last != nil && last.Header.Hash() == h.Header.Hash() {
			continue
		}
		last, hurry = h, 0
		select {
		case f.events <- loopEvent{head: h}:
		case <-ctx.Done():
			return
		}
	}
}

// pollHead asks the upstream for its head within Config.Stall and records
// the outcome for Health; a failure is logged once per outage.
func (f *Follower) pollHead(ctx context.Context) (*remote.Head, error) {
	pctx, cancel := context.WithTimeout(ctx, f.cfg.Stall)
	h, err := f.client.HeadByNumber(pctx, "latest")
	cancel()
	if err == nil && h == nil {
		err = errors.New("upstream has no latest block")
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	now := time.Now()
	f.mu.Lock()
	prev := f.headErr
	f.headErr = err
	if err != nil && prev == nil {
		f.headDown = now
	}
	if err == nil {
		f.headOK = now
	}
	down := f.headDown
	f.mu.Unlock()
	switch {
	case err != nil && prev == nil:
		f.log.Warn("upstream head poll failed; retrying quietly", "upstream", f.client.Shown(), "err", f.redact(err.Error()))
	case err == nil && prev != nil:
		f.log.Info("upstream answers head polls again", "upstream", f.client.Shown(), "number", h.Header.Number, "down_for", now.Sub(down).Round(time.Millisecond))
	}
	return h, err
}

// acceptLower decides about a head below the last one followed: ignored
// (and counted) unless only lower answers came for lowerAccept. The
// episode is logged once, not per answer (a pool with a node behind
// answers lower every other poll).
func (f *Follower) acceptLower(h, last *remote.Head) bool {
	u := &f.up
	now := time.Now()
	u.lowerHeads.Add(1)
	u.lastLower = now
	if u.lowerRun.IsZero() {
		u.lowerRun = now
	}
	if u.behind.Begin() {
		f.log.Warn("upstream answered a head below its previous one (a node behind in a pool?); ignoring lower heads", "upstream", f.client.Shown(),
			"head", last.Header.Number, "answered", h.Header.Number)
	}
	if now.Sub(u.lowerRun) < lowerAccept {
		return false
	}
	u.lowerRun = time.Time{}
	f.log.Warn("upstream has answered only lower heads for a while; following it back", "upstream", f.client.Shown(),
		"from", last.Header.Number, "to", h.Header.Number)
	return true
}

// notLower: a head at or above the last one; the lower episode ends once
// no lower head came for lowerAccept.
func (f *Follower) notLower() {
	u := &f.up
	u.lowerRun = time.Time{}
	if u.lastLower.IsZero() || time.Since(u.lastLower) < lowerAccept {
		return
	}
	if ok, lasted, n := u.behind.End(); ok {
		f.log.Info("upstream answers at or above its previous head again", "upstream", f.client.Shown(), "lower_answers", n, "for", lasted.Round(time.Millisecond))
	}
}
