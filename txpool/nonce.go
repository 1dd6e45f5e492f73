package txpool

import (
	"sync"

	"github.com/ethereum/go-ethereum/common"
)

// A sender's pool nonce is the nonce its next transaction should use: past
// its transactions already executed on the pending state and its contiguous
// pooled ones (go-ethereum's pool nonce, what eth_getTransactionCount at
// "pending" answers there). Clients that send back to back read it before
// every send, so it must count a transaction from the moment Add accepts it,
// also while it waits for the next flashblock.
//
// nonceTable keeps, per sender, the highest such nonce the pool has handed
// out; a reader takes the larger of it and its pending state's nonce. The
// table has its own lock so that this hot read never waits for the pool's
// lock, which the sequencer holds while it walks every sender (Candidates).
//
// An entry is raised when a transaction becomes executable (Add), lowered
// when an executable transaction is dropped as invalid (Drop), and left alone
// when a transaction is executed and leaves the pool: the pending state's
// nonce catches up as the entry stays. Because the entry is not cleared when
// the sequencer executes a transaction, a reader holding a pending state read
// before that execution still answers past it: the order in which a reader
// reads the state and the table does not matter.
type nonceTable struct {
	mu sync.RWMutex
	m  map[common.Address]*nonceEntry
}

type nonceEntry struct {
	next uint64
	// idle: at the last sweep the sender had nothing pooled and its sealed
	// nonce had reached next (see sweep).
	idle bool
}

func newNonceTable() *nonceTable {
	return &nonceTable{m: make(map[common.Address]*nonceEntry)}
}

// get is the sender's entry (0 when none).
func (t *nonceTable) get(addr common.Address) uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if e := t.m[addr]; e != nil {
		return e.next
	}
	return 0
}

// raise moves the sender's entry up to next.
func (t *nonceTable) raise(addr common.Address, next uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[addr]
	if e == nil {
		t.m[addr] = &nonceEntry{next: next}
		return
	}
	e.idle = false
	if next > e.next {
		e.next = next
	}
}

// lower moves the sender's entry down to nonce (a transaction with that
// nonce left the pool without being executed: it is the next one again).
func (t *nonceTable) lower(addr common.Address, nonce uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.m[addr]; e != nil && nonce < e.next {
		e.next = nonce
		e.idle = false
	}
}

// sweep forgets entries that no longer say more than the sealed state:
// senders with nothing pooled whose sealed nonce has reached the entry. An
// entry goes at the second sweep that finds it so, one block after it became
// redundant, so that a reader still holding a pending state from before the
// seal keeps being answered past it.
func (t *nonceTable) sweep(sealedNonce func(common.Address) uint64, pooled func(common.Address) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for addr, e := range t.m {
		if pooled(addr) || sealedNonce(addr) < e.next {
			e.idle = false
			continue
		}
		if e.idle {
			delete(t.m, addr)
			continue
		}
		e.idle = true
	}
}

func (t *nonceTable) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m)
}

// PendingNonce is the nonce addr's next transaction should use, given its
// nonce in a pending state: past the sender's transactions executed on the
// pending state and its contiguous pooled ones. It does not take the pool's
// lock.
func (p *Pool) PendingNonce(addr common.Address, stateNonce uint64) uint64 {
	return max(stateNonce, p.nonces.get(addr))
}

// Sweep drops per-sender pool nonces the sealed state has caught up with
// (the sequencer calls it after each seal, with the sealed state's nonces).
func (p *Pool) Sweep(sealedNonce func(common.Address) uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nonces.sweep(sealedNonce, func(addr common.Address) bool { return p.accounts[addr] != nil })
}

// clear forgets every entry: the pending state's nonces alone count.
func (t *nonceTable) clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m = make(map[common.Address]*nonceEntry)
}
