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

// cachingReader is a state.Reader that remembers accounts and slots, and
// the JSON answers eth_getBalance and eth_getStorageAt give for them (boxed
// once, so a repeated read allocates nothing).
type cachingReader struct {
	state.Reader
	accounts, slots sync.Map // common.Address → *accountEntry; slotKey → *slotEntry
	nAccounts       atomic.Int32
	nSlots          atomic.Int32
}

type accountEntry struct {
	acct    *types.StateAccount // nil: no such account
	balance any                 // balanceJSON(acct)
}

type slotEntry struct {
	value  common.Hash
	answer any // quotedHash(value)
}

type slotKey struct {
	addr common.Address
	slot common.Hash
}

func newCachingReader(r state.Reader) *cachingReader { return &cachingReader{Reader: r} }

func (c *cachingReader) account(addr common.Address) (*accountEntry, error) {
	if v, ok := c.accounts.Load(addr); ok {
		return v.(*accountEntry), nil
	}
	acct, err := c.Reader.Account(addr)
	if err != nil {
		return nil, err // not cached: the next read tries again
	}
	e := &accountEntry{acct: copyAccount(acct), balance: balanceJSON(acct)}
	if c.nAccounts.Load() < maxCachedReads {
		if v, loaded := c.accounts.LoadOrStore(addr, e); loaded {
			return v.(*accountEntry), nil
		}
		c.nAccounts.Add(1)
	}
	return e, nil
}

// Account returns a copy (the Reader contract lets callers modify it).
func (c *cachingReader) Account(addr common.Address) (*types.StateAccount, error) {
	e, err := c.account(addr)
	if err != nil {
		return nil, err
	}
	return copyAccount(e.acct), nil
}

// balanceAnswer is eth_getBalance's result for addr.
func (c *cachingReader) balanceAnswer(addr common.Address) (any, error) {
	e, err := c.account(addr)
	if err != nil {
		return nil, err
	}
	return e.balance, nil
}

func (c *cachingReader) slot(addr common.Address, slot common.Hash) (*slotEntry, error) {
	k := slotKey{addr, slot}
	if v, ok := c.slots.Load(k); ok {
		return v.(*slotEntry), nil
	}
	v, err := c.Reader.Storage(addr, slot)
	if err != nil {
		return nil, err
	}
	e := &slotEntry{value: v, answer: quotedHash(v)}
	if c.nSlots.Load() < maxCachedReads {
		if v, loaded := c.slots.LoadOrStore(k, e); loaded {
			return v.(*slotEntry), nil
		}
		c.nSlots.Add(1)
	}
	return e, nil
}

func (c *cachingReader) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	e, err := c.slot(addr, slot)
	if err != nil {
		return common.Hash{}, err
	}
	return e.value, nil
}

// storageAnswer is eth_getStorageAt's result for the slot.
func (c *cachingReader) storageAnswer(addr common.Address, slot common.Hash) (any, error) {
	e, err := c.slot(addr, slot)
	if err != nil {
		return nil, err
	}
	return e.answer, nil
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
