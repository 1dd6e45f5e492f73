package follower

import (
	"math/big"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/opstack"
	"github.com/preconf/preconf/remote"
)

// Opening the next block from local state. What a block reads before its
// first snapshot that no block before it read — the ring-buffer slots the
// system calls write (EIP-4788's by timestamp, EIP-2935's by number), and
// the system contracts' accounts once their storage has moved, which
// carry-over leaves out — is fetched in the background as soon as the
// state the next block will open on is known: when a block joins the
// pending chain (the next opens on its pending state, over the same sealed
// state) and when a head is sealed (the next opens over the newer sealed
// state). The number is the last block's plus one, the timestamp the last
// block's plus its own gap to its parent (a chain's block time); a wrong
// guess only leaves the opening to read what it needs, as before. Index 0
// of the next block then opens without waiting on the upstream: counted as
// blocks_opened against blocks_opened_cold.
//
// Measured before it (go test -run TestBlockBoundaryFreshness ./tests/faults/
// -args -freshness 15s): every index 0 opened ahead read 6 values (two
// eth_getProof round trips) on its visible path.

// preopened is the next block's start fetched ahead: the sealed state it
// was fetched into and the block number (loop only), and whether a fetch
// is under way.
type preopened struct {
	st      *remote.State
	number  uint64
	running atomic.Bool
}

// preopen fetches, in the background, what the block after the pending
// chain (or after head, the sealed head, when nothing is pending) reads
// when it opens, unless that was done already for the same state and
// number, or a fetch is still under way (at most one: a stalled upstream
// does not pile goroutines up; the next event asks again). It returns a
// channel closed when the fetch is done, nil if none was started.
func (e *executor) preopen(head *types.Header) <-chan struct{} {
	parent, grand := e.nextParent(head)
	p := &e.preopened
	if parent == nil || p.running.Load() {
		return nil
	}
	st, _ := e.openBase(parent)
	number := parent.Number.Uint64() + 1
	if p.st == st && p.number == number {
		return nil
	}
	p.st, p.number = st, number
	header := e.nextHeader(parent, grand)
	var accts []common.Address
	if e.config.Optimism != nil {
		accts = append(accts, opstack.L1InfoDepositor) // the L1-attributes deposit's sender
	}
	p.running.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer p.running.Store(false)
		fetched := make(chan struct{})
		go func() { st.Prefetch(accts); close(fetched) }()
		e.prefetchBlockStart(st, header)
		<-fetched
	}()
	return done
}

// nextParent is the block the next one builds on — the pending chain's
// last, or else the sealed head — and that block's parent header if known.
func (e *executor) nextParent(head *types.Header) (parent, grand *types.Header) {
	if n := len(e.chain); n > 0 {
		b := e.chain[n-1].blk
		return b.last, b.Parent
	}
	if head == nil {
		return nil, nil
	}
	return head, e.headers.cached(head.ParentHash)
}

// nextHeader is what the next block's start reads depend on, guessed: its
// number, its timestamp (the parent's gap to its own parent again) and
// fee recipient (the parent's).
func (e *executor) nextHeader(parent, grand *types.Header) *types.Header {
	gap := uint64(1)
	if grand != nil && parent.Time > grand.Time {
		gap = parent.Time - grand.Time
	}
	return &types.Header{
		Number: new(big.Int).Add(parent.Number, common.Big1), Time: parent.Time + gap,
		Coinbase: parent.Coinbase, ParentHash: parent.Hash(),
	}
}

// openCounts count the blocks opened (index 0 applied on a new execution)
// and the state values read from the upstream between the start of the
// opening and the first snapshot: the round trips on a block boundary's
// visible path. Values read by any goroutine in that window count (the
// shared counter is the upstream's): the opening waits for those too.
type openCounts struct {
	opened  atomic.Uint64 // blocks opened
	cold    atomic.Uint64 // of which read at least one value from the upstream
	fetched atomic.Uint64 // values read from the upstream while opening
}

func (c *openCounts) note(fetched uint64) {
	c.opened.Add(1)
	if fetched > 0 {
		c.cold.Add(1)
		c.fetched.Add(fetched)
	}
}
