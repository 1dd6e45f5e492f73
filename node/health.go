package node

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/preconf/preconf/sequencer"
)

// Health thresholds.
const (
	// staleIntervals: a sequencing node whose newest flashblock is older
	// than this many flashblock intervals (and at least minStale) is
	// unhealthy: its loop is stuck even if it has not failed.
	staleIntervals = 25
)

// minStale is the least snapshot age that is stale (a variable for tests).
var minStale = 5 * time.Second

// Health lists what is wrong with the node (nil: healthy): the sequencer
// loop has stopped, the pending snapshot is stale, or a follower's feed is
// silent, its upstream not answering or behind the feed (for longer than
// its --flashblocks.stall).
func (n *Node) Health() []string {
	var reasons []string
	if n.Sequencer != nil {
		if err := n.Sequencer.Err(); err != nil {
			reasons = append(reasons, "sequencer stopped: "+err.Error())
		} else if limit := max(staleIntervals*cmp.Or(max(n.cfg.Sequencer.Interval, 0), sequencer.DefaultInterval), minStale); n.snaps != nil {
			if age := n.snaps.age(); age > limit {
				reasons = append(reasons, fmt.Sprintf("pending snapshot is %s old (limit %s)", age.Round(time.Millisecond), limit))
			}
		}
	}
	if n.Follower != nil {
		reasons = append(reasons, n.Follower.Health()...)
	}
	return reasons
}

// Ready lists why a load balancer should not send requests here yet (nil:
// ready): the node is unhealthy, shutting down, has no pending state yet
// although it will have some (a sequencer or a follower), or its state
// snapshot is being generated (after a crash: the node answers, from the
// trie, an order of magnitude slower on a big state until it is done).
func (n *Node) Ready() []string {
	reasons := n.Health()
	if n.draining.Load() {
		reasons = append(reasons, "shutting down")
	}
	if n.Chain != nil && n.Chain.SnapshotGenerating() {
		reasons = append(reasons, "state snapshot being generated: reads are answered from the trie, slower")
	}
	// A follower's pending block is empty for a moment at a block boundary
	// when the next block's first flashblock is late: only the first one
	// makes it ready.
	if (n.Sequencer != nil && n.Pending.Current() == nil) || (n.Follower != nil && !n.Follower.Published()) {
		reasons = append(reasons, "no pending state yet")
	}
	return reasons
}

// statusHandler answers GET/HEAD with 200 {"status":ok} or 503
// {"status":bad,"reasons":[…]}.
func statusHandler(check func() []string, ok, bad string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		reasons := check()
		if len(reasons) == 0 {
			json.NewEncoder(w).Encode(map[string]string{"status": ok})
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]any{"status": bad, "reasons": reasons})
	})
}
