package simulate

import (
	"sync"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"
)

// maxCachedReads bounds one cached state's memory: past it, reads still
// work, they just are not remembered.
const maxCachedReads = 1 << 16

type slotKey struct {
	addr common.Address
	slot common.Hash
}

// cachedReader memoises the account and slot reads of an immutable state
// (a sealed block's, or one pending snapshot's). Every execution opens its
// own StateDB, so without it each request would re-read — and re-hash the
// keys of — the same accounts and system-contract slots. Safe for concurrent
// use.
type cachedReader struct {
	state.Reader
	mu       sync.RWMutex
	accounts map[common.Address]*types.StateAccount
	slots    map[slotKey]common.Hash
	facts    [numFacts]atomic.Pointer[fact]
}

// A fact is something the engine derives from the prestate alone for every
// simulated block (the system contracts' code, the request queues' slots):
// kept with the cached reader, each request over the same state reuses it.
type fact struct {
	ok    bool
	slots queueSlots
}

const (
	factBeaconCode = iota
	factHistoryCode
	factWithdrawalQueue
	factConsolidationQueue
	numFacts
)

// prestateFact is fact k of r, computed by compute unless r remembers it; a
// failed computation is not remembered.
func prestateFact(r state.Reader, k int, compute func(state.Reader) (fact, error)) (fact, error) {
	c, ok := r.(*cachedReader)
	if !ok {
		return compute(r)
	}
	if f := c.facts[k].Load(); f != nil {
		return *f, nil
	}
	f, err := compute(r)
	if err == nil {
		c.facts[k].Store(&f)
	}
	return f, err
}

func newCachedReader(r state.Reader) *cachedReader {
	return &cachedReader{Reader: r, accounts: make(map[common.Address]*types.StateAccount), slots: make(map[slotKey]common.Hash)}
}

// Account implements state.Reader; the result is the caller's to modify.
func (c *cachedReader) Account(addr common.Address) (*types.StateAccount, error) {
	c.mu.RLock()
	acct, ok := c.accounts[addr]
	c.mu.RUnlock()
	if !ok {
		var err error
		if acct, err = c.Reader.Account(addr); err != nil {
			return nil, err
		}
		c.mu.Lock()
		if len(c.accounts) < maxCachedReads {
			c.accounts[addr] = acct
		}
		c.mu.Unlock()
	}
	if acct == nil {
		return nil, nil
	}
	return copyAccount(acct), nil
}

// accountCopy is a deep copy of a StateAccount in one allocation
// (StateAccount.Copy makes three: the account, its balance and code hash).
type accountCopy struct {
	acct     types.StateAccount
	balance  uint256.Int
	codeHash [32]byte
}

func copyAccount(a *types.StateAccount) *types.StateAccount {
	c := &accountCopy{acct: types.StateAccount{Nonce: a.Nonce, Root: a.Root}}
	if a.Balance != nil {
		c.balance = *a.Balance
		c.acct.Balance = &c.balance
	}
	if a.CodeHash != nil {
		if len(a.CodeHash) == len(c.codeHash) {
			c.acct.CodeHash = c.codeHash[:copy(c.codeHash[:], a.CodeHash)]
		} else {
			c.acct.CodeHash = append([]byte{}, a.CodeHash...)
		}
	}
	return &c.acct
}

// Storage implements state.Reader.
func (c *cachedReader) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	k := slotKey{addr, slot}
	c.mu.RLock()
	v, ok := c.slots[k]
	c.mu.RUnlock()
	if ok {
		return v, nil
	}
	v, err := c.Reader.Storage(addr, slot)
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if len(c.slots) < maxCachedReads {
		c.slots[k] = v
	}
	c.mu.Unlock()
	return v, nil
}

type readerSlot struct {
	key    any
	reader *cachedReader
}

// Readers keeps the cached reader of the most recent state of each kind
// (one for sealed roots, one for pending snapshots), replacing it when the
// head or the snapshot moves on.
type Readers struct {
	sealed, pending atomic.Pointer[readerSlot]
}

// Sealed returns a cached reader of the state at root, opening it with open
// when the root is not the one cached.
func (r *Readers) Sealed(root common.Hash, open func() (state.Reader, error)) (state.Reader, error) {
	return r.get(&r.sealed, root, open)
}

// Pending returns a cached reader over a pending snapshot's state; key
// identifies the snapshot (it must be comparable, e.g. the *Snapshot).
func (r *Readers) Pending(key any, open func() (state.Reader, error)) (state.Reader, error) {
	return r.get(&r.pending, key, open)
}

func (r *Readers) get(p *atomic.Pointer[readerSlot], key any, open func() (state.Reader, error)) (state.Reader, error) {
	if s := p.Load(); s != nil && s.key == key {
		return s.reader, nil
	}
	base, err := open()
	if err != nil {
		return nil, err
	}
	s := &readerSlot{key: key, reader: newCachedReader(base)}
	p.Store(s)
	return s.reader, nil
}
