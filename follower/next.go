package follower

import (
	"errors"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/remote"
)

// The next block without waiting. When index 0 of block N+1 arrives naming
// as its parent the block N pre-confirmed here — the hash of the last
// snapshot re-executed, which commits to N's whole content — N+1 is opened
// at once on N's pending state, as Base's node does, instead of waiting
// for the upstream to import and serve N. Pending is then a chain: the
// block on the sealed head, and after it the blocks that build on it.
//
// When the upstream seals N: a sealed N with the hash pre-confirmed is N
// (same parent, environment, transactions, receipts and claimed state
// root), so N+1 is kept as it is, not executed again; a different N
// contradicts N+1's parent, so the tracker no longer offers N+1 and pending
// is rebuilt from what builds on the sealed N (nothing until the builder
// sends it). Invariants: every block of the chain is one the feed
// published, executed on its parent's state as re-executed here; pending is
// never older than latest (it is ahead of it); a block the sealed chain
// contradicts is dropped before the head is shown (onHead).
//
// A block opened on a pre-confirmed parent reads that parent's final
// pending state: diffs stacked on the newest sealed block's state (read
// from the upstream by that block's hash, which it has). When a block
// below has been sealed since, the diffs are flattened onto the newer
// sealed state instead, so the stack does not grow with every block the
// upstream lags.

// chainBlock is one block of the pending chain and its last snapshot.
type chainBlock struct {
	blk  *openBlock
	snap *pending.Snapshot
	// ahead: opened on a pre-confirmed parent the upstream had not sealed;
	// cleared once that parent is sealed (noteAhead)
	ahead bool
}

// maxPreconfirmed bounds how many blocks the pending chain holds after the
// one on the sealed head (the tracker buffers at most Ahead past it).
const maxPreconfirmed = 8

// syncChain brings the pending chain up to date: fbs executed on the sealed
// parent, then each block after (after(hash) gives the flashblocks of the
// block whose parent is hash) on the one before, keeping the blocks already
// executed. published(fbs) gives the callback for each snapshot of fbs'
// block. On failure it returns the flashblocks of the block that failed;
// the blocks before it stay pending (settle).
func (e *executor) syncChain(parent *types.Header, fbs []*flashblock.Message, after func(common.Hash) []*flashblock.Message,
	published func([]*flashblock.Message) func(*pending.Snapshot)) ([]*flashblock.Message, error) {
	if parent == nil || len(fbs) == 0 {
		e.chain = nil
		e.clear()
		return nil, nil
	}
	kept := e.chain
	e.chain = nil // rebuilt block by block: parentState reads it
	for len(fbs) > 0 && len(e.chain) <= maxPreconfirmed {
		var c chainBlock
		for _, k := range kept {
			if k.blk.payload == fbs[0].PayloadID && k.blk.Parent.Hash() == parent.Hash() {
				c = k
				break
			}
		}
		e.blk = c.blk
		if c.blk == nil && len(e.chain) > 0 {
			c.ahead = true
		}
		onPublish := published(fbs)
		err := e.sync(parent, fbs, func(s *pending.Snapshot) {
			c.snap = s
			onPublish(s)
		})
		if err != nil {
			e.settle(c, parent, fbs[0].PayloadID, errors.Is(err, ErrInvalidFlashblock))
			return fbs, err
		}
		c.blk = e.blk
		e.chain = append(e.chain, c)
		parent = c.blk.last
		fbs = after(parent.Hash())
	}
	return nil, nil
}

// settle decides what pending shows after block c of the chain (payload
// id on parent) failed, the blocks before it standing. Pending never goes
// through nothing on the way, and never shows a block that does not stand:
//   - a retryable failure (an upstream read) keeps what the block already
//     showed: its snapshots are right, and it is executed again from its
//     start at the next event (it stays in the chain, marked broken);
//   - a flashblock that cannot be applied drops the block (and the ones
//     after it): pending is the final snapshot of the block before it, or,
//     when the failed block was the one on the sealed head, nothing above
//     latest (pending answers latest) until the next index 0.
//
// Either way pending is never older than latest: every block of the chain
// builds on the sealed head.
func (e *executor) settle(c chainBlock, parent *types.Header, payload flashblock.PayloadID, invalid bool) {
	b := e.blk
	if !invalid && c.snap != nil && b != nil && b.payload == payload && b.Parent.Hash() == parent.Hash() {
		b.broken = true
		c.blk = b
		e.chain = append(e.chain, c)
		e.show(c.snap)
		return
	}
	if n := len(e.chain); n > 0 {
		e.blk = e.chain[n-1].blk
		e.show(e.chain[n-1].snap)
		return
	}
	e.blk = nil
	e.show(nil)
}

// show makes s what pending shows, unless it is already. s was published
// before (a snapshot of the chain), so it is restored without being
// announced again: the /flashblocks feed would replay it. Nothing (nil) is
// published, so that subscribers see pending end.
func (e *executor) show(s *pending.Snapshot) {
	switch {
	case e.src.Current() == s:
	case s == nil:
		e.src.Publish(nil)
	default:
		e.src.Restore(s)
	}
}

// parentState is the state a block opens on: the sealed parent's, read
// from the upstream, or, when the parent is a block of the pending chain
// the upstream has not sealed, that block's final pending state. It returns
// the sealed state underneath (for prefetches and carry-over), the reader
// and the pending state the block's diffs stack on.
func (e *executor) parentState(parent *types.Header) (*remote.State, state.Reader, *pending.State) {
	st, b := e.openBase(parent)
	switch {
	case b == nil:
		return st, st, pending.NewState(st)
	case st == b.base:
		return b.base, b.state, b.state
	}
	ps := pending.NewState(st).With(b.state.Flatten())
	return st, ps, ps
}

// openBase is the sealed state a block opened on parent now reads through:
// the parent's own when it is sealed (b nil), else, for a block b of the
// pending chain, the newest sealed state below it (b's own base, or a
// block after that the upstream has sealed since).
func (e *executor) openBase(parent *types.Header) (st *remote.State, b *openBlock) {
	hash := parent.Hash()
	if e.headers.cached(hash) == nil {
		for i, c := range e.chain {
			b := c.blk
			if b.last == nil || b.last.Hash() != hash {
				continue
			}
			sealed := e.sealedBelow(i)
			if sealed == nil || sealed.Hash() == b.base.BlockHash() {
				return b.base, b
			}
			return e.stateAt(sealed), b
		}
	}
	return e.stateAt(parent), nil
}

// sealedBelow is the newest sealed block below the chain's i-th block (its
// first block's parent, or a block after it the upstream has sealed since).
func (e *executor) sealedBelow(i int) *types.Header {
	var sealed *types.Header
	if p := e.chain[0].blk.Parent; e.headers.cached(p.Hash()) != nil {
		sealed = p
	}
	for _, c := range e.chain[:i] {
		if h := c.blk.last; h != nil && e.headers.cached(h.Hash()) != nil {
			sealed = h
		}
	}
	return sealed
}

// opened is the pending chain's block at number, or nil (also when it is
// broken: its execution is not what it showed).
func (e *executor) opened(number uint64) *openBlock {
	for _, c := range e.chain {
		if c.blk.Header.Number.Uint64() == number && !c.blk.broken {
			return c.blk
		}
	}
	return nil
}

// extends reports whether fb opens a block on the pending chain's last
// block (executed at once, syncChain).
func (e *executor) extends(fb *flashblock.Message) bool {
	n := len(e.chain)
	return n > 0 && n <= maxPreconfirmed && fb.Base != nil && e.chain[n-1].blk.last != nil && e.chain[n-1].blk.last.Hash() == fb.Base.ParentHash
}

// preconfirmed are the blocks of the pending chain that a later one builds
// on (not sealed yet, or just sealed): their headers serve BLOCKHASH and
// their states the API's reads by root.
func (e *executor) preconfirmed() map[common.Hash]*openBlock {
	if len(e.chain) < 2 {
		return nil
	}
	m := make(map[common.Hash]*openBlock, len(e.chain)-1)
	for _, c := range e.chain[:len(e.chain)-1] {
		m[c.blk.last.Hash()] = c.blk
	}
	return m
}

// noteAhead counts, after a sync, the blocks opened ahead of their parent's
// seal (opened), and what became of them once the parent was sealed at or
// below head: kept (the same execution goes on, nothing re-executed, or
// the block is itself the sealed head) or dropped (the sealed parent
// differs, or the block was superseded).
func (f *Follower) noteAhead(before []chainBlock, head uint64) {
	now := f.exec.chain
	in := func(b *openBlock, list []chainBlock) int {
		for i, c := range list {
			if c.blk == b {
				return i
			}
		}
		return -1
	}
	for _, c := range now {
		if c.ahead && in(c.blk, before) < 0 {
			f.ahead.opened.Add(1)
		}
	}
	for _, c := range before {
		if !c.ahead {
			continue
		}
		i := in(c.blk, now)
		switch {
		case i < 0 && c.blk.last != nil && f.headers.cached(c.blk.last.Hash()) != nil:
			// Sealed itself as pre-confirmed, in the same head move as its
			// parent (an upstream that caught up by two blocks at once): it
			// left the chain as the head, not dropped.
			f.ahead.kept.Add(1)
		case i < 0:
			f.ahead.dropped.Add(1)
		case c.blk.Parent.Number.Uint64() <= head:
			f.ahead.kept.Add(1)
			now[i].ahead = false
		}
	}
}

// aheadCounts count the blocks opened ahead of their parent's seal.
type aheadCounts struct{ opened, kept, dropped atomic.Uint64 }
