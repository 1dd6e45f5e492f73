package api

import (
	"fmt"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
)

// blockRefParam decodes an optional selector at position i (default latest).
func blockRefParam(p rpc.Params, i int) (ethjson.BlockRef, error) {
	ref := ethjson.Latest
	if _, err := p.Optional(i, &ref); err != nil {
		return ref, err
	}
	return ref, nil
}

// stateAt resolves a selector to a header and a reader of the state after it.
// For "pending" the snapshot is returned too (nil when nothing is pending).
func (a *API) stateAt(ref ethjson.BlockRef) (*types.Header, state.Reader, *pending.Snapshot, error) {
	if ref.Tag == ethjson.TagPending {
		if snap := a.pendingSnapshot(); snap != nil {
			if snap.State == nil {
				return snap.Header, snap.State, snap, nil
			}
			return snap.Header, a.snapReaders.get(snap), snap, nil
		}
		ref = ethjson.Latest
	}
	h, err := a.header(ref)
	if err != nil {
		return nil, nil, nil, err
	}
	r, err := a.readers.get(a.chain, h.Root)
	if err != nil {
		return nil, nil, nil, &rpc.ServerError{Msg: fmt.Sprintf("state not available for block %d: %v", h.Number.Uint64(), err)}
	}
	return h, r, nil, nil
}

// pendingSnapshot is the current snapshot if it builds on the sealed head,
// or on a pre-confirmed block above it (a follower executes the next block
// before its upstream seals the parent, and withdraws it before showing a
// head that contradicts it). A snapshot over an older head is stale (its
// block was just sealed): the sealed head then already holds everything it
// pre-confirmed.
func (a *API) pendingSnapshot() *pending.Snapshot {
	if a.pending == nil {
		return nil
	}
	snap := a.pending.Current()
	if snap == nil || snap.Parent == nil {
		return nil
	}
	head := a.chain.Head()
	// Header.Hash re-encodes and hashes the header on every call; it was a
	// third of the CPU of a pending eth_getBalance. The same header object,
	// or a different height, decide without hashing.
	switch {
	case snap.Parent == head:
		return snap
	case snap.Parent.Number.Cmp(head.Number) > 0:
		return snap
	case snap.Parent.Number.Cmp(head.Number) < 0:
		return nil
	case a.hashes.of(snap.Parent) != a.hashes.of(head):
		return nil
	}
	return snap
}

// hashCache remembers the hashes of the last headers hashed (headers are
// never modified once made).
type hashCache struct {
	last [2]atomic.Pointer[hashedHeader]
	next atomic.Uint32
}

type hashedHeader struct {
	h    *types.Header
	hash common.Hash
}

func (c *hashCache) of(h *types.Header) common.Hash {
	for i := range c.last {
		if e := c.last[i].Load(); e != nil && e.h == h {
			return e.hash
		}
	}
	e := &hashedHeader{h: h, hash: h.Hash()}
	c.last[c.next.Add(1)%uint32(len(c.last))].Store(e)
	return e.hash
}

// header resolves a sealed-chain selector (pending resolves to the pending
// header when one exists, else to latest).
func (a *API) header(ref ethjson.BlockRef) (*types.Header, error) {
	if ref.Hash != nil {
		h := a.chain.HeaderByHash(*ref.Hash)
		if h == nil {
			return nil, rpc.ErrHeaderNotFound
		}
		if ref.RequireCanonical && !a.chain.IsCanonical(h) {
			return nil, &rpc.ServerError{Msg: "hash is not currently canonical"}
		}
		return h, nil
	}
	var h *types.Header
	switch ref.Tag {
	case ethjson.TagLatest:
		h = a.chain.Head()
	case ethjson.TagPending:
		if snap := a.pendingSnapshot(); snap != nil {
			return snap.Header, nil
		}
		h = a.chain.Head()
	case ethjson.TagSafe:
		h = a.chain.Safe()
		if h == nil {
			return nil, &rpc.ServerError{Msg: "safe block not found"}
		}
	case ethjson.TagFinalized:
		h = a.chain.Finalized()
		if h == nil {
			return nil, &rpc.ServerError{Msg: "finalized block not found"}
		}
	case ethjson.TagEarliest:
		h = a.chain.HeaderByNumber(0)
	default:
		h = a.chain.HeaderByNumber(ref.Number)
	}
	if h == nil {
		return nil, rpc.ErrHeaderNotFound
	}
	return h, nil
}

// readerCache keeps the state reader of the root read last. Opening a reader
// (a trie over the root and a snapshot lookup) cost more than the read itself
// in profiles of eth_getBalance, and nearly every read is of the head's
// state. Readers are safe for concurrent use and a root's state never
// changes, so one reader serves every request for that root.
type readerCache struct {
	last atomic.Pointer[cachedReader]
}

type cachedReader struct {
	root common.Hash
	r    state.Reader
}

func (c *readerCache) get(ch interface {
	StateReader(common.Hash) (state.Reader, error)
}, root common.Hash) (state.Reader, error) {
	if cr := c.last.Load(); cr != nil && cr.root == root {
		return cr.r, nil
	}
	r, err := ch.StateReader(root)
	if err != nil {
		return nil, err
	}
	cr := &cachedReader{root: root, r: newCachingReader(r)}
	c.last.Store(cr)
	return cr.r, nil
}
