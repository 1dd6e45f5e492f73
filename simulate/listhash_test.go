package simulate

import (
	"bytes"
	"math/big"
	"math/rand"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"
)

// rawList is a types.DerivableList of given encodings.
type rawList [][]byte

func (l rawList) Len() int                           { return len(l) }
func (l rawList) EncodeIndex(i int, w *bytes.Buffer) { w.Write(l[i]) }

// TestListHasherMatchesStackTrie: the root of every list length from 0 to
// 300 (one, two and three-byte RLP index keys), with values of 1 byte (nodes
// embedded in their parent), around the 32-byte embedding limit, and up to
// 600 bytes (long RLP headers), is the StackTrie's; also for real
// transactions and receipts through types.DeriveSha, and when the hasher is
// reused.
func TestListHasherMatchesStackTrie(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	h := &listHasher{}
	h.kc = listHashers.Get().(*listHasher).kc
	sizes := []func() int{
		func() int { return 1 },
		func() int { return 1 + rng.Intn(3) },
		func() int { return 25 + rng.Intn(12) },
		func() int { return 1 + rng.Intn(600) },
	}
	for si, size := range sizes {
		for n := 0; n <= 300; n++ {
			list := make(rawList, n)
			for i := range list {
				list[i] = make([]byte, size())
				rng.Read(list[i])
				if len(list[i]) == 1 && rng.Intn(2) == 0 {
					list[i][0] &= 0x7f // single bytes below 0x80 are their own RLP
				}
			}
			want := types.DeriveSha(list, trie.NewStackTrie(nil))
			if got := types.DeriveSha(list, h); got != want {
				t.Fatalf("sizes %d, %d entries: root %x, want %x", si, n, got, want)
			}
		}
	}
	var (
		txs      types.Transactions
		receipts types.Receipts
	)
	to := common.HexToAddress("0xc1")
	for i := 0; i < 130; i++ {
		txs = append(txs, types.NewTx(&types.DynamicFeeTx{ChainID: big.NewInt(1), Nonce: uint64(i), To: &to, Value: big.NewInt(int64(i)), Gas: 21000,
			GasTipCap: new(big.Int), GasFeeCap: new(big.Int), Data: make([]byte, i%40)}))
		r := &types.Receipt{Type: types.DynamicFeeTxType, Status: 1, CumulativeGasUsed: uint64(21000 * (i + 1))}
		if i%3 == 0 {
			r.Logs = []*types.Log{{Address: to, Topics: []common.Hash{{1}}, Data: []byte{byte(i)}}}
		}
		r.Bloom = types.CreateBloom(r)
		receipts = append(receipts, r)
		for _, l := range []types.DerivableList{txs, receipts} {
			if got, want := types.DeriveSha(l, h), types.DeriveSha(l, trie.NewStackTrie(nil)); got != want {
				t.Fatalf("%d entries: root %x, want %x", i+1, got, want)
			}
		}
	}
}

// Keys out of DeriveSha's order are hashed by a StackTrie in sorted order.
func TestListHasherUnsortedKeys(t *testing.T) {
	h := listHashers.Get().(*listHasher)
	defer listHashers.Put(h)
	h.Reset()
	st := trie.NewStackTrie(nil)
	keys := [][]byte{{0x01}, {0x02}, {0x80}}
	for _, k := range keys {
		st.Update(k, append([]byte("value-of-some-length-beyond-32-bytes"), k...))
	}
	for i := len(keys) - 1; i >= 0; i-- {
		h.Update(keys[i], append([]byte("value-of-some-length-beyond-32-bytes"), keys[i]...))
	}
	if got, want := h.Hash(), st.Hash(); got != want {
		t.Fatalf("root %x, want %x", got, want)
	}
}
