package follower

import (
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/pending"
)

// What pending shows when a block of the pending chain fails (issue 33):
// block 1 on the sealed genesis, block 2 opened ahead on the pre-confirmed
// block 1, and a flashblock of either that cannot be applied (invalid) or
// cannot be read for (the upstream down). Pending never goes through
// nothing on the way, and never shows a block that does not stand: a
// retryable failure keeps the failed block's last snapshot (and the block
// is executed again once the upstream is back); an invalid flashblock
// falls back to the block before, or to nothing above latest when the
// failed block is the one on the sealed head. A fallback is not announced
// to subscribers again (they had it).
func TestSettleAfterFailure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ahead   bool // the failure is in block 2 (else in block 1)
		invalid bool
		want    string // what pending shows after: "failed block", "block 1", "nothing"
	}{
		{"upstream down in the block opened ahead", true, false, "failed block"},
		{"invalid flashblock in the block opened ahead", true, true, "block 1"},
		{"upstream down in the block on the sealed head", false, false, "failed block"},
		{"invalid flashblock in the block on the sealed head", false, true, "nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, src, genesis, down := execFixtureDown(t)
			to := common.Address{0xaa}
			b1 := []*flashblock.Message{{PayloadID: flashblock.PayloadID{1}, Base: base(genesis), Diff: flashblock.Diff{Transactions: []hexutil.Bytes{devTx(t, 0, to, 5)}}}}
			var b2 []*flashblock.Message
			after := func(hash common.Hash) []*flashblock.Message {
				if len(b2) > 0 && hash == b2[0].Base.ParentHash {
					return b2
				}
				return nil
			}
			if _, err := e.syncChain(genesis, b1, after, noCallback); err != nil {
				t.Fatal(err)
			}
			b1Last := src.Current()
			b2 = []*flashblock.Message{{PayloadID: flashblock.PayloadID{2}, Base: base(b1Last.Header), Diff: flashblock.Diff{Transactions: []hexutil.Bytes{devTx(t, 1, to, 7)}}}}
			if !tc.ahead {
				b2 = nil
			}
			if _, err := e.syncChain(genesis, b1, after, noCallback); err != nil {
				t.Fatal(err)
			}
			before := src.Current()
			nonce := uint64(1)
			if tc.ahead {
				nonce = 2
			}
			// the failing flashblock: a transfer to an address never read
			// (the upstream is asked) or a nonce already used (invalid)
			bad := &flashblock.Message{PayloadID: before.PayloadID, Index: 1, Diff: flashblock.Diff{Transactions: []hexutil.Bytes{devTx(t, nonce, common.Address{0xfe, 0xed}, 1)}}}
			if tc.invalid {
				bad.Diff.Transactions[0] = devTx(t, 0, to, 1)
			}
			if tc.ahead {
				b2 = append(b2, bad)
			} else {
				b1 = append(b1, bad)
			}
			shown, stop := src.Subscribe(16)
			defer stop()
			down.Store(!tc.invalid)
			_, err := e.syncChain(genesis, b1, after, noCallback)
			if errors.Is(err, ErrInvalidFlashblock) != tc.invalid || err == nil {
				t.Fatalf("error %v, want invalid %v", err, tc.invalid)
			}
			var published []*pending.Snapshot
			for len(shown) > 0 {
				published = append(published, <-shown)
			}
			want := map[string]*pending.Snapshot{"failed block": before, "block 1": b1Last, "nothing": nil}[tc.want]
			if got := src.Current(); got != want {
				t.Fatalf("pending shows %s, want %s", describe(got), tc.want)
			}
			for _, s := range published {
				if s == nil && want != nil {
					t.Fatal("pending went through nothing")
				}
			}
			if len(published) > 1 {
				t.Fatalf("%d publications after the failure, want at most one", len(published))
			}
			// A fallback to a snapshot published before is not announced
			// again: the node's /flashblocks feed would replay it.
			for _, s := range published {
				if s != nil && (s == b1Last || s == before) {
					t.Fatalf("%s announced again", describe(s))
				}
			}
			if tc.invalid {
				return
			}
			// the upstream back: the failed block is executed again from its
			// start and shows the flashblock
			down.Store(false)
			if _, err := e.syncChain(genesis, b1, after, noCallback); err != nil {
				t.Fatal(err)
			}
			if s := src.Current(); s == nil || s.PayloadID != before.PayloadID || s.Index != 1 || s.Header.ParentHash != before.Header.ParentHash {
				t.Fatalf("after the upstream came back pending shows %s", describe(s))
			}
		})
	}
}

func describe(s *pending.Snapshot) string {
	if s == nil {
		return "nothing"
	}
	return "block " + s.Header.Number.String() + " index " + hexutil.EncodeUint64(s.Index)
}
