package follower

import (
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/remote"
)

// warmFixture is a follower (not started, its feed never dialled) over
// devUpstream, with one pre-confirmed block open on its genesis: a transfer
// of 5 wei to to. It returns that block's header and the upstream's switch.
func warmFixture(t *testing.T, to common.Address) (*Follower, *types.Header, *atomic.Bool) {
	t.Helper()
	c, url, down := devUpstream(t)
	f, err := New(Config{Upstream: url, Feed: "ws://127.0.0.1:1/unused", Chain: c.Config(), Proofs: remote.ProofsRequired}, new(pending.Source))
	if err != nil {
		t.Fatal(err)
	}
	parent := c.Head()
	fb0 := &flashblock.Message{PayloadID: flashblock.PayloadID{1}, Index: 0, Base: base(parent), Diff: flashblock.Diff{Transactions: []hexutil.Bytes{devTx(t, 0, to, 5)}}}
	if err := f.exec.sync(parent, []*flashblock.Message{fb0}, nil); err != nil {
		t.Fatal(err)
	}
	return f, f.exec.blk.last, down
}

// warmParent seeds the state after the pre-confirmed block when the next
// block's first flashblock names that block as its parent, once; any
// other flashblock leaves everything as it was. With the upstream down
// (it never sealed the block anyway), a read of the warmed state that
// succeeds was answered by the seed, without a round trip.
func TestWarmParent(t *testing.T) {
	to := common.Address{0xaa}
	sender := crypto.PubkeyToAddress(mustKey(t).PublicKey)
	next := func(parentHash common.Hash, last *types.Header) *flashblock.Message {
		b := base(last)
		b.ParentHash = parentHash
		return &flashblock.Message{PayloadID: flashblock.PayloadID{2}, Index: 0, Base: b}
	}
	for _, tc := range []struct {
		name  string
		fbs   func(last *types.Header) []*flashblock.Message
		noBlk bool // no block open when the flashblocks arrive
		warm  bool
	}{
		{"names the pre-confirmed block", func(last *types.Header) []*flashblock.Message {
			return []*flashblock.Message{next(last.Hash(), last)}
		}, false, true},
		{"twice", func(last *types.Header) []*flashblock.Message {
			return []*flashblock.Message{next(last.Hash(), last), next(last.Hash(), last)}
		}, false, true},
		{"another parent", func(last *types.Header) []*flashblock.Message {
			return []*flashblock.Message{next(common.Hash{0xbb}, last)}
		}, false, false},
		{"the pre-confirmed block's parent", func(last *types.Header) []*flashblock.Message {
			return []*flashblock.Message{next(last.ParentHash, last)}
		}, false, false},
		{"no base (not an index 0)", func(last *types.Header) []*flashblock.Message {
			return []*flashblock.Message{{PayloadID: flashblock.PayloadID{2}, Index: 1}}
		}, false, false},
		{"no open block", func(last *types.Header) []*flashblock.Message {
			return []*flashblock.Message{next(last.Hash(), last)}
		}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, last, down := warmFixture(t, to)
			down.Store(true)
			if tc.noBlk {
				f.exec.blk = nil
			}
			for _, fb := range tc.fbs(last) {
				f.warmParent(fb)
			}
			wantCarried, wantWarmed := uint64(0), common.Hash{}
			if tc.warm {
				wantCarried, wantWarmed = 1, last.Hash()
			}
			if got := f.exec.carried.Load(); got != wantCarried {
				t.Errorf("carried %d, want %d", got, wantCarried)
			}
			if f.warmed != wantWarmed {
				t.Errorf("warmed %s, want %s", f.warmed, wantWarmed)
			}
			if !tc.warm {
				if _, ok := f.states.get(last.Hash()); ok {
					t.Error("a state was made for the pre-confirmed block")
				}
				// Unseeded, the state after the block reads from the
				// upstream, which is down.
				if acct, err := f.stateAt(last).Account(to); err == nil {
					t.Fatalf("unwarmed state read %+v with the upstream down", acct)
				}
				return
			}
			st := f.stateAt(last) // what the block's opening will use
			if acct, err := st.Account(to); err != nil || acct == nil || acct.Balance.Uint64() != 5 {
				t.Fatalf("recipient in the warmed state: %+v %v", acct, err)
			}
			if acct, err := st.Account(sender); err != nil || acct == nil || acct.Nonce != 1 {
				t.Fatalf("sender in the warmed state: %+v %v", acct, err)
			}
		})
	}
}
