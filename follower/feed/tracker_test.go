package feed

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/preconf/preconf/flashblock"
)

func hashOf(b byte) common.Hash { return common.Hash{b} }

func pid(b byte) flashblock.PayloadID { return flashblock.PayloadID{b} }

// step is one event: a flashblock (payload p, index i, block number n built
// on parent, with raw txs) or a canonical head.
type step struct {
	fb   *flashblock.Message
	head *Head
	want Outcome
	// after the event: the pending payload and its flashblock count (count 0:
	// nothing pending).
	pending flashblock.PayloadID
	count   int
}

func fb0(p byte, n uint64, parent common.Hash, txs ...string) *flashblock.Message {
	return &flashblock.Message{PayloadID: pid(p), Index: 0, Base: &flashblock.Base{BlockNumber: hexutil.Uint64(n), ParentHash: parent, BaseFeePerGas: (*hexutil.Big)(big.NewInt(1))}, Diff: flashblock.Diff{Transactions: raw(txs)}}
}

func fbi(p byte, i uint64, txs ...string) *flashblock.Message {
	return &flashblock.Message{PayloadID: pid(p), Index: i, Diff: flashblock.Diff{Transactions: raw(txs)}}
}

func raw(txs []string) []hexutil.Bytes {
	out := make([]hexutil.Bytes, len(txs))
	for i, s := range txs {
		out[i] = hexutil.Bytes(s)
	}
	return out
}

func txh(s string) common.Hash { return crypto.Keccak256Hash([]byte(s)) }

func head(n uint64, h, parent byte, txs ...string) *Head {
	hd := &Head{Number: n, Hash: hashOf(h), ParentHash: hashOf(parent)}
	if txs != nil {
		hd.Txs = []common.Hash{}
		for _, s := range txs {
			hd.Txs = append(hd.Txs, txh(s))
		}
	}
	return hd
}

func TestTracker(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"next index then next block's 0", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 11, hashOf(0xa), "t1"), want: Accepted, pending: pid(1), count: 1},
			{fb: fbi(1, 1, "t2"), want: Accepted, pending: pid(1), count: 2},
			{fb: fbi(1, 2), want: Accepted, pending: pid(1), count: 3},
			{head: head(11, 0xb, 0xa, "t1", "t2"), want: CaughtUp},
			{fb: fb0(2, 12, hashOf(0xb)), want: Accepted, pending: pid(2), count: 1},
		}},
		{"duplicates ignored", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 11, hashOf(0xa)), want: Accepted, pending: pid(1), count: 1},
			{fb: fb0(1, 11, hashOf(0xa)), want: Duplicate, pending: pid(1), count: 1},
			{fb: fbi(1, 1), want: Accepted, pending: pid(1), count: 2},
			{fb: fbi(1, 1), want: Duplicate, pending: pid(1), count: 2},
			{fb: fbi(1, 2), want: Accepted, pending: pid(1), count: 3},
		}},
		{"reordered: held after the gap, applied when the missing one arrives", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 11, hashOf(0xa)), want: Accepted, pending: pid(1), count: 1},
			{fb: fbi(1, 2), want: Gap, pending: pid(1), count: 1},
			{fb: fbi(1, 3), want: Gap, pending: pid(1), count: 1},
			{fb: fbi(1, 3), want: Duplicate, pending: pid(1), count: 1},
			{fb: fbi(1, 1), want: Accepted, pending: pid(1), count: 4},
			{fb: fbi(1, 4), want: Accepted, pending: pid(1), count: 5},
		}},
		{"dropped: the prefix stays pending until the block is sealed", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 11, hashOf(0xa)), want: Accepted, pending: pid(1), count: 1},
			{fb: fbi(1, 2), want: Gap, pending: pid(1), count: 1},
			{head: head(11, 0xb, 0xa), want: CaughtUp},
			{fb: fbi(1, 3), want: Stale},
			{fb: fb0(2, 12, hashOf(0xb)), want: Accepted, pending: pid(2), count: 1},
		}},
		{"non-zero index of an unknown block leaves pending alone", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 11, hashOf(0xa)), want: Accepted, pending: pid(1), count: 1},
			{fb: fbi(7, 4), want: Unknown, pending: pid(1), count: 1},
			{fb: fbi(1, 1), want: Accepted, pending: pid(1), count: 2},
		}},
		{"replays of earlier blocks' messages are stale", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 11, hashOf(0xa)), want: Accepted, pending: pid(1), count: 1},
			{fb: fbi(1, 1), want: Accepted, pending: pid(1), count: 2},
			{head: head(11, 0xb, 0xa), want: CaughtUp},
			{fb: fb0(2, 12, hashOf(0xb)), want: Accepted, pending: pid(2), count: 1},
			{fb: fb0(1, 11, hashOf(0xa)), want: Stale, pending: pid(2), count: 1},
			{fb: fbi(1, 1), want: Stale, pending: pid(2), count: 1},
			{fb: fbi(1, 7), want: Stale, pending: pid(2), count: 1},
		}},
		{"builder fail-over: a new payload for the same block takes over", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 11, hashOf(0xa)), want: Accepted, pending: pid(1), count: 1},
			{fb: fbi(1, 1), want: Accepted, pending: pid(1), count: 2},
			{fb: fb0(2, 11, hashOf(0xa)), want: Accepted, pending: pid(2), count: 1},
			{fb: fbi(1, 2), want: Buffered, pending: pid(2), count: 1},
			{fb: fbi(2, 1), want: Accepted, pending: pid(2), count: 2},
		}},
		{"early flashblocks buffered until their parent is canonical", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 11, hashOf(0xa), "t1"), want: Accepted, pending: pid(1), count: 1},
			{fb: fb0(2, 12, hashOf(0xb), "t2"), want: Buffered, pending: pid(1), count: 1},
			{fb: fbi(2, 1, "t3"), want: Buffered, pending: pid(1), count: 1},
			{fb: fb0(3, 13, hashOf(0xc)), want: Buffered, pending: pid(1), count: 1},
			{head: head(11, 0xb, 0xa, "t1"), want: CaughtUp, pending: pid(2), count: 2},
			{fb: fbi(2, 2), want: Accepted, pending: pid(2), count: 3},
			{head: head(12, 0xc, 0xb, "t2", "t3"), want: CaughtUp, pending: pid(3), count: 1},
		}},
		{"too far ahead and stale", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 15, hashOf(0xe)), want: TooFar},
			{fb: fb0(2, 14, hashOf(0xd)), want: Buffered},
			{fb: fb0(3, 10, hashOf(0x9)), want: Stale},
			{fb: fbi(1, 1), want: Unknown},
		}},
		{"reorg: sealed txs differ from the pre-confirmed ones", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 11, hashOf(0xa), "t1"), want: Accepted, pending: pid(1), count: 1},
			{fb: fbi(1, 1, "t2"), want: Accepted, pending: pid(1), count: 2},
			// the builder's next block builds on its own block 11 (0xb) …
			{fb: fb0(2, 12, hashOf(0xb), "t4"), want: Buffered, pending: pid(1), count: 2},
			// … but the canonical 11 (0xbb) holds other transactions.
			{head: head(11, 0xbb, 0xa, "t1", "tX"), want: Reorg},
			{fb: fbi(2, 1), want: Buffered},
			{fb: fb0(3, 12, hashOf(0xbb), "t5"), want: Accepted, pending: pid(3), count: 1},
		}},
		{"reorg: sealed block on another parent", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 11, hashOf(0xa), "t1"), want: Accepted, pending: pid(1), count: 1},
			{head: head(11, 0xb, 0x5, "t1"), want: Reorg},
		}},
		{"catch-up with more sealed txs than pre-confirmed is no reorg", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 11, hashOf(0xa), "t1"), want: Accepted, pending: pid(1), count: 1},
			{head: head(11, 0xb, 0xa, "t1", "t2"), want: CaughtUp},
		}},
		{"head jumps past the pending block", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 11, hashOf(0xa)), want: Accepted, pending: pid(1), count: 1},
			{head: head(13, 0xd, 0xc), want: CaughtUp},
			{head: head(13, 0xd, 0xc), want: HeadUnchanged},
		}},
		{"flashblocks before any head are buffered", []step{
			{fb: fb0(1, 11, hashOf(0xa)), want: Buffered},
			{fb: fbi(1, 1), want: Buffered},
			{head: head(10, 0xa, 9), want: HeadNew, pending: pid(1), count: 2},
		}},
		{"head moves to another parent: pending withheld until it returns", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 11, hashOf(0xa)), want: Accepted, pending: pid(1), count: 1},
			{head: head(10, 0xaa, 9), want: HeadNew},
			{fb: fbi(1, 1), want: Buffered},
			{head: head(10, 0xa, 9), want: HeadNew, pending: pid(1), count: 2},
		}},
		{"a newer index 0 for the same height replaces the pending block", []step{
			{head: head(10, 0xa, 9), want: HeadNew},
			{fb: fb0(1, 11, hashOf(0xa)), want: Accepted, pending: pid(1), count: 1},
			{fb: fb0(2, 11, hashOf(0xa)), want: Accepted, pending: pid(2), count: 1},
		}},
		{"invalid", []step{
			{fb: &flashblock.Message{Index: 0}, want: Invalid},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := new(Metrics)
			tr := NewTracker(3, m)
			for i, s := range tc.steps {
				var got Outcome
				if s.head != nil {
					got = tr.Head(*s.head)
				} else {
					got = tr.Flashblock(s.fb)
				}
				if got != s.want {
					t.Fatalf("step %d: outcome %v, want %v", i, got, s.want)
				}
				_, fbs, ok := tr.Pending()
				if s.count == 0 {
					if ok {
						t.Fatalf("step %d: pending %s (%d flashblocks), want none", i, fbs[0].PayloadID, len(fbs))
					}
					continue
				}
				if !ok || fbs[0].PayloadID != s.pending || len(fbs) != s.count {
					t.Fatalf("step %d: pending ok=%v %d flashblocks, want %s with %d", i, ok, len(fbs), s.pending, s.count)
				}
				for j, f := range fbs {
					if f.Index != uint64(j) {
						t.Fatalf("step %d: flashblock %d has index %d", i, j, f.Index)
					}
				}
			}
			var total uint64
			for _, v := range m.Snapshot() {
				total += v
			}
			if total != uint64(len(tc.steps)) {
				t.Fatalf("metrics counted %d outcomes for %d events: %v", total, len(tc.steps), m.Snapshot())
			}
		})
	}
}

// A gap never filled holds at most maxHeld flashblocks.
func TestTrackerBoundsHeld(t *testing.T) {
	tr := NewTracker(2, nil)
	tr.Head(*head(10, 0xa, 9))
	tr.Flashblock(fb0(1, 11, hashOf(0xa)))
	for i := range 1000 {
		if o := tr.Flashblock(fbi(1, uint64(i+2))); o != Gap {
			t.Fatalf("index %d: %v", i+2, o)
		}
	}
	if n := tr.Held(pid(1)); n != maxHeld {
		t.Fatalf("%d held, want %d", n, maxHeld)
	}
}

// The payloads remembered as left behind are bounded.
func TestTrackerBoundsGone(t *testing.T) {
	tr := NewTracker(2, nil)
	for i := range 3 * goneKept {
		n := uint64(10 + i)
		tr.Head(Head{Number: n, Hash: common.BigToHash(new(big.Int).SetUint64(n))})
		tr.Flashblock(&flashblock.Message{PayloadID: flashblock.PayloadID{byte(i), byte(i >> 8), 1}, Base: &flashblock.Base{BlockNumber: hexutil.Uint64(n + 1), ParentHash: common.BigToHash(new(big.Int).SetUint64(n)), BaseFeePerGas: (*hexutil.Big)(big.NewInt(1))}})
	}
	if len(tr.gone) != goneKept {
		t.Fatalf("%d payloads remembered, want %d", len(tr.gone), goneKept)
	}
}

func TestTrackerBoundsBufferWithoutHead(t *testing.T) {
	tr := NewTracker(2, nil)
	for i := range 20 {
		tr.Flashblock(fb0(byte(i+1), uint64(100+i), hashOf(byte(i))))
	}
	if n := tr.Buffered(); n > 4 {
		t.Fatalf("%d blocks buffered without a head, want at most 4", n)
	}
}
