package fork

import (
	"errors"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/event"

	"github.com/preconf/preconf/blockexec"
)

// InsertSealed stores a block the sequencer sealed on the head: the block,
// its receipts and the state changes statedb holds (a StateDB from StateAt
// after IntermediateRoot, whose root the block carries), all in one batch,
// and makes it the head. It returns the block's state root for Flush.
func (c *Chain) InsertSealed(block *types.Block, receipts types.Receipts, statedb *state.StateDB) (common.Hash, error) {
	n := block.NumberU64()
	if head := c.head.Load(); block.ParentHash() != head.Hash() {
		return common.Hash{}, fmt.Errorf("block %d does not extend the head %d (%s)", n, head.Number, head.Hash())
	}
	if err := statedb.Error(); err != nil {
		return common.Hash{}, fmt.Errorf("state of block %d: %w", n, err)
	}
	tr, ok := statedb.GetTrie().(*hasher)
	if !ok {
		return common.Hash{}, errors.New("the StateDB is not one of this fork's (open it with StateAt and call IntermediateRoot)")
	}
	if root := tr.Hash(); root != block.Root() {
		return common.Hash{}, fmt.Errorf("block %d carries state root %s, its state hashes to %s", n, block.Root(), root)
	}
	g := c.gen.Load()
	parent := c.readerAt(g, n-1)
	ch := tr.changes()
	batch := c.db.NewBatch()
	var accts, slots []common.Address
	for addr, acct := range ch.accounts {
		batch.Put(key(accountPrefix, addr[:], inverted(n)), encodeAccount(acct))
		accts = append(accts, addr)
		wiped, err := storageWiped(parent, addr, acct, ch.storage[addr])
		if err != nil {
			return common.Hash{}, fmt.Errorf("block %d: %w", n, err)
		}
		if wiped {
			batch.Put(key(wipePrefix, addr[:], inverted(n)), nil)
			slots = append(slots, addr)
		}
		if st := ch.storage[addr]; st != nil && acct != nil {
			for k, v := range st.written() {
				batch.Put(key(slotPrefix, addr[:], k[:], inverted(n)), v[:])
			}
			slots = append(slots, addr)
		}
	}
	for h, code := range ch.codes {
		rawdb.WriteCode(batch, h, code)
	}
	root := block.Root()
	if ok, _ := c.db.Has(key(rootPrefix, root[:])); !ok && root != g.point.Root {
		batch.Put(key(rootPrefix, root[:]), encodeNumber(n))
	}
	rawdb.WriteBlock(batch, block)
	rawdb.WriteReceipts(batch, block.Hash(), n, receipts)
	rawdb.WriteCanonicalHash(batch, block.Hash(), n)
	rawdb.WriteTxLookupEntriesByBlock(batch, block)
	rawdb.WriteHeadHeaderHash(batch, block.Hash())
	rawdb.WriteHeadBlockHash(batch, block.Hash())
	if err := batch.Write(); err != nil {
		return common.Hash{}, fmt.Errorf("write block %d: %w", n, err)
	}
	// Readers of the new head must see its history: index it first.
	for _, a := range accts {
		g.touched.accounts.Store(a, struct{}{})
	}
	for _, a := range slots {
		g.touched.storage.Store(a, struct{}{})
	}
	c.head.Store(block.Header())
	c.announce(block)
	c.prefetchAhead(g, block.Header())
	return root, nil
}

// aheadBlocks is how far ahead of the head the block-start system calls'
// slots are fetched: every block writes ring-buffer slots of the fork
// block's state that nothing read before, so without this each block would
// wait for an upstream round trip, and would stop while the upstream is
// down. The window covers the next aheadBlocks block numbers and seconds
// (from now, or from the head's time when it is ahead of the clock).
const aheadBlocks = 64

// prefetchAhead fetches the system calls' slots of the blocks after head in
// the background (one batched request, for the slots not held already).
func (c *Chain) prefetchAhead(g *generation, head *types.Header) {
	if !c.prefetching.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer c.prefetching.Store(false)
		want := make(map[common.Address][]common.Hash)
		// The next block's time is the clock's, or the head's + 1 when
		// the clock is behind (a fork of an old block jumps to now).
		n, t := head.Number.Uint64(), max(uint64(time.Now().Unix())-1, head.Time)
		for i := uint64(1); i <= aheadBlocks; i++ {
			for a, slots := range blockexec.RingSlots(n+i, t+i) {
				want[a] = append(want[a], slots...)
			}
		}
		if err := g.base.PrefetchStorage(want); err != nil {
			c.log.Debug("prefetch of system-call slots", "err", err)
		}
	}()
}

// storageWiped reports whether the block left addr's storage empty of what
// it held before: the account is gone, or it was created anew (its storage
// trie opened empty, or its storage root empty) over one that had storage.
func storageWiped(parent *reader, addr common.Address, acct *types.StateAccount, st *hasher) (bool, error) {
	if acct == nil {
		return true, nil
	}
	fresh := acct.Root == types.EmptyRootHash || (st != nil && st.root == types.EmptyRootHash)
	if !fresh {
		return false, nil
	}
	prev, err := parent.Account(addr)
	if err != nil {
		return false, fmt.Errorf("account %s before the block: %w", addr, err)
	}
	return prev != nil && prev.Root != types.EmptyRootHash, nil
}

// announce sends the new head to subscribers, as go-ethereum's chain does.
func (c *Chain) announce(block *types.Block) {
	receipts := c.Receipts(block)
	var logs []*types.Log
	for _, r := range receipts {
		logs = append(logs, r.Logs...)
	}
	c.chainFeed.Send(core.ChainEvent{Header: block.Header(), Receipts: receipts, Transactions: block.Transactions()})
	if len(logs) > 0 {
		c.logsFeed.Send(logs)
	}
}

// Flush makes every block inserted so far durable (root is not needed:
// each block's state went to the store with it).
func (c *Chain) Flush(common.Hash) error { return c.sync() }

// SetSafe marks h safe.
func (c *Chain) SetSafe(h *types.Header) {
	if h != nil {
		c.safe.Store(h)
	}
}

// SetFinalized marks h finalized (kept across restarts).
func (c *Chain) SetFinalized(h *types.Header) {
	if h == nil {
		return
	}
	rawdb.WriteFinalizedBlockHash(c.db, h.Hash())
	c.finalized.Store(h)
}

// SubscribeChainEvent sends every new head.
func (c *Chain) SubscribeChainEvent(ch chan<- core.ChainEvent) event.Subscription {
	return c.scope.Track(c.chainFeed.Subscribe(ch))
}

// SubscribeLogsEvent sends the logs of every new head.
func (c *Chain) SubscribeLogsEvent(ch chan<- []*types.Log) event.Subscription {
	return c.scope.Track(c.logsFeed.Subscribe(ch))
}

// SubscribeRemovedLogsEvent never sends: local blocks are not reorganised.
func (c *Chain) SubscribeRemovedLogsEvent(ch chan<- core.RemovedLogsEvent) event.Subscription {
	return c.scope.Track(c.removedFeed.Subscribe(ch))
}
