package followload

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm/runtime"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/triedb"
	"github.com/holiman/uint256"
)

// TestDeFiTransaction runs two transactions' calls to the router in an EVM
// and checks what each contract's storage became: the hot slots the seed
// picks, written +1 for the first hotWrites; the first fresh slot 1, the
// second still empty; nothing else. A broken contract fails here, not as a
// slow benchmark.
func TestDeFiTransaction(t *testing.T) {
	db := rawdb.NewMemoryDatabase()
	statedb, err := state.New(types.EmptyRootHash, state.NewDatabase(triedb.NewDatabase(db, nil), state.NewCodeDB(db)))
	if err != nil {
		t.Fatal(err)
	}
	alloc := types.GenesisAlloc{}
	AddContracts(alloc)
	for a, acct := range alloc {
		statedb.SetCode(a, acct.Code, tracing.CodeChangeUnspecified)
		statedb.SetNonce(a, acct.Nonce, tracing.NonceChangeUnspecified)
		for k, v := range acct.Storage {
			statedb.SetState(a, k, v)
		}
	}
	cfg := &runtime.Config{ChainConfig: params.MergedTestChainConfig, GasLimit: 1_000_000, State: statedb, BlockNumber: big.NewInt(1), Time: 1}
	var gas []uint64
	for k := range 2 {
		seed := Seed(k)
		_, left, err := runtime.Call(Router, seed.Bytes(), cfg)
		if err != nil {
			t.Fatalf("transaction %d: %v", k, err)
		}
		gas = append(gas, cfg.GasLimit-left)
	}
	touched := map[common.Hash]int{} // hot slot → writes expected
	for k := range 2 {
		s := new(uint256.Int).SetBytes(Seed(k).Bytes())
		for j := range hotWrites {
			slot := new(uint256.Int).Add(s, uint256.NewInt(uint64(j)))
			touched[common.BigToHash(new(big.Int).SetUint64(slot.Uint64()%hotSlots))]++
		}
	}
	for _, a := range append([]common.Address{Router}, Pools...) {
		for i := range hotSlots {
			key := common.BigToHash(big.NewInt(int64(i)))
			want := new(big.Int).Add(hotValue(i).Big(), big.NewInt(int64(touched[key])))
			if got := statedb.GetState(a, key).Big(); got.Cmp(want) != 0 {
				t.Errorf("%s hot slot %d = %v, want %v", a, i, got, want)
			}
		}
		for k := range 2 {
			if got := statedb.GetState(a, FreshKey(k, 0)); got != common.BigToHash(common.Big1) {
				t.Errorf("%s transaction %d's first fresh slot = %v, want 1", a, k, got)
			}
			if got := statedb.GetState(a, FreshKey(k, 1)); got != (common.Hash{}) {
				t.Errorf("%s transaction %d's second fresh slot = %v, want empty", a, k, got)
			}
		}
	}
	// The execution gas (without the transaction's intrinsic 21,000 and
	// calldata): four contracts of 6 cold reads, 3 changed slots, 1 new
	// slot written and 1 read, the router's three cold calls.
	for k, g := range gas {
		if g < 150_000 || g > 220_000 {
			t.Errorf("transaction %d used %d gas, want 150,000-220,000", k, g)
		}
	}
	t.Logf("execution gas per transaction: %v", gas)
}
