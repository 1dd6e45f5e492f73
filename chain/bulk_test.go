package chain

import (
	"bytes"
	"math/big"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"
)

// A bulk genesis has the state root, block and readable state that the same
// alloc committed the usual way gives, and opens without a --genesis.
func TestCreateBulkMatchesGenesis(t *testing.T) {
	g := DevGenesis()
	full := DevGenesis()
	var extra []BulkAccount
	code := []byte{0x60, 0x00, 0x35, 0x54}
	for i := range 50 {
		addr := common.BigToAddress(big.NewInt(int64(0xb16000 + i)))
		acc := types.Account{Balance: big.NewInt(int64(1e6 + i)), Nonce: uint64(i % 3)}
		b := BulkAccount{Hash: crypto.Keccak256Hash(addr[:]), Nonce: acc.Nonce, Balance: uint256.MustFromBig(acc.Balance)}
		if i%10 == 0 { // a contract with storage
			acc.Code, b.Code = code, code
			acc.Storage = map[common.Hash]common.Hash{}
			type kv struct{ h, v common.Hash }
			var slots []kv
			for j := range 20 {
				k, v := common.BigToHash(big.NewInt(int64(j))), common.BigToHash(big.NewInt(int64(i*100+j+1)))
				acc.Storage[k] = v
				slots = append(slots, kv{crypto.Keccak256Hash(k[:]), v})
			}
			slices.SortFunc(slots, func(a, b kv) int { return bytes.Compare(a.h[:], b.h[:]) })
			b.Storage = func(yield func(common.Hash, common.Hash) bool) {
				for _, s := range slots {
					if !yield(s.h, s.v) {
						return
					}
				}
			}
		}
		full.Alloc[addr] = acc
		extra = append(extra, b)
	}
	slices.SortFunc(extra, func(a, b BulkAccount) int { return bytes.Compare(a.Hash[:], b.Hash[:]) })
	dir := t.TempDir()
	res, err := CreateBulk(dir, g, slices.Values(extra))
	if err != nil {
		t.Fatal(err)
	}
	want := full.ToBlock()
	if res.Block.Hash() != want.Hash() || res.Block.Root() != want.Root() {
		t.Fatalf("bulk genesis %s root %s, want %s root %s", res.Block.Hash(), res.Block.Root(), want.Hash(), want.Root())
	}
	if res.Accounts != uint64(len(full.Alloc)) || res.Slots != 5*20 {
		t.Errorf("wrote %d accounts, %d slots; want %d, 100", res.Accounts, res.Slots, len(full.Alloc))
	}
	if _, err := CreateBulk(dir, g, slices.Values(extra)); err == nil {
		t.Error("a second bulk genesis over the same datadir was accepted")
	}

	c, err := Open(Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Head().Hash() != want.Hash() {
		t.Fatalf("head %s, want %s", c.Head().Hash(), want.Hash())
	}
	if snaps := c.BlockChain().Snapshots(); snaps == nil || snaps.Snapshot(want.Root()) == nil {
		t.Fatal("the flat state snapshot was not loaded")
	}
	if rawdb.ReadSnapshotRoot(c.db) != want.Root() {
		t.Fatal("snapshot root changed: it was regenerated")
	}
	r, err := c.StateReader(want.Root())
	if err != nil {
		t.Fatal(err)
	}
	for addr, acc := range full.Alloc {
		got, err := r.Account(addr)
		if err != nil || got == nil || got.Balance.ToBig().Cmp(acc.Balance) != 0 || got.Nonce != acc.Nonce {
			t.Fatalf("%s: %+v %v, want balance %v nonce %d", addr, got, err, acc.Balance, acc.Nonce)
		}
		for k, v := range acc.Storage {
			if got, err := r.Storage(addr, k); err != nil || got != v {
				t.Fatalf("%s slot %s: %s %v, want %s", addr, k, got, err, v)
			}
		}
	}
}

// go test -run '^$' -bench CreateBulk -benchtime 1x ./chain/
func BenchmarkCreateBulk(b *testing.B) {
	const contracts, perContract = 20, 10_000
	slots := make([]common.Hash, perContract)
	for j := range slots {
		k := common.BigToHash(big.NewInt(int64(j)))
		slots[j] = crypto.Keccak256Hash(k[:])
	}
	slices.SortFunc(slots, func(a, b common.Hash) int { return bytes.Compare(a[:], b[:]) })
	var accs []BulkAccount
	for i := range contracts {
		addr := common.BigToAddress(big.NewInt(int64(0xb16000 + i)))
		accs = append(accs, BulkAccount{Hash: crypto.Keccak256Hash(addr[:]), Balance: uint256.NewInt(1), Code: []byte{1},
			Storage: func(yield func(common.Hash, common.Hash) bool) {
				for j, h := range slots {
					if !yield(h, common.BigToHash(big.NewInt(int64(i*perContract+j+1)))) {
						return
					}
				}
			}})
	}
	slices.SortFunc(accs, func(a, b BulkAccount) int { return bytes.Compare(a.Hash[:], b.Hash[:]) })
	for b.Loop() {
		if _, err := CreateBulk(b.TempDir(), DevGenesis(), slices.Values(accs)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*contracts*perContract), "ns/slot")
}
