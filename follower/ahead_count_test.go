package follower

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"
)

// noteAhead: a block opened ahead that leaves the pending chain because the
// upstream sealed it as pre-confirmed — its parent and itself in one head
// move — was kept; one that leaves it unsealed was dropped. (tests/faults
// TestNextBlockAhead counted the first as dropped when the upstream caught
// up by two blocks at once.)
func TestNoteAheadSealedItself(t *testing.T) {
	f := &Follower{exec: &executor{}, headers: newHeaders(nil, params.TestChainConfig)}
	sealed := &types.Header{Number: big.NewInt(3), Extra: []byte("sealed as pre-confirmed")}
	other := &types.Header{Number: big.NewInt(3), Extra: []byte("never sealed")}
	f.headers.add(sealed)
	for _, tc := range []struct {
		last          *types.Header
		kept, dropped uint64
	}{
		{sealed, 1, 0},
		{other, 0, 1},
	} {
		f.ahead.kept.Store(0)
		f.ahead.dropped.Store(0)
		f.noteAhead([]chainBlock{{blk: &openBlock{last: tc.last}, ahead: true}}, 3)
		if k, d := f.ahead.kept.Load(), f.ahead.dropped.Load(); k != tc.kept || d != tc.dropped {
			t.Errorf("%s: kept %d dropped %d, want %d and %d", tc.last.Extra, k, d, tc.kept, tc.dropped)
		}
	}
}
