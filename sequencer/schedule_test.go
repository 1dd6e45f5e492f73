package sequencer

import (
	"reflect"
	"testing"

	"github.com/ethereum/go-ethereum/core"

	"github.com/preconf/preconf/chain"
)

// The ticks' due times over two blocks, in half intervals from the loop's
// start, and the flashblock each published: on the OP-stack chain a block
// has perBlock+1 flashblocks, those after 0 half an interval before their
// grid points; on the plain chain perBlock, all on the grid. Both chains'
// blocks span perBlock intervals.
func TestSchedule(t *testing.T) {
	l2, err := chain.DevL2Genesis()
	if err != nil {
		t.Fatal(err)
	}
	perBlock := int(testBlockTime / testInterval) // 5
	for _, tc := range []struct {
		name    string
		genesis *core.Genesis
		due     []int64 // half intervals
		index   []uint64
	}{
		{"op", l2, []int64{2, 3, 5, 7, 9, 11, 12, 13, 15, 17, 19, 21, 22}, []uint64{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 0}},
		{"plain", chain.DevGenesis(), []int64{2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22}, []uint64{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarnessWith(t, "", tc.genesis, Config{Interval: testInterval, BlockTime: testBlockTime})
			defer h.chain.Close()
			s := h.seq
			var due []int64
			var index []uint64
			k := int64(1)
			for len(due) < len(tc.due) {
				early := s.early()
				due = append(due, 2*k-int64(early*2/testInterval))
				if err := s.tick(); err != nil {
					t.Fatal(err)
				}
				index = append(index, h.src.Current().Index)
				k = s.nextGridPoint(k, early)
			}
			if !reflect.DeepEqual(due, tc.due) || !reflect.DeepEqual(index, tc.index) {
				t.Errorf("due (half intervals) %v\nwant %v\nflashblocks %v\nwant %v", due, tc.due, index, tc.index)
			}
			if head := h.chain.Head().Number.Uint64(); head != 2 {
				t.Errorf("head %d after two blocks of %d intervals, want 2", head, perBlock)
			}
		})
	}
}
