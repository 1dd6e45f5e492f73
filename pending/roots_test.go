package pending

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/trie"
)

// TestRootsIncremental: the roots kept flashblock by flashblock equal
// types.DeriveSha over the whole block at every step, across the index
// encodings' boundaries (0, 1…0x7f, 0x80…).
func TestRootsIncremental(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []int // block size after each flashblock
	}{
		{"one at a time to 130", func() []int {
			var s []int
			for n := 1; n <= 130; n++ {
				s = append(s, n)
			}
			return s
		}()},
		{"flashblocks of 100", []int{1, 101, 201, 301, 401}},
		{"empty flashblocks between", []int{0, 5, 5, 127, 127, 128, 129, 129, 300}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				txs      types.Transactions
				receipts types.Receipts
				r        = NewRoots()
			)
			for _, n := range tc.steps {
				for i := len(txs); i < n; i++ {
					txs = append(txs, types.NewTx(&types.LegacyTx{Nonce: uint64(i), Gas: 21000, Value: big.NewInt(int64(i))}))
					rc := &types.Receipt{Type: types.LegacyTxType, Status: uint64(i % 2), CumulativeGasUsed: 21000 * uint64(i+1)}
					if i%3 == 0 {
						rc.Logs = []*types.Log{{Address: common.Address{byte(i)}, Topics: []common.Hash{{byte(i)}}, Data: []byte{byte(i)}}}
					}
					rc.Bloom = types.CreateBloom(rc)
					receipts = append(receipts, rc)
				}
				txHash, receiptHash := r.Update(txs, receipts)
				if want := types.DeriveSha(txs, trie.NewStackTrie(nil)); txHash != want {
					t.Fatalf("%d transactions: root %s, DeriveSha %s", n, txHash, want)
				}
				if want := types.DeriveSha(receipts, trie.NewStackTrie(nil)); receiptHash != want {
					t.Fatalf("%d receipts: root %s, DeriveSha %s", n, receiptHash, want)
				}
			}
		})
	}
}
