package pending

import (
	"math/big"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
)

// Tracker records, through execution hooks, which accounts, slots and codes
// execution changed; Collect then reads their final values into a Diff. Use
// it with state.NewHookedState(statedb, tracker.Hooks()) as the EVM's state.
// It is not safe for concurrent use (one per executing goroutine).
type Tracker struct {
	accounts map[common.Address]struct{}
	slots    map[common.Address]map[common.Hash]struct{}
	codes    map[common.Hash][]byte
	cleared  map[common.Address]struct{}
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	t := new(Tracker)
	t.reset()
	return t
}

func (t *Tracker) reset() {
	t.accounts = make(map[common.Address]struct{})
	t.slots = make(map[common.Address]map[common.Hash]struct{})
	t.codes = make(map[common.Hash][]byte)
	t.cleared = make(map[common.Address]struct{})
}

// Hooks are the state hooks that feed the tracker.
func (t *Tracker) Hooks() *tracing.Hooks {
	return &tracing.Hooks{
		OnBalanceChange: func(a common.Address, _, _ *big.Int, reason tracing.BalanceChangeReason) {
			t.accounts[a] = struct{}{}
			if reason == tracing.BalanceDecreaseSelfdestruct || reason == tracing.BalanceDecreaseSelfdestructBurn {
				t.cleared[a] = struct{}{}
			}
		},
		OnNonceChangeV2: func(a common.Address, _, _ uint64, _ tracing.NonceChangeReason) {
			t.accounts[a] = struct{}{}
		},
		OnCodeChangeV2: func(a common.Address, _ common.Hash, _ []byte, h common.Hash, code []byte, _ tracing.CodeChangeReason) {
			t.accounts[a] = struct{}{}
			if len(code) > 0 {
				t.codes[h] = code
			}
		},
		OnStorageChange: func(a common.Address, k, _, _ common.Hash) {
			t.accounts[a] = struct{}{}
			m := t.slots[a]
			if m == nil {
				m = make(map[common.Hash]struct{})
				t.slots[a] = m
			}
			m[k] = struct{}{}
		},
	}
}

// Collect builds the diff of everything touched since the last Collect,
// reading final values from db (call after IntermediateRoot so that storage
// roots are current), and starts over.
func (t *Tracker) Collect(db *state.StateDB) *Diff {
	d := NewDiff()
	for a := range t.accounts {
		if !db.Exist(a) {
			d.Accounts[a] = nil
			continue
		}
		d.Accounts[a] = &types.StateAccount{
			Nonce:    db.GetNonce(a),
			Balance:  db.GetBalance(a).Clone(),
			Root:     db.GetStorageRoot(a),
			CodeHash: db.GetCodeHash(a).Bytes(),
		}
	}
	for a := range t.cleared {
		if d.Accounts[a] != nil { // destroyed, then re-created: old slots are gone
			d.Cleared[a] = struct{}{}
		}
	}
	for a, slots := range t.slots {
		if d.Accounts[a] == nil {
			continue
		}
		m := make(map[common.Hash]common.Hash, len(slots))
		for k := range slots {
			m[k] = db.GetState(a, k)
		}
		d.Storage[a] = m
	}
	for h, c := range t.codes {
		d.Codes[h] = c
	}
	t.reset()
	return d
}

// Account marks a changed outside execution (a dev method's write to the
// open block's StateDB, which runs no hooks): Collect reads its final
// account fields.
func (t *Tracker) Account(a common.Address) { t.accounts[a] = struct{}{} }

// Slot marks a's storage slot k changed outside execution.
func (t *Tracker) Slot(a common.Address, k common.Hash) {
	t.accounts[a] = struct{}{}
	m := t.slots[a]
	if m == nil {
		m = make(map[common.Hash]struct{})
		t.slots[a] = m
	}
	m[k] = struct{}{}
}

// Code marks a's code set to code (with hash h) outside execution.
func (t *Tracker) Code(a common.Address, h common.Hash, code []byte) {
	t.accounts[a] = struct{}{}
	if len(code) > 0 {
		t.codes[h] = code
	}
}
