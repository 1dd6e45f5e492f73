package remote

import (
	"bytes"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
)

// Recorder reads a State without asking the upstream for accounts or
// storage: what the State holds (in memory or in its Store) is answered as
// is; a miss is recorded and answered provisionally: the account as its
// hint says (Hint) or absent, the slot zero, code none. A speculative
// execution over it learns which keys its transactions read, so they can be
// fetched together (FetchMisses) before the execution that counts. Its
// answers may be wrong and must never reach anything published. Safe for
// concurrent use.
type Recorder struct {
	s   *State
	max int // misses kept; past it more are answered but not recorded

	mu    sync.Mutex
	accts map[common.Address]*types.StateAccount // missed, with the provisional answer
	slots map[slotKey]struct{}
	codes map[common.Hash]common.Address
}

// Recorder returns a recorder of s keeping at most max misses.
func (s *State) Recorder(max int) *Recorder {
	return &Recorder{s: s, max: max, accts: make(map[common.Address]*types.StateAccount), slots: make(map[slotKey]struct{}), codes: make(map[common.Hash]common.Address)}
}

// Account implements state.Reader. A miss is answered with the account's
// hint, if the State has one (Hint), else as absent.
func (r *Recorder) Account(addr common.Address) (*types.StateAccount, error) {
	if v, ok := r.s.peekAccount(addr); ok {
		return copyAccount(v), nil
	}
	r.s.mu.Lock()
	hint := r.s.hints[addr]
	r.s.mu.Unlock()
	r.mu.Lock()
	if len(r.accts)+len(r.slots)+len(r.codes) < r.max {
		r.accts[addr] = hint
	}
	r.mu.Unlock()
	return copyAccount(hint), nil
}

// Hint gives accounts as they probably are in this state (the follower:
// contracts whose storage the block before changed, known but for their
// storage root), for Recorders to answer with until they are fetched.
// They are never answered as values.
func (s *State) Hint(accts map[common.Address]*types.StateAccount) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hints == nil {
		s.hints = make(map[common.Address]*types.StateAccount, len(accts))
	}
	for a, v := range accts {
		if len(s.hints) >= maxEntries {
			return
		}
		s.hints[a] = copyAccount(v)
	}
}

// Storage implements state.Reader.
func (r *Recorder) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	if v, ok := r.s.peekSlot(addr, slot); ok {
		return v, nil
	}
	r.mu.Lock()
	if len(r.accts)+len(r.slots)+len(r.codes) < r.max {
		r.slots[slotKey{addr, slot}] = struct{}{}
	}
	r.mu.Unlock()
	return common.Hash{}, nil
}

// Code implements state.ContractCodeReader.
func (r *Recorder) Code(addr common.Address, codeHash common.Hash) []byte {
	c, _ := r.code(addr, codeHash)
	return c
}

// CodeSize implements state.ContractCodeReader.
func (r *Recorder) CodeSize(addr common.Address, codeHash common.Hash) int {
	c, _ := r.code(addr, codeHash)
	return len(c)
}

// Has implements state.ContractCodeReader.
func (r *Recorder) Has(addr common.Address, codeHash common.Hash) bool {
	_, ok := r.code(addr, codeHash)
	return ok
}

func (r *Recorder) code(addr common.Address, h common.Hash) ([]byte, bool) {
	if h == types.EmptyCodeHash || h == (common.Hash{}) {
		return nil, true
	}
	if c, ok := r.s.peekCode(h); ok {
		return c, true
	}
	r.mu.Lock()
	if len(r.accts)+len(r.slots)+len(r.codes) < r.max {
		r.codes[h] = addr
	}
	r.mu.Unlock()
	return nil, false
}

// Misses is the number of keys recorded.
func (r *Recorder) Misses() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.accts) + len(r.slots) + len(r.codes)
}

// want adds the recorded misses to want, in PrefetchStorage's form (an
// account missed alone is an address with no slots), and to codes.
func (r *Recorder) want(want map[common.Address][]common.Hash, codes map[common.Hash]common.Address) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for h, a := range r.codes {
		codes[h] = a
	}
	for a := range r.accts {
		if _, ok := want[a]; !ok {
			want[a] = nil
		}
	}
	for k := range r.slots {
		want[k.addr] = append(want[k.addr], k.slot)
	}
}

// Exact reports whether every provisional answer was right: each missed
// account is now known absent and each missed slot known zero. A
// speculation whose answers were all exact read exactly what the real
// execution on the same state reads, so it has nothing more to discover.
func (r *Recorder) Exact() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for a, p := range r.accts {
		if v, ok := r.s.peekAccount(a); !ok || !sameAccount(v, p) {
			return false
		}
	}
	for k := range r.slots {
		if v, ok := r.s.peekSlot(k.addr, k.slot); !ok || v != (common.Hash{}) {
			return false
		}
	}
	return len(r.codes) == 0
}

// FetchMisses fetches what the recorders missed in one round trip (a batch
// request, or a few concurrent ones when large): PrefetchStorage's, the
// codes joining the first batch. It reports whether anything was missed.
// Errors are not kept: a later read asks again.
func (s *State) FetchMisses(recs []*Recorder) (bool, error) {
	want := make(map[common.Address][]common.Hash)
	codes := make(map[common.Hash]common.Address)
	for _, r := range recs {
		r.want(want, codes)
	}
	if len(want) == 0 && len(codes) == 0 {
		return false, nil
	}
	return true, s.prefetchState(want, codes)
}

// peekCode is the code with hash h if it is cached (or in the store).
func (s *State) peekCode(h common.Hash) ([]byte, bool) {
	if v, ok := s.sh.codes.Load(h); ok {
		e := v.(*entry[[]byte])
		<-e.done
		return e.v, e.err == nil
	}
	if s.store != nil {
		if c := s.store.Code(h); c != nil {
			return c, true
		}
	}
	return nil, false
}

// sameAccount reports whether a and b are the same to an execution: both
// absent, or the same nonce, balance and code.
func sameAccount(a, b *types.StateAccount) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Nonce == b.Nonce && a.Balance.Eq(b.Balance) && bytes.Equal(a.CodeHash, b.CodeHash)
}

// peekAccount is the account if s knows it without asking the upstream
// (waiting for a fetch under way).
func (s *State) peekAccount(addr common.Address) (*types.StateAccount, bool) {
	s.mu.Lock()
	e, ok := s.accts[addr]
	s.mu.Unlock()
	if ok {
		<-e.done
		return e.v, e.err == nil
	}
	if s.store == nil {
		return nil, false
	}
	v, ok := s.store.Account(addr)
	return v, ok
}

// peekSlot is the slot's value if s knows it without asking the upstream
// (waiting for a fetch under way). With proofs, a known account without
// storage has every slot zero.
func (s *State) peekSlot(addr common.Address, slot common.Hash) (common.Hash, bool) {
	s.mu.Lock()
	e, ok := s.slots[slotKey{addr, slot}]
	s.mu.Unlock()
	if ok {
		<-e.done
		return e.v, e.err == nil
	}
	if s.store != nil {
		if v, ok := s.store.Storage(addr, slot); ok {
			return v, true
		}
	}
	if s.useProofs() {
		if acct, ok := s.cachedAccount(addr); ok && (acct == nil || acct.Root == types.EmptyRootHash) {
			return common.Hash{}, true
		}
	}
	return common.Hash{}, false
}

var _ state.Reader = (*Recorder)(nil)
