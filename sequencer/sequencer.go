// Package sequencer builds the chain: every flashblock interval it executes
// the pool's next executable transactions on the open block, logs the
// flashblock durably (WAL, fsync) and only then publishes it as an immutable
// pending snapshot; every block time it seals the block into the chain. On
// start it replays the WAL so that nothing pre-confirmed is lost to a crash.
//
// The sequencer goroutine is the only writer of the pending.Source and the
// only user of the open block's StateDB; readers never wait on it.
//
// It speaks Go: its methods take Go values and return Go errors (sentinels
// such as ErrNotOPStack, RefusedError for input the state refuses,
// TimeTakenError); the JSON-RPC methods that call it, and code those
// errors, are package seqapi's and package anvil's.
package sequencer

import (
	"github.com/preconf/preconf/impersonate"

	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/opstack"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/txpool"
)

// Defaults.
const (
	DefaultInterval     = 200 * time.Millisecond
	DefaultBlockTime    = 2 * time.Second
	DefaultSafeLag      = 32 // blocks behind latest, as anvil's "safe"
	DefaultFinalizedLag = 64 // blocks behind latest, as anvil's "finalized"
)

// Config configures the sequencer.
type Config struct {
	// Mining is how blocks are sealed (mining.go); Validate checks it with
	// the times below.
	Mining Mining
	// Interval is the flashblock interval (DefaultInterval when zero;
	// NoFlashblocks: none before a mine, manual mining only); BlockTime,
	// interval mining's, a multiple of it (DefaultBlockTime when zero).
	Interval  time.Duration
	BlockTime time.Duration
	// Coinbase receives the priority fees.
	Coinbase common.Address
	// SafeLag and FinalizedLag: after sealing block n, block n-SafeLag is
	// marked safe and n-FinalizedLag finalized (genesis while n is smaller).
	SafeLag, FinalizedLag uint64
	// GasCeil, when non-zero, moves the gas limit toward it by go-ethereum's
	// rule (1/1024 of the parent's per block); zero keeps the parent's.
	GasCeil uint64
	// WALPath is the write-ahead log; "" disables durability (in-memory
	// nodes and tests only).
	WALPath string
	// L1 is the simulated L1 of an OP-stack chain (its fees and
	// SystemConfig; its GenesisTime and BlockTime are set from the chain
	// and L1BlockTime). Nil: the dev L2's SystemConfig, 1 gwei L1 base fee,
	// 1 wei blob base fee. Ignored on other chains.
	L1 *opstack.DevL1
	// L1BlockTime is the simulated L1's block time, whole seconds
	// (DefaultL1BlockTime when zero).
	L1BlockTime time.Duration
	// Fork: the chain below is forked from an upstream (fork mode). On an
	// OP-stack upstream its blocks are then built by the chain's rules but
	// without an L1-attributes deposit (the upstream's L1 origin and
	// SystemConfig are not simulated on; L1 fees come from the values the
	// fork block left in L1Block), and deposits cannot be injected.
	Fork   bool
	Pool   txpool.Config
	Logger *slog.Logger
}

// Chain is the sealed chain below the sequencer: the local Pebble chain
// (*chain.Chain) or a chain forked from an upstream node (*fork.Chain). The
// sequencer reads the head and its state, and hands each sealed block to
// InsertSealed; the chain owns every write of its store.
type Chain interface {
	Config() *params.ChainConfig
	// ChainContext serves canonical headers to the EVM (BLOCKHASH).
	ChainContext() core.ChainContext
	Head() *types.Header
	// HeaderByNumber is the canonical header at n, or nil.
	HeaderByNumber(n uint64) *types.Header
	// HeaderByHash is the header with hash h, or nil.
	HeaderByHash(h common.Hash) *types.Header
	// Genesis is block 0 (its time is the OP-stack chain's genesis time).
	Genesis() *types.Block
	// BlockByHash is the block with hash h, or nil (an OP-stack parent's
	// L1-attributes deposit gives the next block's L1 origin).
	BlockByHash(h common.Hash) *types.Block
	// TxLookup finds a canonical transaction by hash (an injected deposit's
	// source hash is refused once the chain holds it).
	TxLookup(hash common.Hash) (tx *types.Transaction, blockHash common.Hash, number, index uint64, ok bool)
	// StateAt opens a private StateDB at h, the open block's state: its
	// IntermediateRoot is the root the chain gives a block.
	StateAt(h *types.Header) (*state.StateDB, error)
	// StateReader is a concurrency-safe reader of the state at root.
	StateReader(root common.Hash) (state.Reader, error)
	// InsertSealed makes block the head with its receipts and the state
	// statedb holds (a StateDB from StateAt, after IntermediateRoot); it
	// returns the root to hand to Flush.
	InsertSealed(block *types.Block, receipts types.Receipts, statedb *state.StateDB) (common.Hash, error)
	// Flush makes everything InsertSealed wrote up to root durable.
	//
	// The WAL relies on what a crash leaves: the reopened head is a block
	// with its state, at or after the last block whose Flush returned
	// (the WAL holds the blocks after it), and every block up to it keeps
	// its hash. chain.Chain repairs a stateless head to the newest block
	// with state, never to its lagging state snapshot; fork.Chain writes a
	// block with its state in one batch.
	Flush(root common.Hash) error
	// Safe and Finalized are the marked blocks (never nil).
	Safe() *types.Header
	Finalized() *types.Header
	SetSafe(h *types.Header)
	SetFinalized(h *types.Header)
	// SetHead rewinds the chain to its block n (evm_revert): the blocks
	// above stop being canonical and their state is gone.
	SetHead(n uint64) error
}

// Reforker is a chain forked from an upstream (*fork.Chain): anvil_reset
// forks it again instead of going back to genesis.
type Reforker interface {
	// Reset forks again at block (nil: the upstream's head) of url ("":
	// the same upstream); everything local is dropped.
	Reset(ctx context.Context, url string, block *uint64) error
	// ForkBlock is the block the chain is forked at.
	ForkBlock() *types.Header
}

var _ Chain = (*chain.Chain)(nil)

// Sequencer produces flashblocks and blocks. Create with New, then Start.
type Sequencer struct {
	cfg    Config
	chain  Chain
	config *params.ChainConfig
	src    *pending.Source
	pool   *txpool.Pool
	wal    *WAL
	log    *slog.Logger
	signer types.Signer
	// op is the OP-stack side (nil on other chains).
	op *opChain

	// Owned by the sequencer goroutine (and by Start before it runs).
	blk *openBlock
	// unflushed are the state roots of blocks sealed but not yet flushed
	// (sealAhead, flushSealed); unrotated is set by a flush until the WAL
	// rotation that follows it (rotateFlushed); unsyncedRewind is set by a
	// rewind the store has not synced (lazyRewinder), until the sync that
	// comes before the WAL drops its record (rotateFlushed); rewinds
	// counts the rewinds since then (Revert settles at settleEvery).
	unflushed      []common.Hash
	unrotated      bool
	unsyncedRewind bool
	rewinds        int
	// mined: a mine sealed the open block; the next one is opened after
	// its answer (afterMine).
	mined bool
	// admitted is the WAL sequence number of the last admission written
	// without an fsync (Admit under automine), for automine to sync.
	admitted atomic.Uint64
	// fillBy, when set, is when a flashblock stops taking transactions
	// from the pool (a timed tick's: the rest waits for the next one).
	fillBy time.Time
	// lastPublish and lastIndex are the time and index of the last
	// flashblock published; lead the learnt work of a tick by the index
	// it publishes (learnLead).
	lastPublish time.Time
	lastIndex   uint64
	lead        [][]time.Duration
	// prevLogged are the WAL records (flashblocks and seal) of the last
	// sealed block, kept through one more rotation: see walContent.
	prevLogged []*record
	// set are the dev methods' settings (settings.go); shared is their
	// copy for other goroutines.
	set    *settings
	shared atomic.Pointer[settings]
	// snapshots are the live evm_snapshots, oldest first (snapshot.go);
	// snapList is their list for other goroutines.
	snapshots []*snapshotState
	snapList  atomic.Pointer[[]SnapshotInfo]
	// mode is the mining mode (mode.go), modeShared its copy for readers.
	mode       mode
	modeShared atomic.Pointer[MiningMode]

	waitMu  sync.Mutex
	waiters map[common.Hash][]chan struct{}

	quit     chan struct{}
	done     chan struct{}
	cmds     chan command
	stopOnce sync.Once
	failed   atomic.Pointer[error]

	stats Stats
}

// Stats are counters for monitoring and benchmarks.
type Stats struct {
	Flashblocks  atomic.Uint64
	Blocks       atomic.Uint64
	Txs          atomic.Uint64
	LastBuild    atomic.Int64 // ns: executing the last flashblock
	LastWALSync  atomic.Int64 // ns: writing + syncing its WAL record
	LastSeal     atomic.Int64 // ns: sealing the last block
	MaxSeal      atomic.Int64
	LastPublish  atomic.Int64 // ns: Publish call
	Recovered    atomic.Uint64
	RecoveredFBs atomic.Uint64
	// Built → readable: from the end of a flashblock's execution (header
	// and diff ready) to its snapshot being published, including the WAL
	// write and fsync. Sum and count give the mean.
	ReadableSum, ReadableCount, ReadableMax atomic.Int64
	LastReadable                            atomic.Int64 // ns: the last flashblock's built → readable
	// Durable → readable: from the WAL fsync's return to the snapshot
	// being published (building the snapshot, the atomic swap, notifying).
	VisibleSum, VisibleMax atomic.Int64
}

// New creates a sequencer over c, publishing to src. It does not run yet.
func New(cfg Config, c Chain, src *pending.Source) (*Sequencer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	op, err := newOPChain(cfg, c.Config(), c.Genesis().Time())
	if err != nil {
		return nil, err
	}
	s := &Sequencer{op: op,
		cfg: cfg, chain: c, config: c.Config(), src: src, log: cfg.Logger,
		signer:  impersonate.NewSigner(types.LatestSignerForChainID(c.Config().ChainID)),
		waiters: make(map[common.Hash][]chan struct{}),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
		cmds:    make(chan command),
	}
	s.pool = txpool.New(cfg.Pool, c.Config(), s.poolEnv)
	s.set = &settings{coinbase: cfg.Coinbase}
	s.share()
	s.shareSnapshots()
	s.mode = mode{manual: cfg.Mining != IntervalMining, automine: cfg.Mining == AutoMining}
	if !s.mode.manual {
		s.mode.perBlock = uint64(cfg.BlockTime / cfg.Interval)
	}
	s.shareMode()
	return s, nil
}

// Pool is the transaction pool the sequencer draws from.
func (s *Sequencer) Pool() *txpool.Pool { return s.pool }

// Stats returns the live counters.
func (s *Sequencer) Stats() *Stats { return &s.stats }

// Source is where snapshots are published.
func (s *Sequencer) Source() *pending.Source { return s.src }

// poolEnv gives the pool the pending header and state to validate against.
func (s *Sequencer) poolEnv() (*types.Header, state.Reader, error) {
	if snap := s.src.Current(); snap != nil {
		return snap.Header, snap.State, nil
	}
	head := s.chain.Head()
	r, err := s.chain.StateReader(head.Root)
	return head, r, err
}

// Start recovers from the WAL, publishes the pending block and starts the
// loop. It returns once the recovered state is published.
func (s *Sequencer) Start() error {
	var recs []record
	if s.cfg.WALPath != "" {
		w, r, err := openWAL(s.cfg.WALPath)
		if err != nil {
			return err
		}
		s.wal, recs = w, r
	}
	if err := s.recover(recs); err != nil {
		return fmt.Errorf("wal recovery: %w", err)
	}
	s.settle(s.chain.Head().Number.Uint64())
	if s.blk == nil {
		if err := s.openNext(nil); err != nil {
			return err
		}
		if err := s.firstFlashblock(); err != nil {
			return err
		}
	}
	go s.loop()
	return nil
}

// Stop ends the loop (after the flashblock in progress) and closes the WAL.
// The open block is not sealed: its flashblocks are in the WAL and resume on
// the next start.
func (s *Sequencer) Stop() error {
	s.stopOnce.Do(func() { close(s.quit) })
	<-s.done
	if s.wal != nil {
		return s.wal.Close()
	}
	return nil
}

// command is work handed to the sequencer goroutine: run between two
// flashblocks, its error sent on reply. A mine's (Mine) leaves the disk
// work of the blocks sealed before it for later (afterMine).
type command struct {
	run   func() error
	reply chan error
	// mine: the command mines (beforeMine: the disk work of earlier blocks
	// waits); own: it does what disk work it needs itself
	// (evm_snapshot, evm_revert).
	mine, own bool
}

// do runs f on the sequencer goroutine, between two flashblocks, and returns
// its error. That goroutine is the only user of the open block, so f may
// apply to it, publish a flashblock or seal. An error from f stops the
// sequencer as a failed flashblock or seal does: f checks what it is given
// before it changes anything.
func (s *Sequencer) do(ctx context.Context, f func() error) error {
	return s.send(ctx, command{run: f})
}

// doOwn is do for a command that does its own disk work: the sealed
// blocks' flush and the WAL rotation left for later still wait.
func (s *Sequencer) doOwn(ctx context.Context, f func() error) error {
	return s.send(ctx, command{run: f, own: true})
}

// send hands c to the sequencer goroutine and waits for its reply.
func (s *Sequencer) send(ctx context.Context, c command) error {
	c.reply = make(chan error, 1)
	select {
	case s.cmds <- c:
	case <-s.done:
		return errors.New("sequencer stopped")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-c.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Err reports why the loop stopped early, if it did.
func (s *Sequencer) Err() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// loop is the sequencer goroutine: a flashblock every interval, the seal
// every block time (manual mining: never), and between them the commands
// handed over by do.
//
// Flashblock k is published on a fixed phase, at start + k×interval (or
// half an interval before it: schedule.go): its tick fires that
// flashblock's expected work earlier (lead), and a late one does not shift
// the rest. A tick more than an interval late is skipped
// (no burst). A block's content is final with its last flashblock, so its
// seal follows that publication (sealAhead) and the boundary tick only
// opens the next block and publishes its first flashblock; the disk work
// of the seal follows the publications after it (the flush the boundary's,
// the WAL rotation the next one's).
func (s *Sequencer) loop() {
	defer close(s.done)
	interval := s.cfg.Interval
	timer := time.NewTimer(interval)
	defer timer.Stop()
	ticks := timer.C
	if interval == 0 { // manual mining without pre-confirmation
		ticks = nil
	}
	phase := time.Now()
	k := int64(1) // the grid point of the flashblock due next, phase + k×interval
	due := func() time.Time { return phase.Add(time.Duration(k)*interval - s.early()) }
	for {
		select {
		case <-s.quit:
			if err := s.settleDisk(); err != nil {
				s.fail(err)
			}
			return
		case c := <-s.cmds:
			var err error
			if c.mine || c.own {
				err = s.beforeMine()
			} else {
				err = s.beforeCommand()
			}
			if err == nil {
				err = c.run()
			}
			c.reply <- err
			if err == nil && s.mined {
				err = s.afterMine()
			}
			if err != nil {
				s.fail(err)
				return
			}
			continue
		case <-ticks:
		}
		start := time.Now()
		s.fillBy = start.Add(interval / 4)
		early := s.early()
		err := s.tick()
		if err != nil {
			s.fail(err)
			return
		}
		s.fillBy = time.Time{}
		s.learnLead(start)
		now := time.Now()
		k = s.nextGridPoint(k, early)
		for ; due().Add(interval).Before(now); k++ { // a whole interval behind: skip it, do not burst
		}
		timer.Reset(time.Until(due().Add(-s.leadFor(s.nextIndex()))))
	}
}

// beforeCommand readies the open block for a command: commands find it
// open, the sealed state flushed (as before sealing moved ahead) and
// everything executed on it published (publishHeld).
func (s *Sequencer) beforeCommand() error {
	if err := s.settleDisk(); err != nil {
		return err
	}
	return s.beforeMine()
}

// beforeMine readies the open block for a mine: open, everything executed
// on it published. The disk work of the blocks mined before waits
// (afterMine).
func (s *Sequencer) beforeMine() error {
	if s.blk == nil {
		if err := s.openNext(nil); err != nil {
			return err
		}
	}
	return s.publishHeld()
}

// fail records why the loop stops.
func (s *Sequencer) fail(err error) {
	s.log.Error("sequencer stopped", "err", err)
	s.failed.Store(&err)
}

func (s *Sequencer) tick() error {
	if s.mode.manual {
		if err := s.preconfirm(); err != nil {
			return err
		}
		return s.settleDisk() // what mines left (afterMine)
	}
	if s.blk != nil && s.blk.index > s.finalIndex() {
		return s.rollover() // a longer block than the schedule's (interval mining changed)
	}
	opened := s.blk == nil // sealed ahead: this is the boundary
	alone := false         // the boundary's flashblock holds the deposits alone: prefill follows
	if opened {
		if err := s.openNext(nil); err != nil {
			return err
		}
		alone = s.depositsAlone(s.blk)
		if err := s.firstFlashblock(); err != nil {
			return err
		}
	} else if err := s.flashblock(); err != nil {
		return err
	}
	// The disk work of the last seal follows publications, spread over
	// two: the state flush after the boundary's, the WAL rotation (which
	// must follow the flush) after the next one.
	if err := s.rotateFlushed(); err != nil {
		return err
	}
	if opened {
		if err := s.flushSealed(); err != nil {
			return err
		}
	}
	if s.blk.index > s.finalIndex() {
		return s.sealAhead()
	}
	if alone {
		s.prefill()
	}
	return nil
}

// nextIndex is the index of the flashblock the next tick publishes.
func (s *Sequencer) nextIndex() uint64 {
	if s.mode.manual || s.blk == nil || s.blk.index > s.finalIndex() {
		return 0
	}
	return s.blk.index
}

// learnLead learns how long the tick that started at start took to
// publish its flashblock: the next ticks for that index fire the shortest
// of its last leadSamples such times before their due time (at most half
// an interval). That is the work every tick of the index does (the block
// so far to hash grows over the block), not the noise of a slow fsync or a
// busy CPU: a noisy estimate (a median tried first) moved the ticks by its
// own error (more intervals off than main in the same sessions).
func (s *Sequencer) learnLead(start time.Time) {
	if !s.lastPublish.After(start) {
		return
	}
	i := s.lastIndex
	for uint64(len(s.lead)) <= i {
		s.lead = append(s.lead, nil)
	}
	w := append(s.lead[i], s.lastPublish.Sub(start))
	if len(w) > leadSamples {
		w = w[1:]
	}
	s.lead[i] = w
}

// leadSamples is how many recent ticks a flashblock index's lead is the
// shortest of.
const leadSamples = 5

// leadFor is how early the tick publishing flashblock index i fires.
func (s *Sequencer) leadFor(i uint64) time.Duration {
	if i >= uint64(len(s.lead)) || len(s.lead[i]) == 0 {
		return 0
	}
	return min(slices.Min(s.lead[i]), s.cfg.Interval/2)
}

// sweepNonces lets the pool forget the pool nonces of senders the sealed
// state at root has caught up with.
func (s *Sequencer) sweepNonces(root common.Hash) {
	r, err := s.chain.StateReader(root)
	if err != nil {
		s.log.Warn("pool nonce sweep skipped", "err", err)
		return
	}
	s.pool.Sweep(func(addr common.Address) uint64 {
		if acct, err := r.Account(addr); err == nil && acct != nil {
			return acct.Nonce
		}
		return 0
	})
}
