package flashblock

import (
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
)

// BenchmarkEncode encodes a flashblock of 200 new transfers with receipts.
func BenchmarkEncode(b *testing.B) {
	t := &testing.T{}
	snap, _ := fixture(t, 1)
	txs := make(types.Transactions, 200)
	rcpts := make(types.Receipts, 200)
	for i := range txs {
		txs[i], rcpts[i] = snap.Txs[0], snap.Receipts[0]
	}
	snap.Txs, snap.Receipts, snap.NewTxs = txs, rcpts, len(txs)
	msg, err := EncodeSnapshot(snap)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeSnapshot(snap); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompress is brotli over the same message.
func BenchmarkCompress(b *testing.B) {
	t := &testing.T{}
	snap, _ := fixture(t, 1)
	msg, _ := EncodeSnapshot(snap)
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		Compress(msg)
	}
}
