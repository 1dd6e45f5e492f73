// Package follower runs preconf next to an existing execution node: it
// follows a flashblocks feed, re-executes every flashblock's transactions on
// the upstream node's latest sealed state (read lazily over JSON-RPC,
// verified with proofs), and publishes the result as pending snapshots. It
// never writes a chain; sealed data always comes from the upstream.
package follower

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/follower/feed"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/remote"
)

// Config says what to follow. Zero values are the defaults (config.go:
// Validate, withDefaults).
type Config struct {
	// Upstream is the execution node's HTTP JSON-RPC URL.
	Upstream string
	// Feed is the flashblocks websocket URL.
	Feed string
	// Chain is the chain's configuration (forks); its chain id must be the
	// upstream's.
	Chain *params.ChainConfig
	// Proofs says how upstream state reads are verified (default: proofs
	// when the upstream offers eth_getProof).
	Proofs remote.Proofs
	// PollInterval is how often the upstream's head is polled (default
	// DefaultPollInterval); a flashblock for a newer block also triggers a
	// poll.
	PollInterval time.Duration
	// Ahead is how many blocks past the next one are buffered (default 3).
	Ahead int
	// UpstreamTimeout bounds one upstream request (default
	// DefaultUpstreamTimeout).
	UpstreamTimeout time.Duration
	// Feed connection: reconnection backoff bounds, ping interval and the
	// largest frame (defaults in follower/feed: 20 ms, 200 ms, 500 ms, 8 MiB).
	MinBackoff, MaxBackoff, PingInterval time.Duration
	MaxFrame                             int64
	// Stall is how long the feed may be silent, a head poll go unanswered
	// or the upstream stay behind the feed before Health reports it
	// (default DefaultStall); a head poll is abandoned after it too.
	Stall  time.Duration
	Logger *slog.Logger
	// Observe, if set, is called (on the follower's goroutine) after the
	// first publication of each flashblock, with the time from the frame's
	// arrival until the snapshot showing it was visible (including any wait
	// for its parent head).
	Observe func(s *pending.Snapshot, latency time.Duration)
	// Metrics, if set, receives the follower's metrics (follower/metrics.go).
	Metrics prometheus.Registerer
}

// Follower follows one feed over one upstream and publishes to a pending
// source.
type Follower struct {
	cfg      Config
	log      *slog.Logger
	client   *remote.Client
	shared   *remote.Shared
	headers  *headers
	src      *pending.Source
	feed     *feed.Client
	metrics  *feed.Metrics
	tracker  *feed.Tracker
	exec     *executor
	lat      latencies
	latFirst latencies // of the blocks' first flashblocks (index 0) alone
	hist     *metrics  // nil without Config.Metrics
	started  time.Time // Start

	events  chan loopEvent
	pollNow chan struct{}
	head    atomic.Pointer[remote.Head] // latest canonical head seen

	mu        sync.Mutex
	headErr   error
	headDown  time.Time // when head polls started failing
	headOK    time.Time // the last head poll answered
	execErr   error
	execFails uint64
	invalid   uint64
	published atomic.Uint64
	shown     map[flashblock.PayloadID]uint64 // highest index published per payload (loop only)
	warmed    common.Hash                     // the last block warmParent seeded (loop only)
	flog      feedLog                         // loop only
	replays   bool                            // the feed replays the current block on connect (?replay=block)
	resynced  flashblock.PayloadID            // the last block maybeResync reconnected for (loop only)
	waiters   txWaiters                       // eth_sendRawTransactionSync callers (sync.go)

	up       upstreamWatch
	tip      atomic.Uint64            // the newest block number the feed pre-confirms (index 0 seen)
	lagSince atomic.Int64             // Unix ns since the upstream's head is behind the feed (0: it is not)
	episodes [numCauses]atomic.Uint64 // ill-health episodes by cause (health.go)

	states *lru[common.Hash, *remote.State] // sealed states by block hash
	// preStates are the pending chain's pre-confirmed blocks' states by
	// state root (next.go), for reads by root before the upstream seals them
	preStates atomic.Pointer[map[common.Hash]*pending.State]
	ahead     aheadCounts // blocks opened before their parent was sealed (next.go)

	backendOnce sync.Once
	backend     *Backend
	chainEv     *chainEvents

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// stateAt is the shared lazy reader of the state after sealed block h, so
// the executor and every reader of that block share one cache.
func (f *Follower) stateAt(h *types.Header) *remote.State {
	hash := h.Hash()
	if st, ok := f.states.get(hash); ok {
		return st
	}
	st := f.shared.NewState(h)
	f.states.add(hash, st)
	return st
}

type loopEvent struct {
	fb   *flashblock.Message
	prep *prepared // fb's decoding, started on arrival
	head *remote.Head
}

// New checks the configuration and the upstream's chain id; it does not
// start following yet.
func New(cfg Config, src *pending.Source) (*Follower, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("follower: %w", err)
	}
	cfg = cfg.withDefaults()
	client := remote.NewClient(cfg.Upstream, cfg.UpstreamTimeout)
	sh := remote.NewShared(client, cfg.Proofs)
	sh.Timeout = cfg.UpstreamTimeout
	hs := newHeaders(client, cfg.Chain)
	m := new(feed.Metrics)
	f := &Follower{
		cfg: cfg, log: cfg.Logger, client: client, shared: sh, headers: hs, src: src, metrics: m,
		tracker: feed.NewTracker(cfg.Ahead, m),
		exec:    newExecutor(cfg.Chain, sh, hs, src),
		events:  make(chan loopEvent, 1024),
		states:  newLRU[common.Hash, *remote.State](16),
		chainEv: newChainEvents(),
		shown:   make(map[flashblock.PayloadID]uint64),
		pollNow: make(chan struct{}, 1),
		feed: &feed.Client{
			URL: cfg.Feed, MinBackoff: cfg.MinBackoff, MaxBackoff: cfg.MaxBackoff,
			PingInterval: cfg.PingInterval, ReadLimit: cfg.MaxFrame, Metrics: m, Logger: cfg.Logger,
		},
		flog: feedLog{log: cfg.Logger}, replays: replaysBlock(cfg.Feed),
	}
	f.exec.stateAt = f.stateAt
	if cfg.Metrics != nil {
		f.registerMetrics(cfg.Metrics)
	}
	return f, nil
}

// replaysBlock reports whether the feed URL asks for the current block's
// replay on connect.
func replaysBlock(feedURL string) bool {
	u, err := url.Parse(feedURL)
	return err == nil && u.Query().Get("replay") == "block"
}

// CheckUpstream asks the upstream for its chain id and head; it fails when
// the upstream is unreachable or serves another chain.
func (f *Follower) CheckUpstream(ctx context.Context) error {
	var id hexutilBig
	if err := f.client.Call(ctx, &id, "eth_chainId"); err != nil {
		return fmt.Errorf("upstream %s: %w", f.client.Shown(), err)
	}
	if id.Int().Cmp(f.cfg.Chain.ChainID) != 0 {
		return fmt.Errorf("upstream %s serves chain %s, the configured chain is %s (pass --genesis)", f.client.Shown(), id.Int(), f.cfg.Chain.ChainID)
	}
	h, err := f.client.HeadByNumber(ctx, "latest")
	if err != nil {
		return fmt.Errorf("upstream %s head: %w", f.client.Shown(), err)
	}
	if h == nil {
		return fmt.Errorf("upstream %s has no latest block", f.client.Shown())
	}
	f.setHead(h)
	f.mu.Lock()
	f.headOK = time.Now()
	f.mu.Unlock()
	if f.shared.Mode() == remote.ProofsRequired {
		// Fail at start, not at the first state read: required proofs need
		// an upstream that has eth_getProof.
		var res json.RawMessage
		if err := f.client.Call(ctx, &res, "eth_getProof", common.Address{}, []string{}, map[string]any{"blockHash": h.Header.Hash()}); err != nil {
			return fmt.Errorf("--proofs required, but upstream %s does not answer eth_getProof: %w", f.client.Shown(), err)
		}
	}
	return nil
}

// Start runs the feed client, the head poller and the executor in the
// background until Stop.
func (f *Follower) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	f.mu.Lock()
	f.started = time.Now()
	f.mu.Unlock()
	f.wg.Add(5)
	go func() { defer f.wg.Done(); f.logWorker(ctx) }()
	go func() { defer f.wg.Done(); f.watch(ctx) }()
	go func() {
		defer f.wg.Done()
		// A reconnect keeps what was received: the sequencing rules decide
		// whether the next message continues the block or leaves a gap.
		f.feed.Run(ctx, func(r feed.Received) {
			p := f.exec.prepare(r.FB)
			select {
			case f.events <- loopEvent{fb: r.FB, prep: p}:
			case <-ctx.Done():
			}
		}, nil)
	}()
	go func() { defer f.wg.Done(); f.pollHeads(ctx) }()
	go func() { defer f.wg.Done(); f.loop(ctx) }()
}

// Stop ends following and waits for the goroutines.
func (f *Follower) Stop() error {
	if f.cancel != nil {
		f.cancel()
		f.wg.Wait()
		f.cancel = nil
	}
	return nil
}

// Client is the upstream client.
func (f *Follower) Client() *remote.Client { return f.client }

// Shared is the upstream state readers' shared part.
func (f *Follower) Shared() *remote.Shared { return f.shared }

// Head is the latest canonical header seen on the upstream (nil before the
// first).
func (f *Follower) Head() *types.Header {
	if h := f.head.Load(); h != nil {
		return h.Header
	}
	return nil
}

func (f *Follower) setHead(h *remote.Head) {
	f.headers.setHead(h.Header)
	f.head.Store(h)
}

// ChainContext serves headers (by hash from a cache) for BLOCKHASH.
func (f *Follower) ChainContext() *headers { return f.headers }

// slowFlashblock is the received → visible time above which a flashblock is
// logged with its phase times.
const slowFlashblock = 50 * time.Millisecond

func (f *Follower) loop(ctx context.Context) {
	if h := f.head.Load(); h != nil {
		f.tracker.Head(trackerHead(h))
	}
	for {
		var ev loopEvent
		select {
		case <-ctx.Done():
			return
		case ev = <-f.events:
		}
		switch {
		case ev.head != nil:
			f.onHead(ev.head)
		case ev.fb != nil:
			if f.onFlashblock(ev.fb, ev.prep) {
				f.syncPending()
			}
		}
		f.exec.preopen(f.Head())
	}
}

// onHead applies a new canonical head. The pending block is brought up to
// date before the head is shown to readers (Head, "latest"): a reader
// never sees a head at or above the pending block's number while that
// block is still published, so pending is never older than latest.
func (f *Follower) onHead(h *remote.Head) {
	f.headers.add(h.Header) // the parent of what becomes pending
	open := f.exec.opened(h.Header.Number.Uint64())
	out := f.tracker.Head(trackerHead(h))
	if out == feed.CaughtUp && f.warmed != h.Header.Hash() && f.exec.carryOver(open, h, f.stateAt(h.Header)) {
		f.exec.carried.Add(1)
	}
	if out == feed.Reorg {
		f.log.Warn("reorg: the sealed block differs from the pre-confirmed one", "number", h.Header.Number, "hash", h.Header.Hash())
	}
	f.syncPending()
	f.setHead(h)
	f.announce(h.Header)
	f.noteLag()
	f.waiters.notify(hashList(h.Txs))
}

// onFlashblock feeds a flashblock to the sequencing rules and reports
// whether the pending block grew.
func (f *Follower) onFlashblock(fb *flashblock.Message, prep *prepared) bool {
	if prep != nil {
		f.exec.prepared.add(fb, prep)
	}
	out := f.tracker.Flashblock(fb)
	held := f.tracker.Held(fb.PayloadID)
	f.flog.note(fb, out, held)
	f.maybeResync(fb, out, held)
	if fb.Index == 0 && (out == feed.Accepted || out == feed.Buffered || out == feed.TooFar) {
		f.noteTip(fb.Number())
	}
	if fb.Index == 0 && (out == feed.Buffered || out == feed.TooFar) {
		select { // the upstream may already have the parent: ask now
		case f.pollNow <- struct{}{}:
		default:
		}
		if !f.exec.extends(fb) { // else it opens on the pending block at once (next.go)
			f.warmParent(fb)
		}
	}
	// a buffered flashblock may extend the pending chain (next.go)
	return out == feed.Accepted || out == feed.Buffered
}

// maybeResync reconnects the feed when it replays the current block on
// connect (?replay=block, as a preconf node's /flashblocks does) and a
// flashblock is missing: two later ones held without it (more than a swap
// of neighbours), or a block whose index 0 never came. The replay fills the
// gap at once instead of leaving pending behind until the next block. Once
// per block.
func (f *Follower) maybeResync(fb *flashblock.Message, out feed.Outcome, held int) {
	if !f.replays || f.resynced == fb.PayloadID {
		return
	}
	if (out == feed.Gap && held >= 2) || out == feed.Unknown {
		f.resynced = fb.PayloadID
		f.feed.Resync()
	}
}

func trackerHead(h *remote.Head) feed.Head {
	return feed.Head{Number: h.Header.Number.Uint64(), Hash: h.Header.Hash(), ParentHash: h.Header.ParentHash, Txs: h.Txs}
}

// syncPending re-executes what the tracker says is pending — the block on
// the sealed head and the blocks after it that build on it (next.go) — and
// publishes it.
func (f *Follower) syncPending() {
	head, fbs, ok := f.tracker.Pending()
	var parent *types.Header
	if ok {
		parent = f.headers.cached(head.Hash)
	}
	before := f.exec.chain
	failed, err := f.exec.syncChain(parent, fbs, f.tracker.After, f.onPublish)
	f.noteAhead(before, head.Number)
	f.showPreconfirmed()
	f.mu.Lock()
	f.execErr = err
	f.mu.Unlock()
	if err == nil {
		return
	}
	if errors.Is(err, ErrInvalidFlashblock) {
		f.mu.Lock()
		f.invalid++
		f.mu.Unlock()
		f.tracker.Drop(failed[0].PayloadID)
		f.log.Warn("dropping pending block: flashblock does not apply on the sealed state", "payload", failed[0].PayloadID, "err", err)
		return
	}
	f.mu.Lock()
	f.execFails++
	f.mu.Unlock()
	f.log.Warn("re-execution failed (will retry)", "err", err)
}

// onPublish is called after each snapshot of the block made of fbs is
// published.
func (f *Follower) onPublish(fbs []*flashblock.Message) func(*pending.Snapshot) {
	return func(s *pending.Snapshot) {
		f.published.Add(1)
		f.waiters.notify(txHashes(s.Txs[len(s.Txs)-s.NewTxs:]))
		// Every flashblock's first publication counts, including those that
		// waited in the buffer for their parent head; re-executions after a
		// head change do not.
		if s.Index >= uint64(len(fbs)) {
			return
		}
		fb := fbs[s.Index]
		if last, ok := f.shown[s.PayloadID]; (ok && s.Index <= last) || fb.Received.IsZero() {
			return
		}
		if len(f.shown) > 64 {
			clear(f.shown)
		}
		f.shown[s.PayloadID] = s.Index
		d := time.Since(fb.Received)
		f.noteVisible(s.Index, d)
		if d > slowFlashblock {
			e := f.exec
			f.log.Info("slow flashblock", "number", s.Header.Number, "index", s.Index, "txs", s.NewTxs, "visible_after", d,
				"waited", time.Duration(e.lastStart.Load()-fb.Received.UnixNano()), "decode", time.Duration(e.lastDecode.Load()), "prefetch", time.Duration(e.lastFetch.Load()),
				"prefetch_wait", time.Duration(e.lastFetchWait.Load()),
				"exec", time.Duration(e.lastExec.Load()), "snapshot", time.Duration(e.lastSnap.Load()))
		}
		if f.cfg.Observe != nil {
			f.cfg.Observe(s, d)
		}
	}
}

// showPreconfirmed makes the pending chain's pre-confirmed blocks that
// later ones build on readable: their headers for BLOCKHASH and by hash,
// their states by root (Backend.StateReader).
func (f *Follower) showPreconfirmed() {
	pre := f.exec.preconfirmed()
	var hs map[common.Hash]*types.Header
	var roots map[common.Hash]*pending.State
	if len(pre) > 0 {
		hs = make(map[common.Hash]*types.Header, len(pre))
		roots = make(map[common.Hash]*pending.State, len(pre))
		for hash, b := range pre {
			hs[hash] = b.last
			roots[b.last.Root] = b.state
		}
	}
	f.headers.setPre(hs)
	f.preStates.Store(&roots)
}
