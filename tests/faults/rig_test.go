// Package faults_test runs a follower through the feed and upstream faults
// that operators of flashblocks replicas report (the anchors are in each
// test's comment), each fault in a test of its own, on loopback, bounded in
// time. A sequencer (100 ms flashblocks, 1 s blocks) serves a follower node
// whose feed passes a TCP proxy (freeze, reset, refuse) and a websocket
// proxy (message faults), and whose upstream passes a JSON-RPC proxy
// (stall, lag, a pool's node behind); 20 transfers a second flow. Each test
// checks that the follower never answers "pending" older than "latest"
// (counted over HTTP, eth_blockNumber and eth_getBlockByNumber), that every
// pending block it publishes is one the sequencer published, that no
// restart is needed, and logs what it measured on lines starting
// "FIGURE" (detection and recovery times, quoted in docs/follow.md).
package faults_test

import (
	"crypto/ecdsa"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/follower"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/sequencer"
	"github.com/preconf/preconf/tests/faultproxy"
	"github.com/preconf/preconf/tests/procs"
)

// The sequencer's cadence in these tests.
const (
	interval  = 100 * time.Millisecond
	blockTime = time.Second
)

// rig is one sequencer, one follower, the proxies between them, traffic and
// the invariant watchers.
type rig struct {
	t        *testing.T
	seq      *node.Node
	fol      atomic.Pointer[node.Node] // replaced by a restart
	url      atomic.Value              // the follower's HTTP URL (string)
	tcp      *faultproxy.TCP
	ws       *faultproxy.WS
	rpc      *faultproxy.RPC
	seqSeen  *seen
	viol     atomic.Int64 // pending older than latest, over HTTP
	samples  atomic.Int64
	readErrs atomic.Int64
	foreign  atomic.Int64 // follower snapshots the sequencer never published
	// foreignOK: the test makes the follower pre-confirm what the sequencer
	// never did (a sealed block that differs); counted, not an error
	foreignOK atomic.Bool
	checked   atomic.Int64
	// observe, if set before the follower starts, is its Config.Observe
	observe func(*pending.Snapshot, time.Duration)
	// lag samples: how many flashblocks the follower's pending block is
	// behind the sequencer's, every 2 ms
	lagSamples, lagged atomic.Int64 // samples, and those 2 or more behind
	maxBehind          atomic.Int64
	mu                 sync.Mutex
	errs               []string
}

// newRig starts everything; it is torn down when the test ends.
func newRig(t *testing.T) *rig {
	t.Helper()
	r := newBase(t)
	r.proxies(r.seq.URL())
	r.startFollower()
	r.sampleLag()
	r.watchInvariant()
	r.waitFor("the follower's first pending block", func() bool { return r.follower().Pending.Current() != nil })
	return r
}

// newBase starts the sequencer in process and the traffic.
func newBase(t *testing.T) *rig {
	t.Helper()
	r := &rig{t: t}
	g, err := chain.DevL2Genesis()
	if err != nil {
		t.Fatal(err)
	}
	r.seq, err = node.New(node.Config{Genesis: g, HTTPAddr: "127.0.0.1", Sequencer: &sequencer.Config{BlockTime: blockTime, Interval: interval}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.seq.Start(nil); err != nil {
		r.seq.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { r.seq.Close() })
	r.seqSeen = watchSeen(t, r.seq.Pending)
	r.traffic(r.seq.URL(), r.seq.Chain.Config().ChainID)
	return r
}

// proxies starts the proxies in front of the sequencer at seqURL.
func (r *rig) proxies(seqURL string) {
	t := r.t
	var err error
	if r.ws, err = faultproxy.NewWS("ws" + strings.TrimPrefix(seqURL, "http") + "/flashblocks"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.ws.Close)
	if r.tcp, err = faultproxy.NewTCP(r.ws.Addr()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.tcp.Close)
	if r.rpc, err = faultproxy.NewRPC(seqURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.rpc.Close)
}

// feedURL is the follower's feed: through the proxies, with the block
// replayed on connect.
func (r *rig) feedURL() string { return "ws://" + r.tcp.Addr() + "/?replay=block" }

// startFollower starts (or restarts) the follower node with the default
// liveness settings; its feed asks for the block's replay on connect.
func (r *rig) startFollower() {
	t := r.t
	if old := r.follower(); old != nil {
		old.Close()
	}
	fn, err := node.New(node.Config{HTTPAddr: "127.0.0.1", Follow: &follower.Config{
		Upstream: r.rpc.URL(), Feed: r.feedURL(), Chain: r.seq.Chain.Config(),
		UpstreamTimeout: 2 * time.Second, Observe: r.observe,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := fn.Start(nil); err != nil {
		fn.Close()
		t.Fatal(err)
	}
	r.fol.Store(fn)
	r.url.Store(fn.URL())
	t.Cleanup(func() { fn.Close() })
	r.checkSnapshots(fn)
}

// follower is the current follower node.
func (r *rig) follower() *node.Node { return r.fol.Load() }

// traffic sends a transfer every 50 ms to the sequencer until the test ends.
func (r *rig) traffic(seqURL string, chainID *big.Int) {
	signer := types.LatestSignerForChainID(chainID)
	var keys []*ecdsa.PrivateKey
	for _, k := range chain.DevKeys[:4] {
		key, _ := crypto.HexToECDSA(k)
		keys = append(keys, key)
	}
	nonces := make([]uint64, len(keys))
	i := 0
	r.every(50*time.Millisecond, func() bool {
		i++
		k := i % len(keys)
		to := common.Address{0x70, byte(i)}
		tx := types.MustSignNewTx(keys[k], signer, &types.DynamicFeeTx{ChainID: signer.ChainID(), Nonce: nonces[k],
			GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(50e9), Gas: 21000, To: &to, Value: big.NewInt(int64(1 + i))})
		raw, _ := tx.MarshalBinary()
		if _, err := call(seqURL, "eth_sendRawTransaction", hexutil.Bytes(raw)); err != nil {
			r.fail("send: %v", err)
			return false
		}
		nonces[k]++
		return true
	})
}

// every runs f every period (f returns false to stop) until the test ends.
func (r *rig) every(period time.Duration, f func() bool) {
	stop := make(chan struct{})
	done := make(chan struct{})
	r.t.Cleanup(func() { close(stop); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if !f() {
				return
			}
		}
	}()
}

func (r *rig) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) < 20 {
		r.errs = append(r.errs, fmt.Sprintf(format, args...))
	}
}

// seen records the header hashes of every snapshot a source publishes.
type seen struct {
	mu     sync.Mutex
	hashes map[common.Hash]bool
	first  uint64    // the first block seen whole (from index 0)
	last   time.Time // when the last snapshot was recorded
}

func watchSeen(t *testing.T, src *pending.Source) *seen {
	s := &seen{hashes: make(map[common.Hash]bool)}
	ch, stop := src.Subscribe(1 << 12)
	done := make(chan struct{})
	t.Cleanup(func() { stop(); close(done) })
	go func() {
		for {
			select {
			case snap := <-ch:
				if snap != nil {
					s.mu.Lock()
					s.hashes[snap.Header.Hash()] = true
					if s.first == 0 && snap.Index == 0 {
						s.first = snap.Header.Number.Uint64()
					}
					s.last = time.Now()
					s.mu.Unlock()
				}
			case <-done:
				return
			}
		}
	}()
	return s
}

// has reports whether the header's hash was published by the time at
// (when the follower published it): it waits until the recorder has
// recorded a snapshot after at (the sequencer publishes every interval),
// at most 5 s. Blocks before the first one recorded whole are taken as
// published.
func (s *seen) has(h *types.Header, at time.Time) bool {
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		ok := s.hashes[h.Hash()] || s.first == 0 || h.Number.Uint64() < s.first
		past := s.last.After(at)
		s.mu.Unlock()
		if ok || past || time.Now().After(deadline) {
			return ok
		}
		time.Sleep(time.Millisecond)
	}
}

// checkSnapshots checks that every pending block the follower publishes is
// one the sequencer published (same header hash: same environment,
// transactions, receipts and claimed state root).
func (r *rig) checkSnapshots(fn *node.Node) {
	ch, stop := fn.Pending.Subscribe(1 << 12)
	done := make(chan struct{})
	r.t.Cleanup(func() { stop(); close(done) })
	go func() {
		for {
			select {
			case snap := <-ch:
				if snap == nil {
					continue
				}
				if !r.seqSeen.has(snap.Header, time.Now()) {
					r.foreign.Add(1)
					if r.foreignOK.Load() {
						continue
					}
					r.fail("follower published block %d index %d (%s), which the sequencer never did", snap.Header.Number, snap.Index, snap.Header.Hash())
				}
				r.checked.Add(1)
			case <-done:
				return
			}
		}
	}()
}

// blockRef is a block's number and hash (null for a pending block, as
// go-ethereum answers).
type blockRef struct {
	Number hexutil.Uint64 `json:"number"`
	Hash   *common.Hash   `json:"hash"`
}

// watchInvariant reads, every 20 ms until the test ends, eth_blockNumber,
// the latest block and the pending block, in that order, and counts the
// answers where pending is older than latest: a pending block below either
// latest, or at latest's height but not latest itself.
func (r *rig) watchInvariant() {
	r.every(20*time.Millisecond, func() bool {
		url := r.url.Load().(string)
		var n hexutil.Uint64
		var latest, pend *blockRef
		err := callInto(url, &n, "eth_blockNumber")
		if err == nil {
			err = callInto(url, &latest, "eth_getBlockByNumber", "latest", false)
		}
		if err == nil {
			err = callInto(url, &pend, "eth_getBlockByNumber", "pending", false)
		}
		if err != nil {
			// the follower may be restarting or its upstream down
			if r.readErrs.Add(1) == 1 {
				r.t.Logf("invariant read: %v", err)
			}
			return true
		}
		if latest == nil || pend == nil || latest.Hash == nil {
			// null: the block could not be read (an upstream down or
			// behind): no answer, not an older one
			r.readErrs.Add(1)
			return true
		}
		r.samples.Add(1)
		if pend.Number < n || pend.Number < latest.Number || (pend.Number == latest.Number && (pend.Hash == nil || *pend.Hash != *latest.Hash)) {
			r.viol.Add(1)
			r.fail("pending older than latest: eth_blockNumber %d, latest %d (%s), pending %d (%v)", n, latest.Number, latest.Hash, pend.Number, pend.Hash)
		}
		return true
	})
}

// sampleLag measures, every 2 ms until the test ends, how many flashblocks
// the follower's pending block is behind the sequencer's (a block is
// blockTime/interval flashblocks; no pending block counts as the end of
// the follower's head).
func (r *rig) sampleLag() {
	per := int64(blockTime / interval)
	r.every(2*time.Millisecond, func() bool {
		s, fol := r.seq.Pending.Current(), r.follower()
		if s == nil || fol == nil {
			return true
		}
		seqAt := s.Header.Number.Int64()*per + int64(s.Index)
		var folAt int64
		if f := fol.Pending.Current(); f != nil {
			folAt = f.Header.Number.Int64()*per + int64(f.Index)
		} else if h := fol.Follower.Head(); h != nil {
			folAt = (h.Number.Int64()+1)*per - 1
		}
		behind := seqAt - folAt
		r.lagSamples.Add(1)
		if behind >= 2 {
			r.lagged.Add(1)
		}
		for {
			m := r.maxBehind.Load()
			if behind <= m || r.maxBehind.CompareAndSwap(m, behind) {
				break
			}
		}
		return true
	})
}

// done checks the invariants and logs the counts.
func (r *rig) done() {
	r.t.Helper()
	r.mu.Lock()
	errs := r.errs
	r.mu.Unlock()
	for _, e := range errs {
		r.t.Error(e)
	}
	var st struct{ Counters map[string]uint64 }
	callInto(r.url.Load().(string), &st, "follower_status")
	r.t.Logf("FIGURE %s invariant_samples=%d failed_reads=%d pending_older_than_latest=%d snapshots_checked=%d foreign=%d lag_samples=%d two_or_more_behind=%.1f%% max_behind=%d counters=%v",
		r.t.Name(), r.samples.Load(), r.readErrs.Load(), r.viol.Load(), r.checked.Load(), r.foreign.Load(), r.lagSamples.Load(),
		100*float64(r.lagged.Load())/float64(max(r.lagSamples.Load(), 1)), r.maxBehind.Load(), st.Counters)
	if r.samples.Load() == 0 || (r.follower() != nil && r.checked.Load() == 0) {
		r.t.Errorf("nothing checked: %d invariant samples, %d snapshots", r.samples.Load(), r.checked.Load())
	}
}

// waitFor polls cond every millisecond for up to 60 s.
func (r *rig) waitFor(what string, cond func() bool) time.Time {
	r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			raw, err := call(r.url.Load().(string), "follower_status")
			r.t.Fatalf("timed out waiting for %s (follower_status %s %v)", what, raw, err)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Now()
}

// caughtUp waits until the follower's pending block is the sequencer's and
// returns the time since from.
func (r *rig) caughtUp(from time.Time) time.Duration {
	r.t.Helper()
	at := r.waitFor("the follower's pending block to be the sequencer's", func() bool {
		s, f := r.seq.Pending.Current(), r.follower().Pending.Current()
		return s != nil && f != nil && s.Header.Hash() == f.Header.Hash()
	})
	return at.Sub(from)
}

// health is the follower's /health answer.
func (r *rig) health() (int, string) {
	resp, err := http.Get(r.follower().URL() + "/health")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// unhealthy waits until /health answers 503 naming want and returns the
// time since from.
func (r *rig) unhealthy(from time.Time, want string) time.Duration {
	r.t.Helper()
	at := r.waitFor("/health to name "+want, func() bool {
		code, body := r.health()
		return code == http.StatusServiceUnavailable && strings.Contains(body, want)
	})
	return at.Sub(from)
}

// healthy waits until /health answers 200 and returns the time since from.
func (r *rig) healthy(from time.Time) time.Duration {
	r.t.Helper()
	at := r.waitFor("/health to answer 200", func() bool {
		code, _ := r.health()
		return code == http.StatusOK
	})
	return at.Sub(from)
}

// counter is one of the follower's status counters (follower_status).
func (r *rig) counter(name string) uint64 {
	var st struct{ Counters map[string]uint64 }
	if err := callInto(r.url.Load().(string), &st, "follower_status"); err != nil {
		r.t.Fatalf("follower_status: %v", err)
	}
	return st.Counters[name]
}

// counters are some of the follower's status counters, in order.
func (r *rig) counters(names ...string) []uint64 {
	var st struct{ Counters map[string]uint64 }
	if err := callInto(r.url.Load().(string), &st, "follower_status"); err != nil {
		r.t.Fatalf("follower_status: %v", err)
	}
	out := make([]uint64, len(names))
	for i, n := range names {
		out[i] = st.Counters[n]
	}
	return out
}

// settle lets the fault act for d while the watchers run.
func settle(d time.Duration) { time.Sleep(d) }

// call and callInto are procs' JSON-RPC helpers.
var (
	call     = procs.Call
	callInto = procs.CallInto
)
