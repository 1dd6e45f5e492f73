package follower_test

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/follower"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/remote"
)

type snapKey struct {
	payload [8]byte
	index   uint64
}

// recorder keeps every snapshot the sequencer publishes.
type recorder struct {
	mu    sync.Mutex
	snaps map[snapKey]*pending.Snapshot
	n     atomic.Int64
}

func record(t *testing.T, src *pending.Source) *recorder {
	r := &recorder{snaps: make(map[snapKey]*pending.Snapshot)}
	ch, stop := src.Subscribe(1 << 14)
	if cur := src.Current(); cur != nil { // published before we subscribed
		r.snaps[snapKey{cur.PayloadID, cur.Index}] = cur
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-ch:
				if s != nil {
					r.mu.Lock()
					r.snaps[snapKey{s.PayloadID, s.Index}] = s
					r.mu.Unlock()
					r.n.Add(1)
				}
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() { stop(); close(done) })
	return r
}

func (r *recorder) get(k snapKey) *pending.Snapshot {
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.mu.Lock()
		s := r.snaps[k]
		r.mu.Unlock()
		if s != nil || time.Now().After(deadline) {
			return s
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checker compares every snapshot a follower publishes with the
// sequencer's snapshot of the same flashblock.
type checker struct {
	name     string
	compared atomic.Int64
	withTxs  atomic.Int64 // snapshots holding user transactions
	// deposits compared in the flashblock that brought them: blocks'
	// L1-attributes deposits and injected user deposits
	l1Deposits, userDeposits atomic.Int64
	// outage is set while the test keeps the follower's upstream down: a
	// snapshot published before it but checked during it (the checker lags
	// under load) cannot be read back where the follower has not cached it
	// yet; such a read fails with remote.ErrUnavailable, which is no
	// divergence, and is counted in unverified instead.
	outage     atomic.Bool
	unverified atomic.Int64
	mu         sync.Mutex
	errs       []error
}

func (c *checker) fail(err error) {
	c.mu.Lock()
	c.errs = append(c.errs, err)
	c.mu.Unlock()
}

func (c *checker) errors() []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]error(nil), c.errs...)
}

func check(t *testing.T, name string, src *pending.Source, seq *recorder) *checker {
	c := &checker{name: name}
	ch, stop := src.Subscribe(1 << 14)
	done := make(chan struct{})
	go func() {
		for {
			var s *pending.Snapshot
			select {
			case s = <-ch:
			case <-done:
				return
			}
			if s == nil {
				continue
			}
			want := seq.get(snapKey{s.PayloadID, s.Index})
			if want == nil {
				c.fail(fmt.Errorf("%s: flashblock %x/%d unknown to the sequencer", name, s.PayloadID, s.Index))
				continue
			}
			if s.Header.Hash() != want.Header.Hash() || len(s.Txs) != len(want.Txs) || s.Parent.Hash() != want.Parent.Hash() {
				c.fail(fmt.Errorf("%s: block %d flashblock %d: header %s (%d txs), sequencer %s (%d txs)", name, s.Header.Number, s.Index, s.Header.Hash(), len(s.Txs), want.Header.Hash(), len(want.Txs)))
				continue
			}
			for i, r := range s.Receipts {
				w := want.Receipts[i]
				if r.Status != w.Status || r.CumulativeGasUsed != w.CumulativeGasUsed || len(r.Logs) != len(w.Logs) || r.TxHash != w.TxHash ||
					!sameBig(r.L1Fee, w.L1Fee) || !sameBig(r.L1GasUsed, w.L1GasUsed) || !sameU64(r.DepositNonce, w.DepositNonce) {
					c.fail(fmt.Errorf("%s: receipt %d differs", name, i))
				}
				if i >= len(s.Txs)-s.NewTxs && s.Txs[i].IsDepositTx() {
					if i == 0 {
						c.l1Deposits.Add(1)
					} else {
						c.userDeposits.Add(1)
					}
				}
			}
			if err := sameState(s.State, want.State); err != nil {
				if c.outage.Load() && errors.Is(err, remote.ErrUnavailable) {
					c.unverified.Add(1)
					continue
				}
				c.fail(fmt.Errorf("%s: block %d flashblock %d: %w", name, s.Header.Number, s.Index, err))
				continue
			}
			c.compared.Add(1)
			for _, tx := range s.Txs {
				if !tx.IsDepositTx() { // every OP-stack block holds a deposit
					c.withTxs.Add(1)
					break
				}
			}
		}
	}()
	t.Cleanup(func() { stop(); close(done) })
	return c
}

func startFollower(t *testing.T, n *node.Node, upstream, feedURL string) (*follower.Follower, *pending.Source) {
	t.Helper()
	return startFollowerWith(t, n, upstream, feedURL, remote.ProofsAuto)
}

// startFollowerWith is startFollower with a proof mode.
func startFollowerWith(t *testing.T, n *node.Node, upstream, feedURL string, proofs remote.Proofs) (*follower.Follower, *pending.Source) {
	t.Helper()
	src := new(pending.Source)
	f, err := follower.New(follower.Config{
		Upstream: upstream, Feed: feedURL, Chain: n.Chain.Config(), Proofs: proofs,
		PollInterval: 20 * time.Millisecond, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
		PingInterval: time.Second, UpstreamTimeout: 2 * time.Second,
	}, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.CheckUpstream(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.Start()
	t.Cleanup(func() { f.Stop() })
	return f, src
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// traffic sends transactions until stop is closed.
func traffic(t *testing.T, s *sender, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var n uint64
		for {
			select {
			case <-stop:
				return
			case <-time.After(15 * time.Millisecond):
			}
			n++
			if err := s.send(int(n)%len(s.keys), n%3 == 0, n); err != nil {
				t.Errorf("send: %v", err)
				return
			}
			if n%10 == 0 && s.deposits {
				if err := s.deposit(n); err != nil {
					t.Errorf("deposit: %v", err)
					return
				}
				s.depositsSent.Add(1)
			}
		}
	}()
	return &wg
}

func noErrors(t *testing.T, cs ...*checker) {
	t.Helper()
	for _, c := range cs {
		for _, err := range c.errors() {
			t.Error(err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestFollowersMatchSequencer runs a sequencing dev node, two followers (one
// behind a fault-injecting feed proxy and a killable upstream proxy, reading
// with proofs; one direct with brotli frames, reading without: --proofs
// off), streams transactions, and checks after every
// flashblock each follower publishes that its pending state equals the
// sequencer's; then it drops, duplicates and reorders feed messages, kills
// and restarts the feed, and kills the upstream, checking the errors and the
// recovery.
func TestFollowersMatchSequencer(t *testing.T) {
	n, feedURL := sequencerNode(t, time.Second, 100*time.Millisecond)
	seq := record(t, n.Pending)
	proxy := newFaultProxy(t, feedURL)
	up := newSwitchProxy(t, n.URL())
	f1, src1 := startFollower(t, n, up.srv.URL, proxy.url())
	f2, src2 := startFollowerWith(t, n, n.URL(), feedURL+"?compress=brotli", remote.ProofsOff)
	c1 := check(t, "follower1", src1, seq)
	c2 := check(t, "follower2", src2, seq)

	s := newSender(t, n.URL(), n.Chain.Config().ChainID, 6)
	s.deposits = true
	stop := make(chan struct{})
	wg := traffic(t, s, stop)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	// 1. clean streaming
	waitFor(t, "both followers to match 20 flashblocks with transactions", 60*time.Second, func() bool {
		return c1.withTxs.Load() >= 20 && c2.withTxs.Load() >= 20
	})
	noErrors(t, c1, c2)
	if v1, v2 := f1.Status().Counters["proofs_verified"], f2.Status().Counters["proofs_verified"]; v1 == 0 || v2 != 0 {
		t.Fatalf("proofs verified: %d with proofs, %d without", v1, v2)
	}

	// 2. dropped, duplicated and reordered messages
	proxy.setFault(func(i int) string {
		switch {
		case i%13 == 0:
			return "drop"
		case i%7 == 0:
			return "dup"
		case i%11 == 0:
			return "hold"
		}
		return ""
	})
	waitFor(t, "gaps and duplicates to be seen", 60*time.Second, func() bool {
		c := f1.Status().Counters
		return c["gap"] >= 2 && c["duplicate"] >= 2
	})
	proxy.setFault(nil)
	mark := c1.withTxs.Load()
	waitFor(t, "follower1 to match again after faults", 60*time.Second, func() bool { return c1.withTxs.Load() >= mark+5 })
	noErrors(t, c1, c2)

	// 3. the feed dies and comes back
	proxy.refuse.Store(true)
	proxy.kill()
	waitFor(t, "a clear feed error", 30*time.Second, func() bool {
		st := f1.Status()
		return !st.FeedConnected && st.FeedError != ""
	})
	t.Logf("feed down: %s", f1.Status().FeedError)
	proxy.refuse.Store(false)
	connects := f1.Status().Counters["connects"]
	waitFor(t, "the feed to reconnect", 30*time.Second, func() bool { return f1.Status().Counters["connects"] > connects })
	mark = c1.withTxs.Load()
	waitFor(t, "follower1 to match after the feed restart", 60*time.Second, func() bool { return c1.withTxs.Load() >= mark+5 })

	// 4. the upstream dies and comes back
	c1.outage.Store(true)
	up.down.Store(true)
	waitFor(t, "a clear upstream error", 30*time.Second, func() bool {
		return strings.Contains(f1.Status().UpstreamError, "upstream unavailable")
	})
	t.Logf("upstream down: %s", f1.Status().UpstreamError)
	// Pending reads that need the upstream fail with a clear error.
	waitFor(t, "an unverifiable read to fail clearly", 30*time.Second, func() bool {
		snap := src1.Current()
		if snap == nil {
			return true // nothing pending is served without an upstream
		}
		_, err := snap.State.Base().Account(freshAddress())
		return err != nil && strings.Contains(err.Error(), "upstream unavailable")
	})
	up.down.Store(false)
	waitFor(t, "the upstream error to clear", 30*time.Second, func() bool { return f1.Status().UpstreamError == "" })
	c1.outage.Store(false)
	t.Logf("follower1: %d snapshots not verifiable during the upstream outage", c1.unverified.Load())
	mark = c1.withTxs.Load()
	waitFor(t, "follower1 to match after the upstream restart", 60*time.Second, func() bool { return c1.withTxs.Load() >= mark+5 })

	close(stop)
	wg.Wait()
	noErrors(t, c1, c2)
	for _, f := range []*follower.Follower{f1, f2} {
		st := f.Status()
		t.Logf("%s: pending=%v latency=%v counters=%v", st.Feed, st.Pending, st.LatencyMs, st.Counters)
	}
	t.Logf("sequencer published %d snapshots; follower1 matched %d (%d with txs), follower2 matched %d (%d with txs); deposits matched: follower1 %d L1-attributes and %d user, follower2 %d and %d (%d injected)",
		seq.n.Load(), c1.compared.Load(), c1.withTxs.Load(), c2.compared.Load(), c2.withTxs.Load(),
		c1.l1Deposits.Load(), c1.userDeposits.Load(), c2.l1Deposits.Load(), c2.userDeposits.Load(), s.depositsSent.Load())
	if c2.l1Deposits.Load() == 0 || c2.userDeposits.Load() == 0 {
		t.Errorf("follower2 matched %d L1-attributes and %d user deposits: the OP-stack paths were not exercised", c2.l1Deposits.Load(), c2.userDeposits.Load())
	}
	if st := f2.Status(); st.Counters["gap"] != 0 || st.Counters["invalid"] != 0 || st.Counters["exec_invalid_flashblocks"] != 0 {
		t.Errorf("the unfaulted follower saw faults: %v", st.Counters)
	}
	// Sealed blocks were carried over from their re-execution, so the
	// comparisons above also checked carried-over values.
	if st := f2.Status(); st.Counters["carried_over"] == 0 || st.Counters["carried_over"] > st.Counters["caught_up"] {
		t.Errorf("carry-over: %d of %d caught-up blocks", st.Counters["carried_over"], st.Counters["caught_up"])
	}
}

func sameBig(a, b *big.Int) bool { return (a == nil) == (b == nil) && (a == nil || a.Cmp(b) == 0) }

func sameU64(a, b *uint64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

var freshN atomic.Uint64

// freshAddress is an address no cache holds yet.
func freshAddress() common.Address {
	n := freshN.Add(1)
	return common.Address{0xfe, byte(n >> 8), 19: byte(n)}
}

// TestReorgWhenSealedBlockDiffers injects, through the feed proxy, a valid
// transaction the sequencer never includes into one flashblock: the
// follower pre-confirms it, then sees the sealed block without it, counts a
// reorg, drops it, and matches the sequencer again on the next blocks.
func TestReorgWhenSealedBlockDiffers(t *testing.T) {
	n, feedURL := sequencerNode(t, time.Second, 100*time.Millisecond)
	seq := record(t, n.Pending)
	proxy := newFaultProxy(t, feedURL)
	f, src := startFollower(t, n, n.URL(), proxy.url())
	s := newSender(t, n.URL(), n.Chain.Config().ChainID, 4)
	stop := make(chan struct{})
	wg := traffic(t, s, stop)
	defer func() { close(stop); wg.Wait() }()

	// a transfer from dev key 9, which the traffic never uses
	key, _ := crypto.HexToECDSA(chain.DevKeys[9])
	outsider := crypto.PubkeyToAddress(key.PublicKey)
	to := common.Address{0x0e}
	tx := types.MustSignNewTx(key, types.LatestSignerForChainID(n.Chain.Config().ChainID), &types.DynamicFeeTx{
		ChainID: n.Chain.Config().ChainID, Nonce: 0, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(50e9), Gas: 21000, To: &to, Value: big.NewInt(1),
	})
	raw, _ := tx.MarshalBinary()
	waitFor(t, "a first pending block", 30*time.Second, func() bool { return src.Current() != nil })
	var injected atomic.Bool
	proxy.setMutate(func(data []byte) []byte {
		fb, err := flashblock.Decode(data)
		if err != nil || fb.Index == 0 || injected.Load() {
			return data
		}
		fb.Diff.Transactions = append(fb.Diff.Transactions, raw)
		out, err := flashblock.Encode(fb)
		if err != nil {
			return data
		}
		injected.Store(true)
		return out
	})
	nonceAt := func(s *pending.Snapshot) uint64 {
		a, err := s.State.Account(outsider)
		if err != nil || a == nil {
			return 0
		}
		return a.Nonce
	}
	var injectedIn uint64
	waitFor(t, "the injected transaction to be pre-confirmed on the follower", 30*time.Second, func() bool {
		cur := src.Current()
		if cur != nil && nonceAt(cur) == 1 {
			injectedIn = cur.Header.Number.Uint64()
			return true
		}
		return false
	})
	proxy.setMutate(nil)
	waitFor(t, "a reorg to be counted", 30*time.Second, func() bool { return f.Status().Counters["reorg"] >= 1 })
	if sealed := n.Chain.HeaderByNumber(injectedIn); sealed == nil {
		t.Fatalf("block %d not sealed at reorg time", injectedIn)
	}
	// From the next block on, the follower matches the sequencer again and
	// the injected transaction is gone.
	c := check(t, "follower", src, seq)
	waitFor(t, "the follower to match the sequencer after the reorg", 60*time.Second, func() bool {
		cur := src.Current()
		return c.withTxs.Load() >= 5 && cur != nil && cur.Header.Number.Uint64() > injectedIn && nonceAt(cur) == 0
	})
	for _, err := range c.errors() {
		if !strings.Contains(err.Error(), fmt.Sprintf("block %d ", injectedIn)) {
			t.Error(err)
		}
	}
	t.Logf("injected into block %d; counters %v", injectedIn, f.Status().Counters)
}
