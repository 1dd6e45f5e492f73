package follower

import (
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/remote"
)

// Status is the follower's health, for operators and tests.
type Status struct {
	Upstream      string            `json:"upstream"`
	UpstreamError string            `json:"upstreamError,omitempty"`
	Feed          string            `json:"feed"`
	FeedConnected bool              `json:"feedConnected"`
	FeedError     string            `json:"feedError,omitempty"`
	Head          hexutil.Uint64    `json:"head"`
	HeadHash      common.Hash       `json:"headHash"`
	Pending       *PendingStatus    `json:"pending"`
	ExecError     string            `json:"execError,omitempty"`
	Proofs        string            `json:"proofs"`
	Counters      map[string]uint64 `json:"counters"`
	// LatencyMs are the received → visible quantiles over the last samples;
	// FirstLatencyMs the same for the blocks' first flashblocks alone (a
	// block boundary's freshness).
	LatencyMs      map[string]float64 `json:"latencyMs"`
	FirstLatencyMs map[string]float64 `json:"firstLatencyMs"`
}

// PendingStatus describes the published pending block.
type PendingStatus struct {
	Number hexutil.Uint64 `json:"number"`
	Index  hexutil.Uint64 `json:"index"`
	Txs    int            `json:"transactions"`
	Hash   common.Hash    `json:"hash"`
}

// Status reports the follower's state. URLs are shown as scheme and host
// only: a provider's key is often in the path or the query.
func (f *Follower) Status() Status {
	st := Status{Upstream: remote.RedactURL(f.cfg.Upstream), Feed: remote.RedactURL(f.cfg.Feed), Counters: f.metrics.Snapshot()}
	connected, ferr := f.feed.Status()
	st.FeedConnected = connected
	if ferr != nil && !connected {
		st.FeedError = f.redact(ferr.Error())
	}
	f.mu.Lock()
	if f.headErr != nil {
		st.UpstreamError = f.redact(f.headErr.Error())
	}
	if f.execErr != nil {
		st.ExecError = f.redact(f.execErr.Error())
	}
	st.Counters["exec_retryable_failures"] = f.execFails
	st.Counters["exec_invalid_flashblocks"] = f.invalid
	f.mu.Unlock()
	for c := range numCauses {
		st.Counters[causeCounters[c]] = f.episodes[c].Load()
	}
	st.Counters["upstream_lower_heads"] = f.up.lowerHeads.Load()
	if h := f.Head(); h != nil {
		st.Head, st.HeadHash = hexutil.Uint64(h.Number.Uint64()), h.Hash()
	}
	if s := f.src.Current(); s != nil && s.Header != nil {
		st.Pending = &PendingStatus{Number: hexutil.Uint64(s.Header.Number.Uint64()), Index: hexutil.Uint64(s.Index), Txs: len(s.Txs), Hash: s.Header.Hash()}
	}
	st.Counters["published"] = f.published.Load()
	st.Counters["upstream_requests"] = f.client.Requests.Load()
	st.Counters["upstream_calls"] = f.client.Calls.Load()
	st.Counters["upstream_failures"] = f.client.Failures.Load()
	st.Counters["state_fetches"] = f.shared.Fetches.Load()
	st.Counters["state_cache_hits"] = f.shared.Hits.Load()
	st.Counters["proofs_verified"] = f.shared.Verified.Load()
	st.Counters["block_hash_match"] = f.exec.matches.Load()
	st.Counters["block_hash_mismatch"] = f.exec.mismatches.Load()
	st.Counters["carried_over"] = f.exec.carried.Load()
	st.Counters["flashblock_fetch_rounds"] = f.exec.rounds.Load()
	st.Counters["ahead_opened"] = f.ahead.opened.Load()
	st.Counters["ahead_kept"] = f.ahead.kept.Load()
	st.Counters["ahead_dropped"] = f.ahead.dropped.Load()
	st.Counters["blocks_opened"] = f.exec.opens.opened.Load()
	st.Counters["blocks_opened_cold"] = f.exec.opens.cold.Load()
	st.Counters["open_state_fetches"] = f.exec.opens.fetched.Load()
	st.Counters["last_decode_us"] = uint64(f.exec.lastDecode.Load() / 1000)
	st.Counters["last_prefetch_us"] = uint64(f.exec.lastFetch.Load() / 1000)
	st.Counters["last_exec_us"] = uint64(f.exec.lastExec.Load() / 1000)
	st.Counters["last_snapshot_us"] = uint64(f.exec.lastSnap.Load() / 1000)
	switch f.shared.Mode() {
	case remote.ProofsAuto:
		st.Proofs = "auto"
		if !f.shared.ProofsNow() {
			st.Proofs = "auto: plain reads for now (the upstream answered eth_getProof with -32601; asked again every minute)"
		}
	case remote.ProofsRequired:
		st.Proofs = "required"
	default:
		st.Proofs = "off"
	}
	q, n := f.lat.quantiles(0.5, 0.99, 1)
	st.Counters["latency_samples"] = n
	st.LatencyMs = map[string]float64{"p50": ms(q[0]), "p99": ms(q[1]), "max": ms(q[2])}
	q, n = f.latFirst.quantiles(0.5, 0.99, 1)
	st.Counters["first_latency_samples"] = n
	st.FirstLatencyMs = map[string]float64{"p50": ms(q[0]), "p99": ms(q[1]), "max": ms(q[2])}
	return st
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// redact replaces the configured URLs in a message with RedactURL's form
// (the feed client's and the executor's errors may quote them).
func (f *Follower) redact(msg string) string {
	for _, u := range []string{f.cfg.Upstream, f.cfg.Feed} {
		if u != "" {
			msg = strings.ReplaceAll(msg, u, remote.RedactURL(u))
		}
	}
	return msg
}

// Published reports whether a pending snapshot was ever published.
func (f *Follower) Published() bool { return f.published.Load() > 0 }
