package pending

import (
	"maps"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
)

// Diff is the state one flashblock wrote: the final value of every account,
// slot and code it touched. A Diff is immutable once it is part of a State.
type Diff struct {
	// Accounts holds the new account data; a nil value means the account no
	// longer exists (self-destructed or removed as empty).
	Accounts map[common.Address]*types.StateAccount
	// Storage holds new slot values per account.
	Storage map[common.Address]map[common.Hash]common.Hash
	// Cleared marks accounts whose storage was wiped before Storage applies
	// (destroyed, possibly re-created, within the flashblock).
	Cleared map[common.Address]struct{}
	// Codes holds new contract code by code hash.
	Codes map[common.Hash][]byte
}

// NewDiff returns an empty diff.
func NewDiff() *Diff {
	return &Diff{
		Accounts: make(map[common.Address]*types.StateAccount),
		Storage:  make(map[common.Address]map[common.Hash]common.Hash),
		Cleared:  make(map[common.Address]struct{}),
		Codes:    make(map[common.Hash][]byte),
	}
}

// Empty reports whether the diff changes nothing.
func (d *Diff) Empty() bool {
	return len(d.Accounts) == 0 && len(d.Storage) == 0 && len(d.Cleared) == 0 && len(d.Codes) == 0
}

// State is a sealed block's state with a stack of flashblock diffs on top.
// It is immutable and safe for concurrent use; With returns a new State that
// shares everything below it, so publishing a flashblock costs only its diff.
type State struct {
	base   state.Reader
	diff   *Diff
	parent *State
	depth  int
}

// NewState is the state of a sealed block, with nothing pending on top.
func NewState(base state.Reader) *State { return &State{base: base} }

// With stacks d on top of s. d must not change afterwards.
func (s *State) With(d *Diff) *State {
	if d == nil || d.Empty() {
		return s
	}
	return &State{base: s.base, diff: d, parent: s, depth: s.depth + 1}
}

// Rebase is s's diffs over another reader of the same sealed state (the
// follower's speculative reader, answering what it has not fetched
// provisionally): the layers are shared, not copied.
func (s *State) Rebase(base state.Reader) *State {
	if s.diff == nil {
		return &State{base: base}
	}
	return &State{base: base, diff: s.diff, parent: s.parent.Rebase(base), depth: s.depth}
}

// Depth is the number of diffs stacked on the base.
func (s *State) Depth() int { return s.depth }

// Base is the sealed state underneath.
func (s *State) Base() state.Reader { return s.base }

// Account implements state.Reader. The returned account is a copy.
func (s *State) Account(addr common.Address) (*types.StateAccount, error) {
	for l := s; l != nil && l.diff != nil; l = l.parent {
		if acct, ok := l.diff.Accounts[addr]; ok {
			if acct == nil {
				return nil, nil
			}
			return acct.Copy(), nil
		}
	}
	return s.base.Account(addr)
}

// Storage implements state.Reader.
func (s *State) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	for l := s; l != nil && l.diff != nil; l = l.parent {
		if slots, ok := l.diff.Storage[addr]; ok {
			if v, ok := slots[slot]; ok {
				return v, nil
			}
		}
		if _, ok := l.diff.Cleared[addr]; ok {
			return common.Hash{}, nil
		}
		if acct, ok := l.diff.Accounts[addr]; ok && acct == nil {
			return common.Hash{}, nil
		}
	}
	return s.base.Storage(addr, slot)
}

func (s *State) code(hash common.Hash) ([]byte, bool) {
	for l := s; l != nil && l.diff != nil; l = l.parent {
		if c, ok := l.diff.Codes[hash]; ok {
			return c, true
		}
	}
	return nil, false
}

// Code implements state.ContractCodeReader.
func (s *State) Code(addr common.Address, codeHash common.Hash) []byte {
	if c, ok := s.code(codeHash); ok {
		return c
	}
	return s.base.Code(addr, codeHash)
}

// CodeSize implements state.ContractCodeReader.
func (s *State) CodeSize(addr common.Address, codeHash common.Hash) int {
	if c, ok := s.code(codeHash); ok {
		return len(c)
	}
	return s.base.CodeSize(addr, codeHash)
}

// Has implements state.ContractCodeReader.
func (s *State) Has(addr common.Address, codeHash common.Hash) bool {
	if _, ok := s.code(codeHash); ok {
		return true
	}
	return s.base.Has(addr, codeHash)
}

// ApplyTo writes every diff, oldest first, into db, which must be opened at
// the base's root. Afterwards db holds the pending state in its own objects,
// so IntermediateRoot gives the real pending state root.
func (s *State) ApplyTo(db *state.StateDB) {
	var stack []*Diff
	for l := s; l != nil && l.diff != nil; l = l.parent {
		stack = append(stack, l.diff)
	}
	for i := len(stack) - 1; i >= 0; i-- {
		applyDiff(db, stack[i])
	}
}

func applyDiff(db *state.StateDB, d *Diff) {
	for addr := range d.Cleared {
		if db.Exist(addr) {
			db.SelfDestruct(addr)
		}
	}
	if len(d.Cleared) > 0 {
		db.Finalise(false) // make the wipe take effect before re-creation
	}
	for addr, acct := range d.Accounts {
		if acct == nil {
			if db.Exist(addr) {
				db.SelfDestruct(addr)
			}
			continue
		}
		if !db.Exist(addr) {
			db.CreateAccount(addr)
		}
		db.SetNonce(addr, acct.Nonce, tracing.NonceChangeUnspecified)
		db.SetBalance(addr, new(uint256.Int).Set(acct.Balance), tracing.BalanceChangeUnspecified)
		hash := common.BytesToHash(acct.CodeHash)
		if db.GetCodeHash(addr) != hash {
			code, ok := d.Codes[hash]
			if !ok && hash != types.EmptyCodeHash {
				code = db.GetCode(addr) // unchanged code under a re-created account
			}
			db.SetCode(addr, code, tracing.CodeChangeUnspecified)
		}
	}
	for addr, slots := range d.Storage {
		for k, v := range slots {
			db.SetState(addr, k, v)
		}
	}
	db.Finalise(true)
}

// Flatten returns the union of every diff (newest wins) — what the pending
// block changed relative to its parent. The result is a fresh Diff.
func (s *State) Flatten() *Diff {
	out := NewDiff()
	var stack []*Diff
	for l := s; l != nil && l.diff != nil; l = l.parent {
		stack = append(stack, l.diff)
	}
	for i := len(stack) - 1; i >= 0; i-- {
		d := stack[i]
		for a := range d.Cleared {
			out.Cleared[a] = struct{}{}
			delete(out.Storage, a)
		}
		for a, acct := range d.Accounts {
			out.Accounts[a] = acct
			if acct == nil {
				delete(out.Storage, a)
			}
		}
		for a, slots := range d.Storage {
			m := out.Storage[a]
			if m == nil {
				m = make(map[common.Hash]common.Hash, len(slots))
				out.Storage[a] = m
			}
			maps.Copy(m, slots)
		}
		maps.Copy(out.Codes, d.Codes)
	}
	return out
}

// CodeHash is the hash the diff uses for code.
func CodeHash(code []byte) common.Hash {
	if len(code) == 0 {
		return types.EmptyCodeHash
	}
	return crypto.Keccak256Hash(code)
}

var _ state.Reader = (*State)(nil)
