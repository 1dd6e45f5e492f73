// Package fork is a chain forked from an upstream node at one of its blocks:
// the blocks up to the fork block are the upstream's (fetched when asked,
// verified, kept on disk), the fork block's state is read lazily from the
// upstream (every value proven against the block's state root and kept on
// disk, so a restart fetches nothing twice), and the blocks the sequencer
// seals on top are local, their state changes kept as history beside it.
//
// Chain implements the sequencer's chain interface and the API's backend,
// as the local chain (package chain) does.
package fork

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/lru"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/event"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/pebblestore"
	"github.com/preconf/preconf/remote"
)

// Config says what to fork and where to keep it.
type Config struct {
	// Dir is the node's datadir; the fork lives in Dir/forkdata. Empty
	// keeps everything in memory (tests).
	Dir string
	// URL is the upstream's JSON-RPC endpoint (HTTP).
	URL string
	// Block is the fork block; nil: the upstream's head when the datadir
	// is created (a restart keeps the block it forked).
	Block *uint64
	// ChainID is the id the fork runs as; nil: the upstream's.
	ChainID *uint64
	// Genesis, when set, gives the chain rules (its config); otherwise
	// they are looked up or inferred (config.go).
	Genesis *core.Genesis
	// Fund sets these accounts' balances at the fork block when the fork
	// is created (as anvil funds its dev accounts on a fork); their nonce,
	// code and storage stay the upstream's.
	Fund map[common.Address]*big.Int
	// Client shapes the upstream client; zero: DefaultClient.
	Client remote.Options
	// CacheMB is Pebble's cache size.
	CacheMB int
	Logger  *slog.Logger
}

// DefaultClient is how a fork treats its upstream: a public endpoint may
// rate-limit or fail, so each exchange is tried up to 6 times over about
// 10 s, at most 16 at once, and once every try failed, reads fail at once
// for 5 s with that error instead of each waiting through its retries.
var DefaultClient = remote.Options{
	Timeout: 15 * time.Second, Retries: 5, Backoff: 250 * time.Millisecond, MaxBackoff: 5 * time.Second,
	MaxConcurrent: 16, Cooldown: 5 * time.Second,
}

// readTimeout bounds one read of forked state, retries included: as long
// as a request may take (--rpc.timeout's default), since reads cannot be
// handed the request's context. The block being built waits longer (see
// Sequencing).
const readTimeout = 30 * time.Second

// ancestors is how many headers below the fork block are fetched at fork
// time: BLOCKHASH reaches 256 back, and the safe and finalized markers of
// the first local blocks fall below the fork block.
const ancestors = 256

// Chain is a forked chain. Its read methods are safe for concurrent use;
// InsertSealed, Flush, SetSafe, SetFinalized and Reset are the writer's
// (the sequencer goroutine's).
type Chain struct {
	cfg    Config
	db     ethdb.Database
	log    *slog.Logger
	engine consensus.Engine
	sdb    *stateDatabase

	gen atomic.Pointer[generation]

	head, safe, finalized atomic.Pointer[types.Header]

	headers  *lru.Cache[common.Hash, *types.Header]
	blocks   *lru.Cache[common.Hash, *types.Block]
	receipts *lru.Cache[common.Hash, types.Receipts]
	roots    *lru.Cache[common.Hash, *types.Header] // state root → an upstream header below the fork block
	states   *lru.Cache[common.Hash, *remote.State] // upstream header hash → its state (below the fork block)
	absent   *lru.Cache[common.Hash, struct{}]      // tx and block hashes the upstream has not at or below the fork block

	fetchMu     sync.Mutex  // one writer of fetched upstream blocks at a time
	prefetching atomic.Bool // a prefetchAhead is running

	chainFeed   event.Feed
	logsFeed    event.Feed
	removedFeed event.Feed
	scope       event.SubscriptionScope

	quit      chan struct{} // closed by StopWaiting: the block being built stops waiting for the upstream
	quitOnce  sync.Once
	closeOnce sync.Once
}

// generation is one fork: the upstream, the fork block, its state and the
// local history's index. Reset replaces it.
type generation struct {
	meta    *meta
	config  *params.ChainConfig
	client  *remote.Client
	shared  *remote.Shared
	point   *types.Header // the fork block
	genesis *types.Header // the upstream's block 0
	base    *remote.State // the fork block's state, kept on disk
	touched *touched
}

// Open opens the fork in cfg.Dir, creating it from the upstream (which must
// answer then) or resuming it (the upstream may be down: what is on disk
// is served, the rest fails until it is back).
func Open(cfg Config) (*Chain, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.URL == "" {
		return nil, errors.New("fork: no upstream URL")
	}
	if cfg.Client == (remote.Options{}) {
		cfg.Client = DefaultClient
	}
	db, err := openDB(cfg)
	if err != nil {
		return nil, err
	}
	c := &Chain{
		cfg: cfg, db: db, log: cfg.Logger,
		engine:   beacon.New(ethash.NewFaker()),
		headers:  lru.NewCache[common.Hash, *types.Header](1024),
		blocks:   lru.NewCache[common.Hash, *types.Block](256),
		receipts: lru.NewCache[common.Hash, types.Receipts](256),
		roots:    lru.NewCache[common.Hash, *types.Header](256),
		states:   lru.NewCache[common.Hash, *remote.State](16),
		absent:   lru.NewCache[common.Hash, struct{}](4096),
		quit:     make(chan struct{}),
	}
	c.sdb = newStateDatabase(c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := readMeta(db)
	if err == nil {
		if m == nil {
			err = c.create(ctx)
		} else {
			err = c.resume(ctx, m)
		}
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return c, nil
}

func openDB(cfg Config) (ethdb.Database, error) {
	if cfg.Dir == "" {
		return rawdb.NewMemoryDatabase(), nil
	}
	dir := filepath.Join(cfg.Dir, "forkdata")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create datadir: %w", err)
	}
	cache := cfg.CacheMB
	if cache <= 0 {
		cache = 256
	}
	db, err := pebblestore.Open(dir, cache, "preconf/forkdb/")
	if err != nil {
		return nil, fmt.Errorf("open pebble at %s: %w", dir, err)
	}
	return db, nil
}

// newGeneration connects to the upstream for the fork m describes.
func (c *Chain) newGeneration(m *meta, client *remote.Client, point, genesis *types.Header) (*generation, error) {
	sh := remote.NewShared(client, remote.ProofsAuto)
	sh.Timeout = readTimeout
	sh.CodeWithAccount = true
	t := new(touched)
	if err := t.load(c.db); err != nil {
		return nil, fmt.Errorf("forked state index: %w", err)
	}
	return &generation{
		meta: m, config: m.Config, client: client, shared: sh, point: point, genesis: genesis,
		base: sh.NewStateWith(point, baseStore{c.db}), touched: t,
	}, nil
}

// Close flushes and closes the store.
func (c *Chain) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.StopWaiting()
		c.scope.Close()
		c.db.SyncKeyValue()
		err = c.db.Close()
	})
	return err
}

// StopWaiting makes reads of the block being built that wait for the
// upstream give up (see Sequencing): call it before stopping the sequencer.
func (c *Chain) StopWaiting() error {
	c.quitOnce.Do(func() { close(c.quit) })
	return nil
}

// Config is the chain configuration (its rules and id).
func (c *Chain) Config() *params.ChainConfig { return c.gen.Load().config }

// ForkBlock is the upstream block the chain forked.
func (c *Chain) ForkBlock() *types.Header { return c.gen.Load().point }

// Rules says where the chain config came from.
func (c *Chain) Rules() string { return c.gen.Load().meta.Rules }

// Upstream is the upstream client (its counters measure what was fetched).
func (c *Chain) Upstream() *remote.Client { return c.gen.Load().client }

// State is the fork block's state as fetched so far (its counters say how
// many values came from the upstream, memory or disk).
func (c *Chain) State() *remote.Shared { return c.gen.Load().shared }

// ErrUnknownState is a state root this chain has no state for.
var ErrUnknownState = errors.New("state root unknown to this fork")

// StateReader returns a concurrency-safe reader of the state at root: a
// local block's, the fork block's, or an upstream block's below it.
func (c *Chain) StateReader(root common.Hash) (state.Reader, error) {
	g := c.gen.Load()
	if root == g.point.Root {
		return c.readerAt(g, g.point.Number.Uint64()), nil
	}
	if v, err := c.db.Get(key(rootPrefix, root[:])); err == nil && len(v) == 8 {
		return c.readerAt(g, decodeNumber(v)), nil
	}
	if h, ok := c.roots.Get(root); ok {
		return c.upstreamState(g, h), nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownState, root)
}

func (c *Chain) readerAt(g *generation, number uint64) *reader {
	return &reader{db: c.db, touched: g.touched, base: g.base, fork: g.point.Number.Uint64(), number: number}
}

// upstreamState is the state after an upstream block below the fork block,
// read from the upstream (kept in memory only: such reads are rare).
func (c *Chain) upstreamState(g *generation, h *types.Header) *remote.State {
	if st, ok := c.states.Get(h.Hash()); ok {
		return st
	}
	st := g.shared.NewState(h)
	c.states.Add(h.Hash(), st)
	return st
}

// StateAt opens a private StateDB at h. Its IntermediateRoot is this
// chain's state commitment (trie.go); it cannot build proofs.
func (c *Chain) StateAt(h *types.Header) (*state.StateDB, error) {
	g := c.gen.Load()
	if h.Number.Uint64() < g.point.Number.Uint64() {
		return state.NewWithReader(h.Root, c.sdb, c.upstreamState(g, h))
	}
	return state.NewWithReader(h.Root, c.sdb, c.readerAt(g, h.Number.Uint64()))
}

// StateDatabase backs StateDBs opened over this chain's readers.
func (c *Chain) StateDatabase() state.Database { return c.sdb }

// Sequencing is the chain as the sequencer uses it: the block being built
// reads forked state through a reader that waits out an unavailable
// upstream (backing off up to 10 s between tries) instead of failing the
// block, until StopWaiting. Published state stays readable meanwhile.
type Sequencing struct{ *Chain }

// StateAt opens the open block's StateDB at h over a patient reader.
func (s Sequencing) StateAt(h *types.Header) (*state.StateDB, error) {
	g := s.gen.Load()
	if h.Number.Uint64() < g.point.Number.Uint64() {
		return nil, fmt.Errorf("block %d is below the fork block: nothing is built on it", h.Number)
	}
	r := s.readerAt(g, h.Number.Uint64())
	return state.NewWithReader(h.Root, s.sdb, &patient{reader: r, quit: s.quit, log: s.log})
}
