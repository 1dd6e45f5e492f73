package walrecord

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

func sample() []Record {
	env := Record{Kind: Flashblock, Number: 5, Parent: common.Hash{0x11}, Time: 1700000000, Coinbase: common.Address{0x22},
		GasLimit: 30_000_000, Random: common.Hash{0x33}, BeaconRoot: common.Hash{0x44}, Extra: []byte("x"), Hash: common.Hash{0x66}}
	fb0, fb1 := env, env
	fb0.Entries = [][]byte{{0x02, 0x01}, {0x80, 0x01}}
	fb0.BaseFee = big.NewInt(7)
	fb1.Index, fb1.Kind = 1, FinalFlashblock
	return []Record{
		{Kind: Admit, Entries: [][]byte{{0x02, 0xaa, 0xbb}}},
		fb0, fb1,
		{Kind: Seal, Number: 5, Parent: common.Hash{0x11}, Hash: common.Hash{0x55}},
		{Kind: Settings, Entries: [][]byte{{0xc0}}},
	}
}

func encode(t testing.TB, recs []Record) []byte {
	var buf []byte
	for i := range recs {
		var err error
		if buf, err = Append(buf, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return buf
}

// same reports whether a and b encode to the same frames (a nil and an
// empty byte slice are the same record).
func same(t testing.TB, a, b []Record) bool {
	return len(a) == len(b) && bytes.Equal(encode(t, a), encode(t, b))
}

// TestRoundTrip: records read back as written, and the offset is the log's
// length.
func TestRoundTrip(t *testing.T) {
	want := sample()
	raw := encode(t, want)
	got, good := Read(bytes.NewReader(raw))
	if good != int64(len(raw)) {
		t.Errorf("good offset %d, want %d", good, len(raw))
	}
	if !same(t, got, want) {
		t.Errorf("read back\n got %+v\nwant %+v", got, want)
	}
}

// TestDamagedTail: a log cut anywhere, or with a byte flipped anywhere,
// reads as the intact frames before the damage and no more.
func TestDamagedTail(t *testing.T) {
	recs := sample()
	raw := encode(t, recs)
	var ends []int // frame ends
	for i := range recs {
		ends = append(ends, len(encode(t, recs[:i+1])))
	}
	intact := func(n int) int { // frames wholly inside raw[:n]
		k := 0
		for k < len(ends) && ends[k] <= n {
			k++
		}
		return k
	}
	for _, tc := range []struct {
		name   string
		damage func(pos int) []byte
		keep   func(pos int) int // frames expected
	}{
		{"cut", func(pos int) []byte { return raw[:pos] }, intact},
		{"flipped byte", func(pos int) []byte {
			b := bytes.Clone(raw)
			b[pos] ^= 0x40
			return b
		}, intact},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for pos := 0; pos < len(raw); pos++ {
				got, good := Read(bytes.NewReader(tc.damage(pos)))
				want := tc.keep(pos)
				if len(got) != want {
					t.Fatalf("damage at %d: %d records, want %d", pos, len(got), want)
				}
				if wantGood := int64(0); want > 0 && good != int64(ends[want-1]) || want == 0 && good != wantGood {
					t.Fatalf("damage at %d: good offset %d", pos, good)
				}
				if !same(t, got, recs[:want]) {
					t.Fatalf("damage at %d: records differ", pos)
				}
			}
		})
	}
}

// TestOversized: a header promising more than MaxSize ends the log.
func TestOversized(t *testing.T) {
	raw := encode(t, sample()[:1])
	raw = append(raw, 0x10, 0, 0, 1, 0, 0, 0, 0)
	got, good := Read(bytes.NewReader(raw))
	if len(got) != 1 || good != int64(len(raw)-8) {
		t.Fatalf("%d records, good %d", len(got), good)
	}
}

// FuzzRead: any bytes read without a panic, within the input, and the
// records read encode to frames that read back the same.
func FuzzRead(f *testing.F) {
	f.Add(encode(f, sample()))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, good := Read(bytes.NewReader(data))
		if good < 0 || good > int64(len(data)) {
			t.Fatalf("good offset %d of %d bytes", good, len(data))
		}
		raw := encode(t, recs)
		again, good2 := Read(bytes.NewReader(raw))
		if good2 != int64(len(raw)) || !same(t, again, recs) {
			t.Fatalf("re-encoded records read back differently")
		}
	})
}
