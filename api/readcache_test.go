package api

import (
	"encoding/json"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/pending"
)

// pendingSnapshot uses a snapshot exactly when its parent is the head, by
// hash — whether or not it is the same header object.
func TestPendingSnapshotParentCheck(t *testing.T) {
	a, src, c := benchAPI(t)
	head := c.Head()
	copyOf := func(h *types.Header) *types.Header { return types.CopyHeader(h) }
	other := copyOf(head)
	other.Extra = []byte("another block at the same height")
	higher := copyOf(head)
	higher.Number = new(big.Int).Add(head.Number, common.Big1)
	for _, tc := range []struct {
		name   string
		parent *types.Header
		used   bool
	}{
		{"same object", head, true},
		{"equal copy", copyOf(head), true},
		{"other block, same height", other, false},
		{"other height", higher, false},
		{"equal copy again (cached)", copyOf(head), true},
	} {
		snap := &pending.Snapshot{Parent: tc.parent, Header: &types.Header{Number: new(big.Int).Add(tc.parent.Number, common.Big1)}}
		src.Publish(snap)
		for i := 0; i < 2; i++ { // second time from the hash cache
			if got := a.pendingSnapshot(); (got == snap) != tc.used {
				t.Errorf("%s (call %d): snapshot used = %v, want %v", tc.name, i, got == snap, tc.used)
			}
		}
	}
}

// The reader cache hands out one reader per root and opens a new one when
// the root changes.
func TestReaderCache(t *testing.T) {
	a, _, c := benchAPI(t)
	root := c.Head().Root
	r1, err := a.readers.get(c, root)
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := a.readers.get(c, root)
	if r1 != r2 {
		t.Error("same root, different readers")
	}
	if _, err := a.readers.get(c, common.Hash{0x01}); err == nil {
		t.Error("unknown root opened")
	}
	r3, _ := a.readers.get(c, root)
	if r3 != r1 {
		t.Error("a failed open replaced the cached reader")
	}
}

func TestQuotedHashMatchesJSON(t *testing.T) {
	for _, h := range []common.Hash{{}, common.HexToHash("0x01"), common.HexToHash("0xdeadbeef00000000000000000000000000000000000000000000000000ABCDEF")} {
		want, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		if got := quotedHash(h); string(got) != string(want) {
			t.Errorf("quotedHash(%x) = %s, want %s", h, got, want)
		}
	}
}
