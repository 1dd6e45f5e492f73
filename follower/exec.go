package follower

import (
	"errors"
	"fmt"
	"math/big"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/triedb"

	"github.com/preconf/preconf/blockexec"
	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/remote"
)

// ErrInvalidFlashblock is a flashblock that cannot be applied on the
// verified parent state (undecodable or unexecutable transaction, wrong
// environment): the builder and the canonical chain disagree, or the builder
// lies. Retrying cannot help; the block is dropped.
var ErrInvalidFlashblock = errors.New("invalid flashblock")

// executor re-executes flashblocks on the upstream's sealed state and
// publishes the resulting snapshots. It is used by one goroutine.
type executor struct {
	config  *params.ChainConfig
	shared  *remote.Shared
	headers *headers
	src     *pending.Source
	signer  types.Signer
	memdb   state.Database // empty: StateDBs read everything through their reader
	// prepared holds the flashblocks whose decoding started on arrival
	// (prepare.go); used by the loop goroutine only.
	prepared *lru[*flashblock.Message, *prepared]

	blk *openBlock
	// chain are the pending blocks executed, oldest first, blk the last:
	// each after the first opened on the one before it, pre-confirmed here
	// and not sealed yet (next.go).
	chain []chainBlock
	// stateAt gives the shared reader of a sealed block's state.
	stateAt func(*types.Header) *remote.State

	// matches/mismatches count flashblocks whose re-executed block hash
	// (with the builder's claimed state root) equals / differs from the
	// builder's block_hash.
	matches, mismatches atomic.Uint64
	// phase times of the last flashblock applied (ns): waiting for its
	// decoding with sender recovery (started on arrival, prepare.go),
	// upstream prefetch, execution, snapshot assembly.
	lastDecode, lastFetch, lastExec, lastSnap atomic.Int64
	// lastFetchWait is the part of lastFetch spent waiting for discovery's
	// fetches (the rest executed its speculative passes).
	lastFetchWait atomic.Int64
	// lastStart is when the last flashblock's application began (Unix ns):
	// the time before it since the frame arrived went to waiting (for the
	// parent head, for earlier flashblocks) and to opening the block.
	lastStart atomic.Int64
	// carried counts sealed blocks whose state was seeded from their
	// re-execution (carry.go).
	carried atomic.Uint64
	// passes bounds discovery's speculative passes per flashblock (0:
	// none, each slot fetched when the execution reaches it; speculate.go).
	passes int
	// rounds counts the upstream state round trips of applying
	// flashblocks: the prefetch (one if it fetched anything), discovery's
	// batches, and each read the execution still made itself (they are
	// sequential), taken from the state fetch counter.
	rounds atomic.Uint64
	// opens counts the blocks opened and the upstream reads on the way to
	// their first snapshot; preopened is the next block's start fetched
	// ahead (preopen.go).
	opens     openCounts
	preopened preopened
}

func newExecutor(config *params.ChainConfig, sh *remote.Shared, hs *headers, src *pending.Source) *executor {
	db := rawdb.NewMemoryDatabase()
	return &executor{
		config: config, shared: sh, headers: hs, src: src,
		signer:   types.LatestSigner(config),
		memdb:    state.NewDatabase(triedb.NewDatabase(db, nil), state.NewCodeDB(db)),
		prepared: newLRU[*flashblock.Message, *prepared](preparedKept),
		passes:   discoverPasses,
	}
}

// openBlock is the pending block being re-executed.
type openBlock struct {
	// Block is the block's execution: environment, state, EVM, gas pool,
	// transactions and receipts.
	*blockexec.Block
	payload flashblock.PayloadID
	base    *remote.State
	applied int           // flashblocks applied
	last    *types.Header // the header of the last snapshot published
	state   *pending.State
	// broken: a flashblock failed part way (transactions before the
	// failing one may be applied); the next sync opens the block again
	broken bool
}

// clear drops the pending block (nothing is pending until the next one).
func (e *executor) clear() {
	if e.blk != nil || e.src.Current() != nil {
		e.blk = nil
		e.src.Publish(nil)
	}
}

// sync makes the published pending state the result of executing fbs on
// parent: it continues the open block when fbs extends it, otherwise starts
// over. onPublish is called after each snapshot is published. On failure
// nothing more is published (what pending shows then is the caller's
// choice: syncChain's settle); a block that failed part way is marked
// broken, to be opened again.
func (e *executor) sync(parent *types.Header, fbs []*flashblock.Message, onPublish func(*pending.Snapshot)) error {
	if len(fbs) == 0 {
		e.clear()
		return nil
	}
	b := e.blk
	opening := b == nil || b.broken || b.payload != fbs[0].PayloadID || b.Parent.Hash() != parent.Hash() || b.applied > len(fbs)
	fetched := e.shared.Fetches.Load()
	if opening {
		var err error
		if b, err = e.open(parent, fbs[0]); err != nil {
			e.blk = nil
			return err
		}
		e.blk = b
	}
	for b.applied < len(fbs) {
		snap, err := e.apply(b, fbs[b.applied])
		if err != nil {
			b.broken = true
			return err
		}
		if opening && b.applied == 1 {
			e.opens.note(e.shared.Fetches.Load() - fetched)
		}
		e.src.Publish(snap)
		if onPublish != nil {
			onPublish(snap)
		}
	}
	return nil
}

// open starts re-executing a block from its index-0 environment.
func (e *executor) open(parent *types.Header, fb *flashblock.Message) (*openBlock, error) {
	base := fb.Base
	if base == nil {
		return nil, fmt.Errorf("%w: index 0 without base", ErrInvalidFlashblock)
	}
	number := new(big.Int).Add(parent.Number, common.Big1)
	if uint64(base.BlockNumber) != number.Uint64() || base.ParentHash != parent.Hash() {
		return nil, fmt.Errorf("%w: block %d on %s does not follow head %d (%s)", ErrInvalidFlashblock, base.BlockNumber, base.ParentHash, parent.Number, parent.Hash())
	}
	if uint64(base.Timestamp) <= parent.Time {
		return nil, fmt.Errorf("%w: timestamp %d not after the parent's %d", ErrInvalidFlashblock, base.Timestamp, parent.Time)
	}
	header := e.newHeader(parent, base)
	st, reader, ps := e.parentState(parent) // next.go: a sealed parent, or one pre-confirmed here
	statedb, err := state.NewWithReader(parent.Root, e.memdb, reader)
	if err != nil {
		return nil, err
	}
	// What the system calls before the first transaction read, in two
	// batches, before they run.
	e.prefetchBlockStart(st, header)
	exec, err := blockexec.Open(e.config, e.headers, parent, header, statedb)
	if err != nil { // a fork preconf does not implement: not the flashblock's fault
		return nil, err
	}
	b := &openBlock{Block: exec, payload: fb.PayloadID, base: st, state: ps}
	if err := upstreamErr(b); err != nil {
		return nil, err
	}
	return b, nil
}

// newHeader is the environment of the block base opens on parent.
func (e *executor) newHeader(parent *types.Header, base *flashblock.Base) *types.Header {
	return pending.NewHeader(e.config, parent, pending.Env{
		Coinbase: base.FeeRecipient, GasLimit: uint64(base.GasLimit), Time: uint64(base.Timestamp),
		Extra: base.ExtraData, Random: base.PrevRandao, BeaconRoot: base.ParentBeaconBlockRoot,
		BaseFee: base.BaseFeePerGas.ToInt(),
	})
}

// prefetchBlockStart loads, in two concurrent batches, what opening the
// block header on st reads before its first transaction: the fee
// recipients, and the system contracts with the slots their calls write.
// Errors are left for the execution to meet (it reads again).
func (e *executor) prefetchBlockStart(st *remote.State, header *types.Header) {
	slots := e.systemSlots(header)
	accts := e.blockAccounts(header.Coinbase)
	for a := range slots {
		accts = append(accts, a) // fetched with the slots unless all are cached
	}
	done := make(chan struct{})
	go func() { st.Prefetch(accts); close(done) }()
	st.PrefetchStorage(slots)
	<-done
}

// systemSlots are the storage slots the block-start system calls write:
// EIP-4788's timestamp and root ring buffers, EIP-2935's parent hash slot;
// on OP-stack chains also L1Block's (every block's L1-attributes deposit
// rewrites them, so they are never carried over; fetched in one batch here
// instead of one request per SLOAD in the deposit).
func (e *executor) systemSlots(h *types.Header) map[common.Address][]common.Hash {
	slots := blockexec.RingSlots(h.Number.Uint64(), h.Time)
	if e.config.Optimism != nil {
		l1 := []common.Hash{eip1967Implementation}
		for i := range l1BlockSlots {
			l1 = append(l1, common.BigToHash(big.NewInt(int64(i))))
		}
		slots[types.L1BlockAddr] = l1
	}
	return slots
}

// l1BlockSlots is how many of L1Block's first slots its setters write (the
// L1 origin, the fee scalars and parameters, Jovian's DA footprint scalar).
const l1BlockSlots = 10

// eip1967Implementation is the proxy slot holding the implementation.
var eip1967Implementation = common.HexToHash("0x360894a13ba1a3210667c828492db98dca3e2076cc3735a920a3ca505d382bbc")

// blockAccounts are the accounts every block touches besides its senders and
// recipients: the fee recipient, and on OP-stack chains the vaults the base,
// L1 and operator fees go to.
func (e *executor) blockAccounts(coinbase common.Address) []common.Address {
	if e.config.Optimism == nil {
		return []common.Address{coinbase}
	}
	return []common.Address{coinbase, params.OptimismBaseFeeRecipient, params.OptimismL1FeeRecipient, params.OptimismOperatorFeeRecipient}
}

// upstreamErr reports a read of the parent state that failed (the
// execution's results are then meaningless, but a retry may succeed).
func upstreamErr(b *openBlock) error {
	if err := b.StateDB.Error(); err != nil {
		return err
	}
	return b.base.CodeErr()
}

// decodeTxs decodes a flashblock's transactions.
func decodeTxs(raws []hexutil.Bytes) (types.Transactions, error) {
	txs := make(types.Transactions, len(raws))
	for i, raw := range raws {
		tx := new(types.Transaction)
		if err := tx.UnmarshalBinary(raw); err != nil {
			return nil, fmt.Errorf("%w: transaction %d: %v", ErrInvalidFlashblock, i, err)
		}
		txs[i] = tx
	}
	return txs, nil
}

// recoverSenders recovers the senders in parallel (the costliest step for
// large flashblocks); each transaction caches its sender for execution.
//
// The workers outnumber the cores on purpose: each recovery is a cgo call
// (~50 µs), and when the node is busy serving reads the runtime hands the
// worker's P to a reader during the call, so the worker waits in the global
// run queue after each one. With two workers, 100 recoveries took 5-38 ms
// under 32 reading connections (bench -follow); with a worker per
// recoveryBatch transactions those waits overlap.
func (e *executor) recoverSenders(txs types.Transactions) ([]common.Address, error) {
	senders := make([]common.Address, len(txs))
	errs := make([]error, len(txs))
	workers := min(maxRecoveryWorkers, (len(txs)+recoveryBatch-1)/recoveryBatch)
	if workers <= 1 {
		for i, tx := range txs {
			senders[i], errs[i] = types.Sender(e.signer, tx)
		}
	} else {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(txs); i += workers {
					senders[i], errs[i] = types.Sender(e.signer, txs[i])
				}
			}()
		}
		wg.Wait()
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%w: transaction %d sender: %v", ErrInvalidFlashblock, i, err)
		}
	}
	return senders, nil
}

// Sender recovery: a worker per recoveryBatch transactions, at most
// maxRecoveryWorkers.
const (
	recoveryBatch      = 8
	maxRecoveryWorkers = 16
)

// apply executes one flashblock's new transactions on the open block and
// returns the snapshot showing it.
func (e *executor) apply(b *openBlock, fb *flashblock.Message) (*pending.Snapshot, error) {
	t0 := time.Now()
	e.lastStart.Store(t0.UnixNano())
	txs, _, err := e.transactions(fb)
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	e.lastDecode.Store(int64(t1.Sub(t0)))
	fetches := e.shared.Fetches.Load()
	if e.passes > 0 {
		// The senders, recipients and slots they read, in a few batches.
		e.rounds.Add(uint64(e.discover(b, txs)))
	} else {
		if err := e.prefetchTxs(b, txs); err != nil {
			return nil, err
		}
		if e.shared.Fetches.Load() != fetches {
			e.rounds.Add(1)
		}
	}
	fetches = e.shared.Fetches.Load()
	t2 := time.Now()
	e.lastFetch.Store(int64(t2.Sub(t1)))
	first := len(b.Txs)
	for i, tx := range txs {
		msg, err := core.TransactionToMessage(tx, e.signer, b.Header.BaseFee)
		if err != nil {
			return nil, fmt.Errorf("%w: transaction %s: %v", ErrInvalidFlashblock, tx.Hash(), err)
		}
		if len(b.Txs) == 0 && e.config.Optimism != nil && !tx.IsDepositTx() {
			// The L1 fee fields and the DA footprint come from it.
			return nil, fmt.Errorf("%w: block %d does not open with its L1-attributes deposit", ErrInvalidFlashblock, b.Header.Number)
		}
		_, err = b.Apply(tx, msg)
		if uerr := upstreamErr(b); uerr != nil {
			return nil, uerr
		}
		if err != nil {
			return nil, fmt.Errorf("%w: transaction %d (%s) of flashblock %d: %v", ErrInvalidFlashblock, i, tx.Hash(), fb.Index, err)
		}
	}
	t3 := time.Now()
	e.lastExec.Store(int64(t3.Sub(t2)))
	e.rounds.Add(e.shared.Fetches.Load() - fetches)
	snap, err := e.snapshot(b, fb, first)
	if err != nil {
		return nil, fmt.Errorf("%w: flashblock %d: %v", ErrInvalidFlashblock, fb.Index, err)
	}
	e.lastSnap.Store(int64(time.Since(t3)))
	return snap, nil
}

// prefetchTxs fetches, in one round trip, the senders (usually cached: they
// send again and again), the recipients and the access-listed slots of txs
// (without discovery, the only reads made before they execute).
func (e *executor) prefetchTxs(b *openBlock, txs types.Transactions) error {
	accts := make([]common.Address, 0, 2*len(txs))
	slots := make(map[common.Address][]common.Hash)
	for _, tx := range txs {
		if to := tx.To(); to != nil {
			accts = append(accts, *to)
		}
		from, _ := types.Sender(e.signer, tx) // cached by the preparation
		accts = append(accts, from)
		for _, t := range tx.AccessList() {
			slots[t.Address] = append(slots[t.Address], t.StorageKeys...)
		}
	}
	fetched := make(chan error, 1)
	go func() {
		var err error
		if len(slots) > 0 {
			err = b.base.PrefetchStorage(slots)
		}
		fetched <- err
	}()
	return errors.Join(b.base.Prefetch(accts), <-fetched)
}

// snapshot assembles the pending view after the open block's latest
// flashblock (whose transactions start at index first).
func (e *executor) snapshot(b *openBlock, fb *flashblock.Message, first int) (*pending.Snapshot, error) {
	f, err := b.Flashblock(first)
	if err != nil {
		return nil, err
	}
	b.state = b.state.With(f.Diff)
	// The follower holds no trie: the state root is the builder's claim.
	// Everything else in the header comes from the re-execution.
	f.Root, f.Index, f.PayloadID, f.State = fb.Diff.StateRoot, fb.Index, b.payload, b.state
	if e.config.IsOptimismIsthmus(b.Header.Time) {
		// The L2ToL1MessagePasser's storage root: a trie root, so a claim too.
		root := fb.Diff.WithdrawalsRoot
		f.WithdrawalsRoot = &root
	}
	snap := pending.Assemble(f)
	if snap.Header.Hash() == fb.Diff.BlockHash {
		e.matches.Add(1)
	} else {
		e.mismatches.Add(1)
	}
	b.applied++
	b.last = snap.Header
	return snap, nil
}
