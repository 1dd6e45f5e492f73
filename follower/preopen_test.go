package follower

import (
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/pending"
)

// Block N+1 opened on the pending block N, which the upstream has not
// sealed: with the next block's start fetched ahead (preopen), its index 0
// is executed and published without one value read from the upstream;
// without it, the system calls' ring slots are read on the way.
func TestPreopenNextBlockReadsNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		preopen  bool
		wantCold bool
	}{
		{"fetched ahead", true, false},
		{"not fetched ahead", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, src, genesis := execFixture(t)
			to := common.Address{0xaa}
			b1 := &flashblock.Message{PayloadID: flashblock.PayloadID{1}, Base: base(genesis), Diff: flashblock.Diff{Transactions: []hexutil.Bytes{devTx(t, 0, to, 5)}}}
			var b2 *flashblock.Message
			after := func(hash common.Hash) []*flashblock.Message {
				if b2 != nil && hash == b2.Base.ParentHash {
					return []*flashblock.Message{b2}
				}
				return nil
			}
			published := func([]*flashblock.Message) func(*pending.Snapshot) { return func(*pending.Snapshot) {} }
			if _, err := e.syncChain(genesis, []*flashblock.Message{b1}, after, published); err != nil {
				t.Fatal(err)
			}
			n1 := e.blk.last
			if tc.preopen {
				done := e.preopen(genesis)
				if done == nil {
					t.Fatal("nothing fetched ahead")
				}
				<-done
				if e.preopen(genesis) != nil {
					t.Fatal("fetched ahead twice for the same state and block")
				}
			}
			b2 = &flashblock.Message{PayloadID: flashblock.PayloadID{2}, Base: base(n1), Diff: flashblock.Diff{Transactions: []hexutil.Bytes{devTx(t, 1, to, 7)}}}
			opened, cold0, fetched := e.opens.opened.Load(), e.opens.cold.Load(), e.shared.Fetches.Load()
			if _, err := e.syncChain(genesis, []*flashblock.Message{b1}, after, published); err != nil {
				t.Fatal(err)
			}
			if s := src.Current(); s == nil || s.Header.Number.Uint64() != 2 || s.Header.ParentHash != n1.Hash() {
				t.Fatalf("pending %v, want block 2 on the pre-confirmed block 1", s)
			}
			cold := e.opens.cold.Load() - cold0
			if e.opens.opened.Load()-opened != 1 || (cold > 0) != tc.wantCold {
				t.Fatalf("block 2 opened reading %d values from the upstream (cold %d), want cold %v",
					e.shared.Fetches.Load()-fetched, cold, tc.wantCold)
			}
		})
	}
}

// The next block's start is guessed from the block it builds on: number
// plus one, the same gap to its timestamp, the same fee recipient.
func TestNextHeader(t *testing.T) {
	e, _, _ := execFixture(t)
	grand := &types.Header{Number: common.Big1, Time: 100}
	parent := &types.Header{Number: common.Big2, Time: 102, Coinbase: common.Address{0xc0}}
	for _, tc := range []struct {
		name  string
		grand *types.Header
		time  uint64
	}{
		{"gap known", grand, 104},
		{"grandparent unknown", nil, 103},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := e.nextHeader(parent, tc.grand)
			if h.Number.Uint64() != 3 || h.Time != tc.time || h.Coinbase != parent.Coinbase || h.ParentHash != parent.Hash() {
				t.Fatalf("next header: number %d time %d coinbase %s", h.Number, h.Time, h.Coinbase)
			}
		})
	}
}
