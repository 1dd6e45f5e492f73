package sequencer

import (
	"context"
	"errors"
	"fmt"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/holiman/uint256"
)

// Cheats (anvil_setBalance, anvil_setCode, anvil_loadState, …) are the
// sequencer's second input: state writes of the open block, logged as
// entries of its flashblock records beside transactions and published as
// a flashblock at once. They replay in their logged place after a crash and
// are sealed with the block like any transaction's writes.
//
// A cheat entry is cheatTag followed by the RLP list of its writes. No
// transaction encoding starts with a byte in 0x80–0xbf (typed ones start
// below 0x80, legacy RLP lists at 0xc0), so replayEntries tells them apart
// by the first byte. Writes are absolute (a balance, not an increment):
// what a cheat computes from the state it saw is logged as its result.
const cheatTag = 0x80

// WriteKind says what a Write sets.
type WriteKind uint8

// Write kinds.
const (
	WriteBalance WriteKind = iota + 1
	WriteNonce
	WriteCode
	WriteStorage
)

// Write is one state write of a cheat.
type Write struct {
	Kind WriteKind
	Addr common.Address
	// Slot is the storage slot of a WriteStorage.
	Slot common.Hash
	// Value is the balance (big-endian, at most 32 bytes), the nonce
	// (big-endian, at most 8 bytes), the code, or the slot's 32 bytes.
	Value []byte
}

// SetBalance, SetNonce, SetCode and SetStorage make the writes.
func SetBalance(a common.Address, v *uint256.Int) Write {
	return Write{Kind: WriteBalance, Addr: a, Value: v.Bytes()}
}
func SetNonce(a common.Address, n uint64) Write {
	return Write{Kind: WriteNonce, Addr: a, Value: new(uint256.Int).SetUint64(n).Bytes()}
}
func SetCode(a common.Address, code []byte) Write {
	return Write{Kind: WriteCode, Addr: a, Value: common.CopyBytes(code)}
}
func SetStorage(a common.Address, slot, value common.Hash) Write {
	return Write{Kind: WriteStorage, Addr: a, Slot: slot, Value: common.CopyBytes(value[:])}
}

// check refuses a malformed write before anything is applied.
func (w *Write) check() error {
	switch w.Kind {
	case WriteBalance:
		if len(w.Value) > 32 {
			return errors.New("balance above 2^256-1")
		}
	case WriteNonce:
		if len(w.Value) > 8 {
			return errors.New("nonce above 2^64-1")
		}
	case WriteCode:
	case WriteStorage:
		if len(w.Value) != 32 {
			return fmt.Errorf("storage value of %d bytes, want 32", len(w.Value))
		}
	default:
		return fmt.Errorf("unknown write kind %d", w.Kind)
	}
	return nil
}

// StateView reads the open block's state (a *state.StateDB).
type StateView interface {
	GetBalance(common.Address) *uint256.Int
	GetNonce(common.Address) uint64
	GetCode(common.Address) []byte
	GetState(common.Address, common.Hash) common.Hash
}

// RefusedError is a cheat refused before it changed anything (bad input
// for the state it met); the sequencer goes on.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Cheat changes the open block's state: on the sequencer goroutine, plan
// reads the open block's state and returns the writes to make (or a
// refusal, which changes nothing; the view is a Caller); they are applied, logged and published
// as a flashblock before Cheat returns, so that a read at "pending" right
// after sees them and a crash after it keeps them.
func (s *Sequencer) Cheat(ctx context.Context, plan func(StateView) ([]Write, error)) error {
	var refused error
	err := s.do(ctx, func() error {
		writes, err := plan(&cheatView{StateDB: s.blk.StateDB, s: s, b: s.blk})
		if err == nil {
			for i := range writes {
				if err = writes[i].check(); err != nil {
					break
				}
			}
		}
		if err != nil {
			refused = &RefusedError{err}
			return nil
		}
		if len(writes) == 0 {
			return nil
		}
		return s.cheat(writes)
	})
	if err != nil {
		return err
	}
	return refused
}

// cheat applies checked writes to the open block and publishes them.
func (s *Sequencer) cheat(writes []Write) error {
	entry, err := encodeCheat(writes)
	if err != nil {
		return err
	}
	b := s.blk
	applyWrites(b, writes)
	b.entries = append(b.entries, entry)
	b.cheats = append(b.cheats, entry)
	return s.afterCheat()
}

func encodeCheat(writes []Write) ([]byte, error) {
	enc, err := rlp.EncodeToBytes(writes)
	if err != nil {
		return nil, fmt.Errorf("encode cheat: %w", err)
	}
	return append([]byte{cheatTag}, enc...), nil
}

// isCheat tells a cheat entry from a transaction.
func isCheat(entry []byte) bool { return len(entry) > 0 && entry[0] >= 0x80 && entry[0] < 0xc0 }

// applyCheatEntry applies a logged cheat entry (WAL replay, a block
// re-opened with its cheats).
func applyCheatEntry(b *openBlock, entry []byte) error {
	if len(entry) == 0 || entry[0] != cheatTag {
		return fmt.Errorf("unknown entry kind %#x", entry[0])
	}
	var writes []Write
	if err := rlp.DecodeBytes(entry[1:], &writes); err != nil {
		return fmt.Errorf("decode cheat: %w", err)
	}
	for i := range writes {
		if err := writes[i].check(); err != nil {
			return err
		}
	}
	applyWrites(b, writes)
	b.cheats = append(b.cheats, entry)
	return nil
}

// applyWrites writes to the open block's StateDB and marks what changed for
// the next flashblock's diff (these writes run no execution hooks).
func applyWrites(b *openBlock, writes []Write) {
	db, t := b.StateDB, b.Touched
	for _, w := range writes {
		switch w.Kind {
		case WriteBalance:
			db.SetBalance(w.Addr, new(uint256.Int).SetBytes(w.Value), tracing.BalanceChangeUnspecified)
			t.Account(w.Addr)
		case WriteNonce:
			db.SetNonce(w.Addr, new(uint256.Int).SetBytes(w.Value).Uint64(), tracing.NonceChangeUnspecified)
			t.Account(w.Addr)
		case WriteCode:
			db.SetCode(w.Addr, w.Value, tracing.CodeChangeUnspecified)
			t.Code(w.Addr, crypto.Keccak256Hash(w.Value), w.Value)
		case WriteStorage:
			db.SetState(w.Addr, w.Slot, common.BytesToHash(w.Value))
			t.Slot(w.Addr, w.Slot)
		}
	}
	// Settle the writes without EIP-161's removal of empty accounts: a
	// slot set on an account without balance, nonce or code stays, as
	// anvil keeps it (the next Finalise(true), after a transaction, would
	// otherwise delete the account with its storage). Every transaction
	// before was finalised already by its own execution.
	db.Finalise(false)
}

// afterCheat publishes the cheat just applied as a flashblock (logged
// first).
func (s *Sequencer) afterCheat() error {
	return s.publish(s.blk, len(s.blk.Txs), true)
}
