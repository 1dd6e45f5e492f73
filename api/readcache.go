package api

import (
	"sync"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/pending"
)

// Read caches for immutable states. A sealed block's state and a published
// pending snapshot never change, so a value read from one can answer every
// later read of the same account or slot in it. Profiles of eth_getBalance
// and eth_getStorageAt showed go-ethereum's snapshot reader (hashing the
// address and slot, decoding the account RLP, ~8 allocations) as the
// largest cost after the socket I/O; the caches answer repeated reads with
// one map lookup. Each cache is bounded and lives exactly as long as its
// state is the one being read (the head's, or the current snapshot's).

// maxCachedReads bounds the entries of one cache (accounts and slots each).
const maxCachedReads = 1 << 15

// cachingReader is a state.Reader that remembers accounts and slots.
type cachingReader struct {
	state.Reader
	accounts, slots sync.Map // common.Address → *types.StateAccount (nil: absent); slotKey → common.Hash
	nAccounts       atomic.Int32
	nSlots          atomic.Int32
}

type slotKey struct {
	addr common.Address
	slot common.Hash
}

func newCachingReader(r state.Reader) *cachingReader { return &cachingReader{Reader: r} }

// Account returns a copy (the Reader contract lets callers modify it).
func (c *cachingReader) Account(addr common.Address) (*types.StateAccount, error) {
	if v, ok := c.accounts.Load(addr); ok {
		return copyAccount(v.(*types.StateAccount)), nil
	}
	acct, err := c.Reader.Account(addr)
	if err != nil {
		return nil, err // not cached: the next read tries again
	}
	if c.nAccounts.Load() < maxCachedReads {
		if _, loaded := c.accounts.LoadOrStore(addr, copyAccount(acct)); !loaded {
			c.nAccounts.Add(1)
		}
	}
	return acct, nil
}

func (c *cachingReader) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	k := slotKey{addr, slot}
	if v, ok := c.slots.Load(k); ok {
		return v.(common.Hash), nil
	}
	v, err := c.Reader.Storage(addr, slot)
	if err != nil {
		return common.Hash{}, err
	}
	if c.nSlots.Load() < maxCachedReads {
		if _, loaded := c.slots.LoadOrStore(k, v); !loaded {
			c.nSlots.Add(1)
		}
	}
	return v, nil
}

func copyAccount(a *types.StateAccount) *types.StateAccount {
	if a == nil {
		return nil
	}
	return a.Copy()
}

// snapshotReaders caches the reader of the current pending snapshot.
type snapshotReaders struct {
	last atomic.Pointer[snapshotReader]
}

type snapshotReader struct {
	snap *pending.Snapshot
	r    *cachingReader
}

func (c *snapshotReaders) get(snap *pending.Snapshot) state.Reader {
	if sr := c.last.Load(); sr != nil && sr.snap == snap {
		return sr.r
	}
	sr := &snapshotReader{snap: snap, r: newCachingReader(snap.State)}
	c.last.Store(sr)
	return sr.r
}
