package sequencer

import (
	"github.com/preconf/preconf/impersonate"

	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/blockexec"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/txpool"
)

// openBlock is the block being built. Only the sequencer goroutine uses it
// (and Start, before that goroutine runs): its StateDB and EVM are not safe
// for concurrent use, and readers see the block only through the immutable
// snapshots publish hands to the pending source.
type openBlock struct {
	// Block is the block's execution: environment, state, EVM, gas pool,
	// transactions and receipts.
	*blockexec.Block
	rec     record // the environment as logged at index 0
	index   uint64 // next flashblock index
	shown   int    // transactions published so far (the next flashblock's first)
	payload [8]byte
	state   *pending.State
	// entries are the encodings of what was applied since the last
	// flashblock record, in order: the next record's entries.
	entries [][]byte
	// cheats are the cheat entries applied to the block, in order: a block
	// re-opened before it holds a transaction keeps them (reopen).
	cheats [][]byte
	logged []*record // this block's flashblock records (for WAL rotation)
	// sealNext: the block is sealed right after its next flashblock (a
	// mine), whose record is then the seal's durable point
	// (recFinalFlashblock).
	sealNext bool
	// lazyLog: the next flashblock record is written without an fsync of
	// its own (afterMine).
	lazyLog bool
	// withdrawals are credited when the block is finalised (only blocks
	// built by testing_buildBlockV1 have any).
	withdrawals types.Withdrawals
	// held are the senders of the transactions executed since the last
	// flashblock but not yet published (prefill), each with the nonce of
	// its first: the pool keeps them until they are published, and the
	// next fill's candidates start after them. heldStale and heldInvalid
	// are that fill's transactions to take out of the pool then.
	held                   map[common.Address]uint64
	heldStale, heldInvalid []common.Hash
	heldTook               time.Duration // executing and hashing them
}

// openNext opens the block on top of the chain head. env, when given (WAL
// replay), fixes the environment; otherwise it is chosen now.
func (s *Sequencer) openNext(env *record) error { return s.open(env, nil) }

// reopen opens the open block again on the same parent with an
// environment chosen now (time, coinbase, base fee, gas limit), keeping
// the cheats applied to it. It must hold no transaction (but an OP-stack
// block's L1-attributes deposit, then the new time's): their results
// depend on the environment and are pre-confirmed.
func (s *Sequencer) reopen() error {
	old := s.blk
	if !old.empty() {
		return fmt.Errorf("re-opening block %d with %d transactions", old.Header.Number, len(old.Txs))
	}
	if err := s.open(nil, old.cheats); err != nil {
		return err
	}
	// A new payload, as a builder's fail-over starts one: a follower or
	// feed client takes a new payload's index 0 as the block's start over
	// (feed.Tracker), where it ignores the same payload's index 0 again.
	s.blk.setPayload(rebuiltPayload(old.payload))
	return nil
}

// setPayload names b's payload id, logged with its flashblock records
// (record.Hash) so that replay publishes it again under the same id.
func (b *openBlock) setPayload(id [8]byte) {
	b.payload = id
	b.rec.Hash = common.Hash{}
	copy(b.rec.Hash[:], id[:])
}

// firstPayload is the payload id of the first build of the block after
// parent; rebuiltPayload is the id of a rebuild of the payload id
// (a chain of hashes: every rebuild of the block gets a new one).
func firstPayload(parent common.Hash, number *big.Int) (id [8]byte) {
	copy(id[:], crypto.Keccak256(parent.Bytes(), number.Bytes(), []byte("preconf payload")))
	return id
}

func rebuiltPayload(id [8]byte) (next [8]byte) {
	copy(next[:], crypto.Keccak256(id[:], []byte("preconf payload rebuilt")))
	return next
}

// open opens the block on top of the chain head with the cheats applied.
// On an OP-stack chain a block opened now starts with its L1-attributes
// deposit, then the cheats, then the user deposits queued (injected after
// the cheats were made: on anvil --optimism too a deposit executes on top
// of the cheats made before it is mined).
func (s *Sequencer) open(env *record, cheats [][]byte) error {
	parent := s.chain.Head()
	b, err := s.newBlock(parent, s.blockEnv(parent, env))
	if err != nil {
		return err
	}
	// Replay applies the deposits from the log instead.
	deposits := s.op != nil && env == nil
	if deposits {
		if err := s.openL1Deposit(b); err != nil {
			return err
		}
	}
	for _, c := range cheats {
		if err := applyCheatEntry(b, c); err != nil {
			return err
		}
		b.entries = append(b.entries, c)
	}
	if deposits {
		if err := s.applyQueuedDeposits(b); err != nil {
			return err
		}
		if err := s.applyUpgrades(b); err != nil {
			return err
		}
	}
	s.blk = b
	return nil
}

// newBlock opens a block on parent with the environment rec (blockexec.Open:
// the chain's rules at rec.Time, its state, EVM and gas pool, after the
// system calls that precede transactions). It touches nothing of the
// sequencer's, so a block that will not be sealed (testing_buildBlockV1) is
// built with it outside the sequencer goroutine.
func (s *Sequencer) newBlock(parent *types.Header, rec record) (*openBlock, error) {
	header := pending.NewHeader(s.config, parent, pending.Env{
		Coinbase: rec.Coinbase, GasLimit: rec.GasLimit, Time: rec.Time, Extra: rec.Extra,
		Random: rec.Random, BeaconRoot: rec.BeaconRoot, BaseFee: rec.BaseFee,
	})
	statedb, err := s.chain.StateAt(parent)
	if err != nil {
		return nil, fmt.Errorf("state of block %d: %w", parent.Number, err)
	}
	base, err := s.chain.StateReader(parent.Root)
	if err != nil {
		return nil, fmt.Errorf("state reader of block %d: %w", parent.Number, err)
	}
	exec, err := blockexec.Open(s.config, s.chain.ChainContext(), parent, header, statedb)
	if err != nil {
		return nil, err
	}
	b := &openBlock{Block: exec, rec: rec, state: pending.NewState(base)}
	if id := rec.Hash; id != (common.Hash{}) { // logged (replay): the id published then
		b.setPayload([8]byte(id[:8]))
	} else {
		b.setPayload(firstPayload(parent.Hash(), header.Number))
	}
	return b, nil
}

// blockEnv is the environment record (flashblock index 0) of the block
// after parent: env's when given (WAL replay), otherwise chosen now.
func (s *Sequencer) blockEnv(parent *types.Header, env *record) record {
	number := parent.Number.Uint64() + 1
	rec := record{Kind: recFlashblock, Number: number, Parent: parent.Hash()}
	if env != nil {
		rec.Time, rec.Coinbase, rec.GasLimit, rec.Random, rec.BeaconRoot, rec.Extra = env.Time, env.Coinbase, env.GasLimit, env.Random, env.BeaconRoot, env.Extra
		rec.BaseFee, rec.Hash = env.BaseFee, env.Hash
		return rec
	}
	rec.Time = s.set.clock.blockTime(parent)
	rec.Extra = carriedExtra(s.config, parent, rec.Time)
	rec.Coinbase = s.set.coinbase
	rec.GasLimit = s.gasLimit(parent)
	if s.set.baseFee != nil && s.set.baseFeeFor == number {
		rec.BaseFee = s.set.baseFee
	}
	var nb [8]byte
	binary.BigEndian.PutUint64(nb[:], number)
	rec.Random = crypto.Keccak256Hash([]byte("preconf prevrandao"), nb[:])
	rec.BeaconRoot = parent.Hash()
	s.opEnv(&rec, parent)
	return rec
}

// carriedExtra is the extraData a block keeps from its parent: from
// Holocene on, an OP-stack header carries its EIP-1559 parameters there and
// op-geth computes the next base fee from the parent's (empty extraData
// would divide by zero). Blocks of other chains carry none.
func carriedExtra(config *params.ChainConfig, parent *types.Header, time uint64) []byte {
	if config.IsOptimismHolocene(parent.Time) && config.IsOptimismHolocene(time) {
		return common.CopyBytes(parent.Extra)
	}
	return nil
}

// gasLimit is the gas limit of a block on parent: the parent's, moved
// toward GasCeil by go-ethereum's rule when one is set.
func (s *Sequencer) gasLimit(parent *types.Header) uint64 {
	if s.set.gasLimit != 0 {
		return s.set.gasLimit
	}
	if s.cfg.GasCeil != 0 {
		return core.CalcGasLimit(s.steadyGasLimit(parent), s.cfg.GasCeil)
	}
	return s.steadyGasLimit(parent)
}

// runHeap orders the candidates: per-sender runs by their head's effective
// tip, then arrival. Each head's tip is computed once, when it becomes the
// head (newRunHeap, advance): Less runs ~2 log n times per transaction and
// computing a tip allocates.
type runHeap struct {
	runs    [][]*txpool.Entry
	tips    []*big.Int // tips[i]: runs[i][0]'s effective tip
	baseFee *big.Int
}

func newRunHeap(runs [][]*txpool.Entry, baseFee *big.Int) *runHeap {
	h := &runHeap{runs: runs, tips: make([]*big.Int, len(runs)), baseFee: baseFee}
	for i, r := range runs {
		h.tips[i] = h.tip(r[0])
	}
	heap.Init(h)
	return h
}

// tip is e's effective tip at the block's base fee (negative below it: the
// order is kept, fits decides).
func (h *runHeap) tip(e *txpool.Entry) *big.Int { return e.Tx.EffectiveGasTipValue(h.baseFee) }

// advance drops the best run's head, which was applied.
func (h *runHeap) advance() {
	if run := h.runs[0]; len(run) > 1 {
		h.runs[0], h.tips[0] = run[1:], h.tip(run[1])
		heap.Fix(h, 0)
		return
	}
	heap.Pop(h)
}

func (h *runHeap) Len() int { return len(h.runs) }
func (h *runHeap) Less(i, j int) bool {
	if c := h.tips[i].Cmp(h.tips[j]); c != 0 {
		return c > 0
	}
	return h.runs[i][0].Seq < h.runs[j][0].Seq
}
func (h *runHeap) Swap(i, j int) {
	h.runs[i], h.runs[j] = h.runs[j], h.runs[i]
	h.tips[i], h.tips[j] = h.tips[j], h.tips[i]
}
func (h *runHeap) Push(x any) {
	run := x.([]*txpool.Entry)
	h.runs, h.tips = append(h.runs, run), append(h.tips, h.tip(run[0]))
}
func (h *runHeap) Pop() any {
	n := len(h.runs) - 1
	x := h.runs[n]
	h.runs, h.tips = h.runs[:n], h.tips[:n]
	return x
}

// flashblock executes the pool's executable transactions on the open block,
// logs the flashblock and publishes it.
func (s *Sequencer) flashblock() error { return s.build(true, true) }

// firstFlashblock publishes a newly opened block: with the pool's
// executable transactions on a timed schedule; empty under manual mining,
// where they wait for the next pre-confirmation or mine (which re-open the
// block at their own time first: freshen).
func (s *Sequencer) firstFlashblock() error { return s.build(!s.mode.manual, true) }

// preconfirm is manual mining's flashblock: it pre-confirms what the pool
// has ready (and the deposits injected since), in a block re-opened at the
// current time when it has no transaction yet (on an OP-stack chain its
// flashblock 0 with the deposits, then flashblock 1), and publishes nothing
// when nothing was ready.
func (s *Sequencer) preconfirm() error {
	deposits := s.depositsQueued()
	if s.pool.Len() == 0 && !deposits {
		return nil
	}
	if s.blk.empty() {
		if !deposits && len(s.pool.Candidates(s.blk.StateDB.GetNonce)) == 0 {
			return nil // only queued (gapped) transactions
		}
		if err := s.freshen(); err != nil {
			return err
		}
	}
	alone := s.depositsAlone(s.blk)
	if err := s.build(true, false); err != nil {
		return err
	}
	if alone {
		// That flashblock held the deposits alone: what is ready goes
		// out now in flashblock 1, not an interval later.
		return s.build(true, false)
	}
	return nil
}

// build fills the open block from the pool (when fill is set) and publishes
// the flashblock, also an empty one when always is set.
func (s *Sequencer) build(fill, always bool) error {
	b := s.blk
	start := time.Now()
	first := b.shown // the block's deposits, applied when it opened, show in flashblock 0
	var stale, invalid []common.Hash
	if fill && !s.depositsAlone(b) {
		stale, invalid = s.fill(b, false)
	}
	stale, invalid = append(stale, b.heldStale...), append(invalid, b.heldInvalid...)
	// The flashblock's execution includes what prefill did ahead of it.
	s.stats.LastBuild.Store(int64(time.Since(start) + b.heldTook))
	b.held, b.heldStale, b.heldInvalid, b.heldTook = nil, nil, nil, 0
	if always || len(b.Txs) > first {
		if err := s.publish(b, first, true); err != nil {
			return err
		}
	}
	// Out of the pool only now that the flashblock is published: a pending
	// state without these transactions meets their pool nonces (txpool's
	// nonce table), never a pool without them.
	done := make([]common.Hash, 0, len(b.Txs)-first+len(stale))
	for _, tx := range b.Txs[first:] {
		done = append(done, tx.Hash())
	}
	s.pool.Remove(append(done, stale...)...)
	s.pool.Drop(invalid...)
	return nil
}

// fill applies the pool's candidates to b, best tip first, until none fits
// or, on a timed tick, its fill deadline passes (s.fillBy: the rest waits in
// the pool for the next flashblock, so that a burst cannot make this one
// late). It returns the transactions to take out of the pool: stale ones
// (their nonce was executed) and invalid ones (they cannot execute). With
// hold set, the transactions applied are held (b.held) for the next
// flashblock to publish.
func (s *Sequencer) fill(b *openBlock, hold bool) (stale, invalid []common.Hash) {
	if s.op != nil && b.Activation {
		return nil, nil // a fork's activation block takes no user transaction
	}
	h := newRunHeap(s.candidates(b), b.Header.BaseFee)
	for h.Len() > 0 {
		if !s.fillBy.IsZero() && time.Now().After(s.fillBy) {
			break
		}
		e := h.runs[0][0]
		if !s.fits(b, e.Tx) {
			s.log.Debug("transaction waits", "hash", e.Tx.Hash(), "gasLeft", b.Gas.Gas(), "baseFee", b.Header.BaseFee)
			heap.Pop(h) // does not fit this block or is underpriced: wait
			continue
		}
		// A blob transaction goes into the block without its sidecar.
		err := s.apply(b, e.Tx.WithoutBlobTxSidecar())
		switch {
		case err == nil:
		case errors.Is(err, core.ErrNonceTooLow):
			stale = append(stale, e.Tx.Hash())
		case errors.Is(err, core.ErrNonceTooHigh), errors.Is(err, core.ErrGasLimitReached):
			s.log.Debug("transaction waits", "hash", e.Tx.Hash(), "err", err)
			heap.Pop(h)
			continue
		default:
			// Invalid now (e.g. funds spent by an earlier transaction): drop
			// it; the sender's later nonces wait for a replacement.
			s.log.Debug("dropping unexecutable transaction", "hash", e.Tx.Hash(), "err", err)
			invalid = append(invalid, e.Tx.Hash())
			heap.Pop(h)
			continue
		}
		if _, ok := b.held[e.From]; hold && !ok {
			if b.held == nil {
				b.held = make(map[common.Address]uint64)
			}
			b.held[e.From] = e.Tx.Nonce()
		}
		h.advance()
	}
	return stale, invalid
}

// fits reports whether tx can execute in b now: its gas and blob gas fit
// what is left, its fee caps reach the block's base fees. Otherwise it
// waits in the pool.
func (s *Sequencer) fits(b *openBlock, tx *types.Transaction) bool {
	if b.Gas.Gas() < tx.Gas() || (b.Header.BaseFee != nil && tx.GasFeeCapIntCmp(b.Header.BaseFee) < 0) || !b.DAFits(tx) {
		return false
	}
	if tx.Type() != types.BlobTxType {
		return true
	}
	return b.BlobGas+tx.BlobGas() <= eip4844.MaxBlobGasPerBlock(s.config, b.Header.Time) &&
		b.EVM.Context.BlobBaseFee != nil && tx.BlobGasFeeCapIntCmp(b.EVM.Context.BlobBaseFee) >= 0
}

// apply executes one transaction on the open block and adds it to the
// entries of the next flashblock record; on error the block is unchanged.
func (s *Sequencer) apply(b *openBlock, tx *types.Transaction) error {
	msg, err := impersonate.Message(tx, s.signer, b.Header.BaseFee)
	if err != nil {
		return err
	}
	raw, err := tx.MarshalBinary()
	if err != nil {
		return err
	}
	if _, err := b.Apply(tx, msg); err != nil {
		return err
	}
	b.entries = append(b.entries, raw)
	return nil
}
