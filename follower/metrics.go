package follower

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// MetricsHandler serves the follower's counters and latency quantiles in
// the Prometheus text format (for scraping; follower_status has the same).
func (f *Follower) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := f.Status()
		var b strings.Builder
		names := make([]string, 0, len(st.Counters))
		for k := range st.Counters {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(&b, "preconf_follower_%s %d\n", k, st.Counters[k])
		}
		for _, q := range []string{"p50", "p99", "max"} {
			fmt.Fprintf(&b, "preconf_follower_visible_latency_ms{quantile=%q} %g\n", q, st.LatencyMs[q])
		}
		up := func(ok bool) int {
			if ok {
				return 1
			}
			return 0
		}
		fmt.Fprintf(&b, "preconf_follower_feed_connected %d\n", up(st.FeedConnected))
		fmt.Fprintf(&b, "preconf_follower_upstream_ok %d\n", up(st.UpstreamError == ""))
		fmt.Fprintf(&b, "preconf_follower_head %d\n", uint64(st.Head))
		if st.Pending != nil {
			fmt.Fprintf(&b, "preconf_follower_pending_number %d\npreconf_follower_pending_index %d\npreconf_follower_pending_transactions %d\n",
				uint64(st.Pending.Number), uint64(st.Pending.Index), st.Pending.Txs)
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write([]byte(b.String()))
	})
}
