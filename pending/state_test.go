package pending

import (
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/holiman/uint256"
)

// baseState commits a small state and returns its database and root.
func baseState(t *testing.T) (state.Database, common.Hash) {
	t.Helper()
	db := state.NewDatabase(triedb.NewDatabase(rawdb.NewMemoryDatabase(), nil), nil)
	sdb, err := state.New(types.EmptyRootHash, db)
	if err != nil {
		t.Fatal(err)
	}
	a, b := common.HexToAddress("0xa"), common.HexToAddress("0xb")
	sdb.SetBalance(a, uint256.NewInt(100), tracing.BalanceChangeUnspecified)
	sdb.SetNonce(a, 1, tracing.NonceChangeUnspecified)
	sdb.SetCode(b, []byte{0x60, 0x00}, tracing.CodeChangeUnspecified)
	sdb.SetState(b, common.HexToHash("0x1"), common.HexToHash("0x11"))
	sdb.SetState(b, common.HexToHash("0x2"), common.HexToHash("0x22"))
	root, err := sdb.Commit(0, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return db, root
}

func acct(nonce uint64, bal uint64, code []byte) *types.StateAccount {
	return &types.StateAccount{Nonce: nonce, Balance: uint256.NewInt(bal), Root: types.EmptyRootHash, CodeHash: CodeHash(code).Bytes()}
}

func TestStateLayers(t *testing.T) {
	db, root := baseState(t)
	base, err := db.Reader(root)
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := common.HexToAddress("0xa"), common.HexToAddress("0xb"), common.HexToAddress("0xc")
	newCode := []byte{0x60, 0x01, 0x00}

	d1 := NewDiff()
	d1.Accounts[a] = acct(2, 90, nil)
	d1.Storage[b] = map[common.Hash]common.Hash{common.HexToHash("0x1"): common.HexToHash("0x99")}
	d2 := NewDiff()
	d2.Accounts[c] = acct(1, 5, newCode)
	d2.Codes[CodeHash(newCode)] = newCode
	d2.Storage[c] = map[common.Hash]common.Hash{common.HexToHash("0x7"): common.HexToHash("0x77")}
	d2.Accounts[a] = acct(3, 80, nil)

	s0 := NewState(base)
	s1 := s0.With(d1)
	s2 := s1.With(d2)
	if s2.Depth() != 2 || s0.With(NewDiff()) != s0 {
		t.Fatal("empty diffs must not add layers")
	}

	tests := []struct {
		name  string
		st    *State
		addr  common.Address
		nonce uint64
		bal   uint64
		slot  common.Hash
		value common.Hash
	}{
		{"base a", s0, a, 1, 100, common.Hash{}, common.Hash{}},
		{"fb1 a", s1, a, 2, 90, common.Hash{}, common.Hash{}},
		{"fb2 a", s2, a, 3, 80, common.Hash{}, common.Hash{}},
		{"fb1 b slot changed", s1, b, 0, 0, common.HexToHash("0x1"), common.HexToHash("0x99")},
		{"fb2 b other slot kept", s2, b, 0, 0, common.HexToHash("0x2"), common.HexToHash("0x22")},
		{"base b slot", s0, b, 0, 0, common.HexToHash("0x1"), common.HexToHash("0x11")},
		{"fb2 c new", s2, c, 1, 5, common.HexToHash("0x7"), common.HexToHash("0x77")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.st.Account(tt.addr)
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("account missing")
			}
			if got.Nonce != tt.nonce || got.Balance.Uint64() != tt.bal {
				t.Fatalf("account = nonce %d balance %d, want %d %d", got.Nonce, got.Balance.Uint64(), tt.nonce, tt.bal)
			}
			v, err := tt.st.Storage(tt.addr, tt.slot)
			if err != nil {
				t.Fatal(err)
			}
			if v != tt.value {
				t.Fatalf("slot %s = %s, want %s", tt.slot, v, tt.value)
			}
		})
	}
	if got, _ := s1.Account(c); got != nil {
		t.Fatal("c must not exist before fb2")
	}
	if code := s2.Code(c, CodeHash(newCode)); string(code) != string(newCode) {
		t.Fatalf("code = %x", code)
	}

	// ApplyTo on a StateDB at the base root must give the same state, and
	// Flatten must agree with the layered reads.
	sdb, err := state.New(root, db)
	if err != nil {
		t.Fatal(err)
	}
	s2.ApplyTo(sdb)
	flat := NewState(base).With(s2.Flatten())
	for _, addr := range []common.Address{a, b, c} {
		want, _ := s2.Account(addr)
		fl, _ := flat.Account(addr)
		if sdb.GetNonce(addr) != want.Nonce || sdb.GetBalance(addr).Cmp(want.Balance) != 0 {
			t.Errorf("ApplyTo %s: nonce %d balance %s, want %d %s", addr, sdb.GetNonce(addr), sdb.GetBalance(addr), want.Nonce, want.Balance)
		}
		if fl.Nonce != want.Nonce || fl.Balance.Cmp(want.Balance) != 0 {
			t.Errorf("Flatten %s differs", addr)
		}
		for _, slot := range []common.Hash{common.HexToHash("0x1"), common.HexToHash("0x2"), common.HexToHash("0x7")} {
			w, _ := s2.Storage(addr, slot)
			f, _ := flat.Storage(addr, slot)
			if got := sdb.GetState(addr, slot); got != w || f != w {
				t.Errorf("%s slot %s: ApplyTo %s, Flatten %s, want %s", addr, slot, got, f, w)
			}
		}
	}
	if string(sdb.GetCode(c)) != string(newCode) {
		t.Errorf("ApplyTo code = %x", sdb.GetCode(c))
	}
}

func TestSourcePublishSubscribe(t *testing.T) {
	var src Source
	if src.Current() != nil {
		t.Fatal("empty source must have no snapshot")
	}
	ch, cancel := src.Subscribe(1)
	defer cancel()
	s1 := &Snapshot{Index: 0}
	s2 := &Snapshot{Index: 1}
	src.Publish(s1)
	src.Publish(s2) // buffer full: dropped for the subscriber, never blocks
	if src.Current() != s2 {
		t.Fatal("Current must be the last published snapshot")
	}
	if got := <-ch; got != s1 {
		t.Fatalf("subscriber got index %d, want 0", got.Index)
	}
	select {
	case got := <-ch:
		t.Fatalf("unexpected second update %d (buffer was full)", got.Index)
	default:
	}
}
