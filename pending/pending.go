// Package pending holds the pre-confirmed view of the chain: an immutable
// snapshot of the block being built (its environment, transactions, receipts
// and the state they produced), published by one writer (the sequencer or the
// follower) and read by any number of readers without locks.
package pending

import (
	"sync"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Snapshot is the pre-confirmed state after one flashblock. Once published it
// is never mutated: readers may hold it for as long as a request lasts.
type Snapshot struct {
	// Parent is the sealed block the pending block builds on.
	Parent *types.Header
	// Header is the pending block's header as of this flashblock: number,
	// timestamp, base fee, fee recipient, gas limit, and the cumulative gas
	// used, state root, receipts root and bloom of the block so far (so
	// Header.Hash() is the flashblocks "block_hash" so far). Only the sealed
	// block's hash is final.
	Header *types.Header
	// Index is the flashblock index within the block (0, 1, …).
	Index uint64
	// PayloadID names the block being built (constant across its flashblocks).
	PayloadID [8]byte
	// NewTxs is how many of Txs (the last ones) this flashblock added.
	NewTxs int
	// Diff is the state this flashblock alone wrote (for feeds and metadata);
	// State already includes it.
	Diff *Diff
	// Txs and Receipts are the pre-confirmed transactions so far, in order.
	// Receipts have their block number, transaction index and log indexes set.
	Txs      types.Transactions
	Receipts types.Receipts
	// State reads the pending state: the parent's state with every
	// pre-confirmed transaction applied. Safe for concurrent use.
	State *State
	// Withdrawals of the pending block (usually none on a rollup).
	Withdrawals types.Withdrawals

	txIndex map[common.Hash]int
}

// Block assembles the pending block (header, transactions, no uncles).
func (s *Snapshot) Block() *types.Block {
	body := &types.Body{Transactions: s.Txs, Withdrawals: s.Withdrawals}
	return types.NewBlockWithHeader(s.Header).WithBody(*body)
}

// Tx finds a pre-confirmed transaction by hash.
func (s *Snapshot) Tx(hash common.Hash) (tx *types.Transaction, receipt *types.Receipt, index int, ok bool) {
	i, ok := s.txIndex[hash]
	if !ok {
		return nil, nil, 0, false
	}
	var r *types.Receipt
	if i < len(s.Receipts) {
		r = s.Receipts[i]
	}
	return s.Txs[i], r, i, true
}

// Seal prepares a snapshot for publication (builds lookup indexes). It must
// be called once, before Publish.
func (s *Snapshot) Seal() *Snapshot {
	s.txIndex = make(map[common.Hash]int, len(s.Txs))
	for i, tx := range s.Txs {
		s.txIndex[tx.Hash()] = i
	}
	return s
}

// Source is the publication point: one writer publishes, readers load, and
// subscribers are told of each publication without ever slowing the writer.
type Source struct {
	cur  atomic.Pointer[Snapshot]
	mu   sync.Mutex
	subs map[chan *Snapshot]struct{}
}

// Current returns the latest published snapshot, or nil before the first.
func (s *Source) Current() *Snapshot { return s.cur.Load() }

// Publish makes snap the current snapshot. snap must not change afterwards.
func (s *Source) Publish(snap *Snapshot) {
	if snap != nil && snap.txIndex == nil {
		snap.Seal()
	}
	s.cur.Store(snap)
	s.mu.Lock()
	for ch := range s.subs {
		select {
		case ch <- snap:
		default: // a slow subscriber misses updates; it can always Load the newest
		}
	}
	s.mu.Unlock()
}

// Restore makes snap, published before, the current snapshot again
// without announcing it: subscribers (the /flashblocks feed, eth_subscribe)
// had it, and a second delivery would replay it. It is the fallback when a
// later snapshot no longer stands (a follower dropping an invalid block).
func (s *Source) Restore(snap *Snapshot) { s.cur.Store(snap) }

// Subscribe returns a channel receiving every published snapshot (buffered;
// when the subscriber falls behind, updates are dropped, never queued
// without bound) and a function that ends the subscription.
func (s *Source) Subscribe(buffer int) (<-chan *Snapshot, func()) {
	ch := make(chan *Snapshot, buffer)
	s.mu.Lock()
	if s.subs == nil {
		s.subs = make(map[chan *Snapshot]struct{})
	}
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.subs, ch)
			s.mu.Unlock()
		})
	}
}
