package sequencer

import (
	"container/heap"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/txpool"
)

// entry is a pooled 1559 transfer with the given nonce, tip and fee caps
// (wei) and arrival seq.
func entry(nonce, tip, feeCap, seq uint64) *txpool.Entry {
	tx := types.NewTx(&types.DynamicFeeTx{Nonce: nonce, Gas: 21000,
		GasTipCap: new(big.Int).SetUint64(tip), GasFeeCap: new(big.Int).SetUint64(feeCap)})
	return &txpool.Entry{Tx: tx, Seq: seq}
}

// drain applies every head in the heap's order, as fill does when every
// transaction fits, and returns the seqs in that order.
func drain(h *runHeap) []uint64 {
	var order []uint64
	for h.Len() > 0 {
		order = append(order, h.runs[0][0].Seq)
		h.advance()
	}
	return order
}

func TestRunHeapOrder(t *testing.T) {
	baseFee := big.NewInt(10)
	tests := []struct {
		name string
		runs [][]*txpool.Entry
		want []uint64
	}{
		{"tip first, then arrival", [][]*txpool.Entry{
			{entry(0, 1, 100, 1)}, {entry(0, 3, 100, 2)}, {entry(0, 1, 100, 0)}, {entry(0, 2, 100, 3)},
		}, []uint64{2, 3, 0, 1}},
		// The tip is capped by fee cap - base fee: 5 effective, below 6.
		{"effective tip", [][]*txpool.Entry{
			{entry(0, 50, 15, 0)}, {entry(0, 6, 100, 1)},
		}, []uint64{1, 0}},
		// A sender's next transaction is ordered by its own tip once its
		// predecessor is applied (the head's tip is recomputed).
		{"next head re-ranked", [][]*txpool.Entry{
			{entry(0, 5, 100, 0), entry(1, 1, 100, 3), entry(2, 9, 100, 5)},
			{entry(0, 4, 100, 1), entry(1, 4, 100, 2)},
		}, []uint64{0, 1, 2, 3, 5}},
		{"below base fee last", [][]*txpool.Entry{
			{entry(0, 1, 5, 0)}, {entry(0, 1, 11, 1)},
		}, []uint64{1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := drain(newRunHeap(tt.runs, baseFee))
			if len(got) != len(tt.want) {
				t.Fatalf("order %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("order %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestRunHeapPop: a run popped (its head waits) leaves the others ordered.
func TestRunHeapPop(t *testing.T) {
	h := newRunHeap([][]*txpool.Entry{{entry(0, 1, 100, 0)}, {entry(0, 3, 100, 1)}, {entry(0, 2, 100, 2)}}, big.NewInt(10))
	if got := heap.Pop(h).([]*txpool.Entry)[0].Seq; got != 1 {
		t.Fatalf("popped seq %d, want 1 (highest tip)", got)
	}
	heap.Push(h, []*txpool.Entry{entry(0, 9, 100, 7)})
	if got := drain(h); len(got) != 3 || got[0] != 7 || got[1] != 2 || got[2] != 0 {
		t.Fatalf("order %v, want [7 2 0]", got)
	}
}

// BenchmarkRunHeap: one flashblock's ordering at 3,000 transfers/s from 512
// senders (600 heads applied, 512 runs), without the execution.
func BenchmarkRunHeap(b *testing.B) {
	const senders, perSender = 512, 2
	runs := make([][]*txpool.Entry, senders)
	for i := range runs {
		for n := range perSender {
			runs[i] = append(runs[i], entry(uint64(n), uint64(1+i%7), 1000, uint64(n*senders+i)))
		}
	}
	baseFee := big.NewInt(10)
	b.ReportAllocs()
	for b.Loop() {
		h := newRunHeap(append([][]*txpool.Entry(nil), runs...), baseFee)
		for range 600 {
			h.advance()
		}
	}
}
