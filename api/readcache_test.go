package api

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/pending"
)

// pendingSnapshot uses a snapshot when its parent is the head, by hash —
// whether or not it is the same header object — or a pre-confirmed block
// above it (a follower's next block opened before its parent is sealed);
// never over an older head or another block at the head's height.
func TestPendingSnapshotParentCheck(t *testing.T) {
	a, src, c := benchAPI(t)
	head := c.Head()
	copyOf := func(h *types.Header) *types.Header { return types.CopyHeader(h) }
	other := copyOf(head)
	other.Extra = []byte("another block at the same height")
	higher := copyOf(head)
	higher.Number = new(big.Int).Add(head.Number, common.Big1)
	lower := copyOf(head)
	lower.Number = new(big.Int).Sub(head.Number, common.Big1)
	for _, tc := range []struct {
		name   string
		parent *types.Header
		used   bool
	}{
		{"same object", head, true},
		{"equal copy", copyOf(head), true},
		{"other block, same height", other, false},
		{"pre-confirmed parent above the head", higher, true},
		{"older head", lower, false},
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

// countingReader counts the reads that reach it.
type countingReader struct {
	state.Reader
	accounts, slots int
}

func (c *countingReader) Account(addr common.Address) (*types.StateAccount, error) {
	c.accounts++
	return c.Reader.Account(addr)
}

func (c *countingReader) Storage(addr common.Address, slot common.Hash) (common.Hash, error) {
	c.slots++
	return c.Reader.Storage(addr, slot)
}

// The caching reader answers repeated reads itself, with values equal to
// the underlying reader's, and hands out copies callers may modify.
func TestCachingReader(t *testing.T) {
	_, _, c := benchAPI(t)
	base, err := c.StateReader(c.Head().Root)
	if err != nil {
		t.Fatal(err)
	}
	under := &countingReader{Reader: base}
	r := newCachingReader(under)
	funded := chain.DevAccounts()[0]
	absent := common.Address{0xde, 0xad}
	for i := 0; i < 3; i++ {
		for _, addr := range []common.Address{funded, absent, benchContract} {
			got, err := r.Account(addr)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := base.Account(addr)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: %+v, want %+v", addr, got, want)
			}
			ans, err := r.balanceAnswer(addr)
			if err != nil || string(ans.(json.RawMessage)) != string(balanceJSON(want)) {
				t.Fatalf("%s: balance answer %s (%v), want %s", addr, ans, err, balanceJSON(want))
			}
			if got != nil { // a caller's change must not reach the cache
				got.Balance.SetUint64(1)
				got.Nonce = 99
			}
		}
		for slot := int64(0); slot < 20; slot++ {
			key := common.BigToHash(big.NewInt(slot))
			got, err := r.Storage(benchContract, key)
			want, _ := base.Storage(benchContract, key)
			if err != nil || got != want {
				t.Fatalf("slot %d: %x (%v), want %x", slot, got, err, want)
			}
			ans, err := r.storageAnswer(benchContract, key)
			if err != nil || string(ans.(json.RawMessage)) != string(quotedHash(want)) {
				t.Fatalf("slot %d: answer %s (%v)", slot, ans, err)
			}
		}
	}
	if under.accounts != 3 || under.slots != 20 {
		t.Errorf("underlying reads: %d accounts, %d slots; want 3 and 20 (the rest cached)", under.accounts, under.slots)
	}
}

// Pending reads use one cache per snapshot: a new snapshot starts afresh.
func TestSnapshotReaders(t *testing.T) {
	_, _, c := benchAPI(t)
	base, _ := c.StateReader(c.Head().Root)
	var sr snapshotReaders
	s1 := &pending.Snapshot{State: pending.NewState(base)}
	s2 := &pending.Snapshot{State: pending.NewState(base)}
	r1 := sr.get(s1)
	if sr.get(s1) != r1 {
		t.Error("same snapshot, different readers")
	}
	if sr.get(s2) == r1 {
		t.Error("new snapshot served from the old one's cache")
	}
}

// decodeStorageKey keeps the earlier (allocating) implementation's results.
func TestDecodeStorageKeyUnchanged(t *testing.T) {
	reference := func(s string) (common.Hash, error) {
		raw := s
		if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
			s = s[2:]
		}
		if len(s)%2 == 1 {
			s = "0" + s
		}
		if len(s) > 64 {
			return common.Hash{}, fmt.Errorf("storage key too long (want at most 32 bytes): %q", raw)
		}
		b, err := hex.DecodeString(s)
		if err != nil {
			return common.Hash{}, fmt.Errorf("invalid storage key %q: hex string invalid", raw)
		}
		return common.BytesToHash(b), nil
	}
	for _, k := range []string{"", "0x", "0X", "0", "0x0", "0x1", "1", "0xabc", "0XABC", "0x0g", "zz", "0x" + strings.Repeat("f", 63),
		"0x" + strings.Repeat("f", 64), "0x" + strings.Repeat("f", 65), strings.Repeat("1", 64), strings.Repeat("1", 65),
		"0x" + strings.Repeat("0", 66), "0x 1", "-1", "0xéé", "0x0x1"} {
		got, gotErr := decodeStorageKey(k)
		want, wantErr := reference(k)
		if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("%q: %x, %v; want %x, %v", k, got, gotErr, want, wantErr)
		}
	}
}
