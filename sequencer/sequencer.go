// Package sequencer builds the chain: every flashblock interval it executes
// the pool's next executable transactions on the open block, logs the
// flashblock durably (WAL, fsync) and only then publishes it as an immutable
// pending snapshot; every block time it seals the block into the chain. On
// start it replays the WAL so that nothing pre-confirmed is lost to a crash.
//
// The sequencer goroutine is the only writer of the pending.Source and the
// only user of the open block's StateDB; readers never wait on it.
package sequencer

import (
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/syscalls"
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
	// Interval is the flashblock interval; BlockTime a multiple of it.
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
	Pool    txpool.Config
	Logger  *slog.Logger
}

// Sequencer produces flashblocks and blocks. Create with New, then Start.
type Sequencer struct {
	cfg    Config
	chain  *chain.Chain
	config *params.ChainConfig
	src    *pending.Source
	pool   *txpool.Pool
	wal    *WAL
	log    *slog.Logger
	signer types.Signer

	// Owned by the sequencer goroutine (and by Start before it runs).
	blk *openBlock
	// prevLogged are the WAL records (flashblocks and seal) of the last
	// sealed block, kept through one more rotation: see walContent.
	prevLogged []*record

	waitMu  sync.Mutex
	waiters map[common.Hash][]chan struct{}

	quit     chan struct{}
	done     chan struct{}
	mine     chan chan error
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
	// Durable → readable: from the WAL fsync's return to the snapshot
	// being published (building the snapshot, the atomic swap, notifying).
	VisibleSum, VisibleMax atomic.Int64
}

// openBlock is the block being built.
type openBlock struct {
	parent   *types.Header
	header   *types.Header // environment; cumulative fields set per flashblock
	rec      record        // the environment as logged at index 0
	statedb  *state.StateDB
	evm      *vm.EVM
	gp       *core.GasPool
	txs      types.Transactions
	receipts types.Receipts
	bloom    types.Bloom
	index    uint64 // next flashblock index
	payload  [8]byte
	state    *pending.State
	touched  *pending.Tracker
	logged   []*record // this block's flashblock records (for WAL rotation)
}

// New creates a sequencer over c, publishing to src. It does not run yet.
func New(cfg Config, c *chain.Chain, src *pending.Source) (*Sequencer, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.BlockTime <= 0 {
		cfg.BlockTime = DefaultBlockTime
	}
	if cfg.BlockTime < cfg.Interval || cfg.BlockTime%cfg.Interval != 0 {
		return nil, fmt.Errorf("block time %v must be a multiple of the flashblock interval %v", cfg.BlockTime, cfg.Interval)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Sequencer{
		cfg: cfg, chain: c, config: c.Config(), src: src, log: cfg.Logger,
		signer:  types.LatestSignerForChainID(c.Config().ChainID),
		waiters: make(map[common.Hash][]chan struct{}),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
		mine:    make(chan chan error),
	}
	s.pool = txpool.New(cfg.Pool, c.Config(), s.poolEnv)
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
	if s.blk == nil {
		if err := s.openNext(nil); err != nil {
			return err
		}
		if err := s.flashblock(); err != nil {
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

// Mine seals the open block now (after pre-confirming what the pool has
// ready), as anvil's and hardhat's evm_mine; the schedule goes on from there.
func (s *Sequencer) Mine(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case s.mine <- reply:
	case <-s.done:
		return errors.New("sequencer stopped")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
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

func (s *Sequencer) loop() {
	defer close(s.done)
	perBlock := uint64(s.cfg.BlockTime / s.cfg.Interval)
	timer := time.NewTimer(s.cfg.Interval)
	defer timer.Stop()
	next := time.Now().Add(s.cfg.Interval)
	for {
		select {
		case <-s.quit:
			return
		case reply := <-s.mine:
			// evm_mine: pre-confirm what is pending, then seal now.
			err := s.flashblock()
			if err == nil {
				err = s.rollover()
			}
			reply <- err
			if err != nil {
				s.log.Error("sequencer stopped", "err", err)
				s.failed.Store(&err)
				return
			}
			continue
		case <-timer.C:
		}
		now := time.Now()
		next = next.Add(s.cfg.Interval)
		if next.Before(now) { // fell behind (a slow seal): do not burst
			next = now.Add(s.cfg.Interval)
		}
		timer.Reset(time.Until(next))
		if err := s.tick(perBlock); err != nil {
			s.log.Error("sequencer stopped", "err", err)
			s.failed.Store(&err)
			return
		}
	}
}

func (s *Sequencer) tick(perBlock uint64) error {
	if s.blk.index < perBlock {
		return s.flashblock()
	}
	return s.rollover()
}

// rollover seals the open block and starts the next one with its first
// flashblock.
func (s *Sequencer) rollover() error {
	// Seal, then show the next block's first flashblock before the slow
	// disk work: the sealed block is already durable through the WAL (its
	// flashblocks and seal record), so flushing its state, syncing the
	// database and rotating the WAL can follow publication.
	root, err := s.seal(nil)
	if err != nil {
		return err
	}
	if err := s.openNext(nil); err != nil {
		return err
	}
	if err := s.flashblock(); err != nil {
		return err
	}
	if err := s.chain.Flush(root); err != nil {
		return err
	}
	if s.wal != nil {
		return s.wal.Rotate(s.walContent)
	}
	return nil
}

// openNext opens the block on top of the chain head. env, when given (WAL
// replay), fixes the environment; otherwise it is chosen now.
func (s *Sequencer) openNext(env *record) error {
	parent := s.chain.Head()
	number := new(big.Int).Add(parent.Number, common.Big1)
	rec := record{Kind: recFlashblock, Number: number.Uint64(), Parent: parent.Hash()}
	if env != nil {
		rec.Time, rec.Coinbase, rec.GasLimit, rec.Random, rec.BeaconRoot, rec.Extra = env.Time, env.Coinbase, env.GasLimit, env.Random, env.BeaconRoot, env.Extra
	} else {
		rec.Time = max(uint64(time.Now().Unix()), parent.Time+1)
		rec.Coinbase = s.cfg.Coinbase
		rec.GasLimit = parent.GasLimit
		if s.cfg.GasCeil != 0 {
			rec.GasLimit = core.CalcGasLimit(parent.GasLimit, s.cfg.GasCeil)
		}
		var nb [8]byte
		binary.BigEndian.PutUint64(nb[:], number.Uint64())
		rec.Random = crypto.Keccak256Hash([]byte("preconf prevrandao"), nb[:])
		rec.BeaconRoot = parent.Hash()
	}
	header := pending.NewHeader(s.config, parent, pending.Env{
		Coinbase: rec.Coinbase, GasLimit: rec.GasLimit, Time: rec.Time, Extra: rec.Extra,
		Random: rec.Random, BeaconRoot: rec.BeaconRoot,
	})
	statedb, err := s.chain.StateAt(parent)
	if err != nil {
		return fmt.Errorf("state of head %d: %w", parent.Number, err)
	}
	base, err := s.chain.StateReader(parent.Root)
	if err != nil {
		return fmt.Errorf("state reader of head %d: %w", parent.Number, err)
	}
	t := pending.NewTracker()
	coinbase := rec.Coinbase
	evm := vm.NewEVM(core.NewEVMBlockContext(header, s.chain.ChainContext(), &coinbase, s.config, statedb), state.NewHookedState(statedb, t.Hooks()), s.config, vm.Config{})
	b := &openBlock{
		parent: parent, header: header, rec: rec, statedb: statedb, evm: evm,
		gp: core.NewGasPool(header.GasLimit), state: pending.NewState(base), touched: t,
	}
	copy(b.payload[:], crypto.Keccak256(parent.Hash().Bytes(), number.Bytes(), []byte("preconf payload")))
	// EIP-4788 beacon root and EIP-2935 parent hash system calls.
	syscalls.Pre(s.config, header, parent.Hash(), evm)
	s.blk = b
	return nil
}

// candidate heap: per-sender runs ordered by the head's effective tip, then
// arrival.
type runHeap struct {
	runs    [][]*txpool.Entry
	baseFee *big.Int
}

func (h *runHeap) Len() int { return len(h.runs) }
func (h *runHeap) Less(i, j int) bool {
	a, b := h.runs[i][0], h.runs[j][0]
	ta, _ := a.Tx.EffectiveGasTip(h.baseFee)
	tb, _ := b.Tx.EffectiveGasTip(h.baseFee)
	if c := ta.Cmp(tb); c != 0 {
		return c > 0
	}
	return a.Seq < b.Seq
}
func (h *runHeap) Swap(i, j int) { h.runs[i], h.runs[j] = h.runs[j], h.runs[i] }
func (h *runHeap) Push(x any)    { h.runs = append(h.runs, x.([]*txpool.Entry)) }
func (h *runHeap) Pop() any {
	old := h.runs
	x := old[len(old)-1]
	h.runs = old[:len(old)-1]
	return x
}

// flashblock executes the pool's executable transactions on the open block,
// logs the flashblock and publishes it.
func (s *Sequencer) flashblock() error {
	b := s.blk
	start := time.Now()
	first := len(b.txs)
	var drop []common.Hash
	runs := s.pool.Candidates(b.statedb.GetNonce)
	h := &runHeap{runs: runs, baseFee: b.header.BaseFee}
	heap.Init(h)
	for h.Len() > 0 {
		run := h.runs[0]
		e := run[0]
		if b.gp.Gas() < e.Tx.Gas() || (b.header.BaseFee != nil && e.Tx.GasFeeCapIntCmp(b.header.BaseFee) < 0) {
			s.log.Debug("transaction waits", "hash", e.Tx.Hash(), "gasLeft", b.gp.Gas(), "baseFee", b.header.BaseFee)
			heap.Pop(h) // does not fit this block or is underpriced: wait
			continue
		}
		err := s.apply(b, e.Tx)
		switch {
		case err == nil:
		case errors.Is(err, core.ErrNonceTooLow):
			drop = append(drop, e.Tx.Hash())
		case errors.Is(err, core.ErrNonceTooHigh), errors.Is(err, core.ErrGasLimitReached):
			s.log.Debug("transaction waits", "hash", e.Tx.Hash(), "err", err)
			heap.Pop(h)
			continue
		default:
			// Invalid now (e.g. funds spent by an earlier transaction): drop
			// it; the sender's later nonces wait for a replacement.
			s.log.Debug("dropping unexecutable transaction", "hash", e.Tx.Hash(), "err", err)
			drop = append(drop, e.Tx.Hash())
			heap.Pop(h)
			continue
		}
		if len(run) == 1 {
			heap.Pop(h)
		} else {
			h.runs[0] = run[1:]
			heap.Fix(h, 0)
		}
	}
	s.stats.LastBuild.Store(int64(time.Since(start)))
	if err := s.publish(b, first, true); err != nil {
		return err
	}
	included := make([]common.Hash, 0, len(b.txs)-first+len(drop))
	for _, tx := range b.txs[first:] {
		included = append(included, tx.Hash())
	}
	s.pool.Remove(append(included, drop...)...)
	return nil
}

// apply executes one transaction on the open block; on error the block is
// unchanged.
func (s *Sequencer) apply(b *openBlock, tx *types.Transaction) error {
	msg, err := core.TransactionToMessage(tx, s.signer, b.header.BaseFee)
	if err != nil {
		return err
	}
	idx := len(b.txs)
	b.statedb.SetTxContext(tx.Hash(), idx)
	snap := b.statedb.Snapshot()
	gp := b.gp.Snapshot()
	receipt, err := core.ApplyTransactionWithEVM(msg, b.gp, b.statedb, b.header.Number, common.Hash{}, b.header.Time, tx, b.evm)
	if err != nil {
		b.statedb.RevertToSnapshot(snap)
		b.gp.Set(gp)
		return err
	}
	b.txs = append(b.txs, tx)
	b.receipts = append(b.receipts, receipt)
	return nil
}

// publish turns the open block's progress since tx index first into a
// flashblock: the cumulative header, the state diff, the WAL record (synced
// when log is true) and the snapshot.
func (s *Sequencer) publish(b *openBlock, first int, log bool) error {
	root := b.statedb.IntermediateRoot(s.config.IsEIP158(b.header.Number))
	diff := b.touched.Collect(b.statedb)
	st := b.state.With(diff) // the open block's state once the record is durable
	snap := pending.Assemble(pending.Flashblock{
		Parent: b.parent, Env: b.header, Root: root, GasUsed: b.gp.Used(),
		Index: b.index, PayloadID: b.payload,
		Txs: b.txs, Receipts: b.receipts, First: first, Bloom: &b.bloom,
		Diff: diff, State: st,
	})
	built := time.Now()
	rec := b.rec
	rec.Index = b.index
	rec.Txs = make([][]byte, 0, len(b.txs)-first)
	for _, tx := range b.txs[first:] {
		raw, err := tx.MarshalBinary()
		if err != nil {
			return err
		}
		rec.Txs = append(rec.Txs, raw)
	}
	b.logged = append(b.logged, &rec)
	if log && s.wal != nil {
		t := time.Now()
		if err := s.wal.Append(&rec); err != nil {
			return err
		}
		s.stats.LastWALSync.Store(int64(time.Since(t)))
	}
	durable := time.Now()
	b.state = st
	t := time.Now()
	s.src.Publish(snap)
	s.stats.LastPublish.Store(int64(time.Since(t)))
	lag, vis := int64(time.Since(built)), int64(time.Since(durable))
	s.stats.ReadableSum.Add(lag)
	s.stats.ReadableCount.Add(1)
	s.stats.VisibleSum.Add(vis)
	if lag > s.stats.ReadableMax.Load() {
		s.stats.ReadableMax.Store(lag)
	}
	if vis > s.stats.VisibleMax.Load() {
		s.stats.VisibleMax.Store(vis)
	}
	b.index++
	s.stats.Flashblocks.Add(1)
	s.stats.Txs.Add(uint64(snap.NewTxs))
	s.notify(b.txs[first:])
	return nil
}

// seal finalises the open block, logs the seal and has the chain insert it
// as the head (state committed to the in-memory trie database). The block is
// durable through the WAL already; the caller then calls chain.Flush with the
// returned root to write the state to disk and sync. want, during replay, is
// the hash the block had when first sealed.
func (s *Sequencer) seal(want *common.Hash) (common.Hash, error) {
	start := time.Now()
	b := s.blk
	header := types.CopyHeader(b.header)
	var logs []*types.Log
	for _, r := range b.receipts {
		logs = append(logs, r.Logs...)
	}
	requests, err := syscalls.Post(s.config, header, logs, b.evm)
	if err != nil {
		return common.Hash{}, fmt.Errorf("block %d post-execution: %w", header.Number, err)
	}
	if requests != nil {
		rh := types.CalcRequestsHash(requests)
		header.RequestsHash = &rh
	}
	header.GasUsed = b.gp.Used()
	header.Root = b.statedb.IntermediateRoot(s.config.IsEIP158(header.Number))
	if header.BlobGasUsed != nil {
		var blobGas uint64
		for _, r := range b.receipts {
			blobGas += r.BlobGasUsed
		}
		header.BlobGasUsed = &blobGas
	}
	body := &types.Body{Transactions: b.txs}
	if header.WithdrawalsHash != nil {
		body.Withdrawals = make([]*types.Withdrawal, 0)
	}
	block := types.NewBlock(header, body, b.receipts, trie.NewStackTrie(nil), s.config)
	hash := block.Hash()
	if want != nil && *want != hash {
		s.log.Error("replayed block differs from the one sealed before the crash", "number", header.Number, "was", *want, "now", hash)
	}
	sealRec := &record{Kind: recSeal, Number: header.Number.Uint64(), Parent: header.ParentHash, Hash: hash}
	if want == nil && s.wal != nil {
		if err := s.wal.Append(sealRec); err != nil {
			return common.Hash{}, err
		}
	}
	root, err := s.chain.InsertSealed(block, b.receipts, b.statedb)
	if err != nil {
		return common.Hash{}, err
	}
	s.prevLogged = append(b.logged, sealRec)
	s.blk = nil
	n := block.NumberU64()
	s.chain.SetSafe(s.lagged(n, s.cfg.SafeLag))
	s.chain.SetFinalized(s.lagged(n, s.cfg.FinalizedLag))
	d := time.Since(start)
	s.stats.LastSeal.Store(int64(d))
	if int64(d) > s.stats.MaxSeal.Load() {
		s.stats.MaxSeal.Store(int64(d))
	}
	s.stats.Blocks.Add(1)
	s.log.Debug("sealed block", "number", n, "hash", hash, "txs", len(b.txs), "gas", header.GasUsed, "elapsed", d)
	return root, nil
}

func (s *Sequencer) lagged(n, lag uint64) *types.Header {
	if n < lag {
		return s.chain.HeaderByNumber(0)
	}
	return s.chain.HeaderByNumber(n - lag)
}

// walContent is what the WAL must hold after a rotation: the admission
// records of every pooled transaction, the last sealed block's records and
// the open block's flashblocks. The last sealed block stays because the
// chain's Flush leaves the state snapshot's disk layer one block behind: a
// crash can make go-ethereum's repair rewind the head to the block's parent,
// and replaying these records seals it again.
func (s *Sequencer) walContent() []*record {
	all := s.pool.All()
	out := make([]*record, 0, len(all))
	for _, e := range all {
		raw, err := e.Tx.MarshalBinary()
		if err != nil {
			continue
		}
		out = append(out, &record{Kind: recAdmit, Txs: [][]byte{raw}})
	}
	out = append(out, s.prevLogged...)
	if s.blk != nil {
		out = append(out, s.blk.logged...)
	}
	return out
}

// notify wakes the eth_sendRawTransactionSync callers waiting for txs.
func (s *Sequencer) notify(txs types.Transactions) {
	s.waitMu.Lock()
	defer s.waitMu.Unlock()
	if len(s.waiters) == 0 {
		return
	}
	for _, tx := range txs {
		h := tx.Hash()
		for _, ch := range s.waiters[h] {
			close(ch)
		}
		delete(s.waiters, h)
	}
}

// watch returns a channel closed when hash is pre-confirmed, and a cancel.
func (s *Sequencer) watch(hash common.Hash) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	s.waitMu.Lock()
	s.waiters[hash] = append(s.waiters[hash], ch)
	s.waitMu.Unlock()
	return ch, func() {
		s.waitMu.Lock()
		defer s.waitMu.Unlock()
		list := s.waiters[hash]
		for i, c := range list {
			if c == ch {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(s.waiters, hash)
		} else {
			s.waiters[hash] = list
		}
	}
}

// Admit validates tx, adds it to the pool and logs the admission durably.
func (s *Sequencer) Admit(tx *types.Transaction) (txpool.Result, error) {
	if err := s.Err(); err != nil {
		return txpool.Result{}, fmt.Errorf("sequencer stopped: %w", err)
	}
	res, err := s.pool.Add(tx)
	if err != nil {
		return res, err
	}
	if s.wal != nil {
		raw, err := tx.MarshalBinary()
		if err != nil {
			return res, err
		}
		if err := s.wal.Append(&record{Kind: recAdmit, Txs: [][]byte{raw}}); err != nil {
			s.pool.Remove(tx.Hash())
			return res, fmt.Errorf("journal transaction: %w", err)
		}
	}
	return res, nil
}
