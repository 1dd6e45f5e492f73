package remote_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/remote"
)

// mapStore is a Store in memory (fork mode's is on disk).
type mapStore struct {
	mu    sync.Mutex
	accts map[common.Address]*types.StateAccount
	slots map[[2]common.Hash]common.Hash
	codes map[common.Hash][]byte
	puts  int
}

func newMapStore() *mapStore {
	return &mapStore{accts: map[common.Address]*types.StateAccount{}, slots: map[[2]common.Hash]common.Hash{}, codes: map[common.Hash][]byte{}}
}

func (m *mapStore) Account(a common.Address) (*types.StateAccount, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.accts[a]
	return v, ok
}

func (m *mapStore) Storage(a common.Address, k common.Hash) (common.Hash, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.slots[[2]common.Hash{common.BytesToHash(a[:]), k}]
	return v, ok
}

func (m *mapStore) Code(h common.Hash) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.codes[h]
}

func (m *mapStore) PutAccount(a common.Address, v *types.StateAccount) {
	m.mu.Lock()
	m.accts[a] = v
	m.puts++
	m.mu.Unlock()
}

func (m *mapStore) PutStorage(a common.Address, k, v common.Hash) {
	m.mu.Lock()
	m.slots[[2]common.Hash{common.BytesToHash(a[:]), k}] = v
	m.puts++
	m.mu.Unlock()
}

func (m *mapStore) PutCode(h common.Hash, c []byte) {
	m.mu.Lock()
	m.codes[h] = c
	m.puts++
	m.mu.Unlock()
}

// Every value read through a State with a store is put there; a second
// State over the same store (a restart) reads them all without asking the
// upstream, and equal to what was fetched.
func TestStoreKeepsWhatWasFetched(t *testing.T) {
	n := upstream(t)
	head := n.Chain.Head()
	store := newMapStore()
	read := func(st *remote.State) (out []any) {
		for _, a := range []common.Address{contract, missing, chain.DevAccounts()[1]} {
			acct, err := st.Account(a)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, acct)
			if acct != nil {
				out = append(out, st.Code(a, common.BytesToHash(acct.CodeHash)))
			}
		}
		for _, k := range []common.Hash{slotA, slotB, {9}} {
			v, err := st.Storage(contract, k)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v)
		}
		if err := st.PrefetchStorage(map[common.Address][]common.Hash{contract: {{7}}}); err != nil {
			t.Fatal(err)
		}
		if err := st.Prefetch([]common.Address{chain.DevAccounts()[2]}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	sh := remote.NewShared(remote.NewClient(n.URL(), 0), remote.ProofsRequired)
	first := read(sh.NewStateWith(head, store))
	if sh.Fetches.Load() == 0 || store.puts == 0 {
		t.Fatalf("nothing fetched or stored: %d fetches, %d puts", sh.Fetches.Load(), store.puts)
	}
	sh2 := remote.NewShared(remote.NewClient(n.URL(), 0), remote.ProofsRequired)
	second := read(sh2.NewStateWith(head, store))
	if r := sh2.Client.Requests.Load(); r != 0 {
		t.Fatalf("restart over the store made %d upstream requests, want 0", r)
	}
	if sh2.Stored.Load() == 0 {
		t.Fatal("no value counted as served by the store")
	}
	for i := range first {
		a, b := first[i], second[i]
		switch x := a.(type) {
		case *types.StateAccount:
			y := b.(*types.StateAccount)
			if x == nil || y == nil {
				if x != y {
					t.Fatalf("value %d: %+v then %+v", i, x, y)
				}
				continue
			}
			if !x.Balance.Eq(y.Balance) || x.Nonce != y.Nonce || x.Root != y.Root || !bytes.Equal(x.CodeHash, y.CodeHash) {
				t.Fatalf("value %d: %+v then %+v", i, x, y)
			}
		case []byte:
			if !bytes.Equal(x, b.([]byte)) {
				t.Fatalf("code %d differs", i)
			}
		default:
			if a != b {
				t.Fatalf("value %d: %v then %v", i, a, b)
			}
		}
	}
}

// With CodeWithAccount, a contract's account and code cost one exchange.
func TestCodeWithAccount(t *testing.T) {
	n := upstream(t)
	sh := remote.NewShared(remote.NewClient(n.URL(), 0), remote.ProofsRequired)
	sh.CodeWithAccount = true
	st := sh.NewState(n.Chain.Head())
	acct, err := st.Account(contract)
	if err != nil {
		t.Fatal(err)
	}
	code := st.Code(contract, common.BytesToHash(acct.CodeHash))
	if len(code) == 0 || st.CodeErr() != nil {
		t.Fatalf("code %x, err %v", code, st.CodeErr())
	}
	if r := sh.Client.Requests.Load(); r != 1 {
		t.Fatalf("%d requests for an account and its code, want 1", r)
	}
}
