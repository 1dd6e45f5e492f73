package remote_test

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/remote"
)

// TestRecorderFetchMisses: a Recorder answers what a State holds and
// records the rest without asking the upstream; FetchMisses fetches every
// recorded account, slot and code in one request, after which a recorder
// misses nothing and answers the upstream's values; Exact tells whether
// the provisional answers (absent, zero, no code) were right.
func TestRecorderFetchMisses(t *testing.T) {
	n := upstream(t)
	head := n.Chain.Head()
	local, err := n.Chain.StateReader(head.Root)
	if err != nil {
		t.Fatal(err)
	}
	codeHash := func() common.Hash {
		a, _ := local.Account(contract)
		return common.BytesToHash(a.CodeHash)
	}()
	zero := common.HexToHash("0x77")
	for _, tc := range []struct {
		name  string
		mode  remote.Proofs
		read  func(r *remote.Recorder)
		exact bool
	}{
		{"absent account and zero slot", remote.ProofsRequired, func(r *remote.Recorder) {
			r.Account(missing)
			r.Storage(contract, zero)
		}, true},
		{"filled slot", remote.ProofsRequired, func(r *remote.Recorder) { r.Storage(contract, slotA) }, false},
		{"existing account", remote.ProofsOff, func(r *remote.Recorder) { r.Account(contract) }, false},
		{"code", remote.ProofsRequired, func(r *remote.Recorder) { r.Code(contract, codeHash) }, false},
		{"everything, plain reads", remote.ProofsOff, func(r *remote.Recorder) {
			r.Account(contract)
			r.Storage(contract, slotA)
			r.Storage(contract, slotB)
			r.Code(contract, codeHash)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := remote.NewShared(remote.NewClient(n.URL(), 0), tc.mode)
			st := sh.NewState(head)
			rec := st.Recorder(100)
			tc.read(rec)
			if sh.Client.Requests.Load() != 0 || rec.Misses() == 0 {
				t.Fatalf("recording: %d requests, %d misses", sh.Client.Requests.Load(), rec.Misses())
			}
			if missed, err := st.FetchMisses([]*remote.Recorder{rec}); !missed || err != nil {
				t.Fatalf("fetch: %v %v", missed, err)
			}
			if got := sh.Client.Requests.Load(); got != 1 {
				t.Fatalf("%d requests for the misses, want 1", got)
			}
			if got := rec.Exact(); got != tc.exact {
				t.Fatalf("exact %v, want %v", got, tc.exact)
			}
			again := st.Recorder(100)
			tc.read(again)
			if again.Misses() != 0 || sh.Client.Requests.Load() != 1 {
				t.Fatalf("after the fetch: %d misses, %d requests", again.Misses(), sh.Client.Requests.Load())
			}
			for _, k := range []common.Hash{slotA, slotB, zero} {
				if v, _ := again.Storage(contract, k); v != (common.Hash{}) {
					if w, _ := local.Storage(contract, k); v != w {
						t.Fatalf("slot %s: %s, want %s", k, v, w)
					}
				}
			}
			if c := again.Code(contract, codeHash); c != nil && !bytes.Equal(c, local.Code(contract, codeHash)) {
				t.Fatalf("code %x", c)
			}
		})
	}
}

// TestPrefetchStorageLarge: hundreds of slots go out as a few concurrent
// batches (one round trip), at most 64 slots per proof, with the values a
// one-by-one read gets.
func TestPrefetchStorageLarge(t *testing.T) {
	n := upstream(t)
	head := n.Chain.Head()
	local, err := n.Chain.StateReader(head.Root)
	if err != nil {
		t.Fatal(err)
	}
	slots := []common.Hash{slotA, slotB}
	for i := range 300 {
		slots = append(slots, common.BigToHash(big.NewInt(int64(1000+i))))
	}
	for _, mode := range []remote.Proofs{remote.ProofsRequired, remote.ProofsOff} {
		sh := remote.NewShared(remote.NewClient(n.URL(), 0), mode)
		st := sh.NewState(head)
		if err := st.PrefetchStorage(map[common.Address][]common.Hash{contract: slots, missing: nil}); err != nil {
			t.Fatal(err)
		}
		if r := sh.Client.Requests.Load(); r < 2 || r > 4 {
			t.Fatalf("mode %d: %d requests, want 2-4 concurrent batches", mode, r)
		}
		if mode == remote.ProofsRequired && sh.Client.Calls.Load() < 300/64+1 {
			t.Fatalf("%d eth_getProof calls for 302 slots: more than 64 slots per proof", sh.Client.Calls.Load())
		}
		rec := st.Recorder(1000)
		for _, k := range slots {
			got, _ := rec.Storage(contract, k)
			if want, _ := local.Storage(contract, k); got != want {
				t.Fatalf("mode %d: slot %s = %s, want %s", mode, k, got, want)
			}
		}
		if a, _ := rec.Account(missing); a != nil || rec.Misses() != 0 {
			t.Fatalf("mode %d: %d misses after the prefetch", mode, rec.Misses())
		}
	}
}

// TestRecorderHints: a hinted account missed is answered with its hint,
// never by the State itself, and fetched; Exact holds when the hint had the
// real nonce, balance and code, whatever its storage root.
func TestRecorderHints(t *testing.T) {
	n := upstream(t)
	head := n.Chain.Head()
	local, err := n.Chain.StateReader(head.Root)
	if err != nil {
		t.Fatal(err)
	}
	real, _ := local.Account(contract)
	for _, tc := range []struct {
		name  string
		hint  func() *types.StateAccount
		exact bool
	}{
		{"right but for the storage root", func() *types.StateAccount {
			h := real.Copy()
			h.Root = types.EmptyRootHash
			return h
		}, true},
		{"wrong balance", func() *types.StateAccount {
			h := real.Copy()
			h.Balance = uint256.NewInt(1)
			return h
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := remote.NewShared(remote.NewClient(n.URL(), 0), remote.ProofsRequired)
			st := sh.NewState(head)
			hint := tc.hint()
			st.Hint(map[common.Address]*types.StateAccount{contract: hint})
			rec := st.Recorder(10)
			if a, _ := rec.Account(contract); a == nil || !a.Balance.Eq(hint.Balance) || rec.Misses() != 1 {
				t.Fatalf("recorder answered %+v with %d misses, want the hint and a miss", a, rec.Misses())
			}
			if _, err := st.FetchMisses([]*remote.Recorder{rec}); err != nil {
				t.Fatal(err)
			}
			if got := rec.Exact(); got != tc.exact {
				t.Fatalf("exact %v, want %v", got, tc.exact)
			}
			if a, err := st.Account(contract); err != nil || !a.Balance.Eq(real.Balance) || a.Root != real.Root {
				t.Fatalf("the State answered %+v (%v), want the upstream's %+v", a, err, real)
			}
		})
	}
}
