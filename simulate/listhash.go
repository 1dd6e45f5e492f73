package simulate

import (
	"bytes"
	"sort"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// listHasher is a types.ListHasher for the short lists of a simulated block
// (its transactions, receipts and withdrawals): it keeps the key/value pairs
// types.DeriveSha hands it and builds the Merkle-Patricia root in one pass
// at Hash, without the StackTrie's node machinery, which cost a simulated
// 2-transfer block as much CPU as executing the transfers. The root is the
// trie's: TestListHasherMatchesStackTrie compares them on lists of 0–300
// entries with values from 1 byte (embedded nodes) to 600.
type listHasher struct {
	entries []listEntry
	arena   []byte // key nibbles and values, copied (DeriveSha reuses its buffers)
	kc      crypto.KeccakState
	out     []byte // node encodings under construction
	sum     common.Hash
}

type listEntry struct{ key, val [2]int } // arena ranges

var listHashers = sync.Pool{New: func() any { return &listHasher{kc: crypto.NewKeccakState()} }}

// Reset implements types.ListHasher.
func (h *listHasher) Reset() {
	h.entries, h.arena = h.entries[:0], h.arena[:0]
}

// Update implements types.ListHasher.
func (h *listHasher) Update(key, value []byte) error {
	var e listEntry
	e.key[0] = len(h.arena)
	for _, b := range key {
		h.arena = append(h.arena, b>>4, b&0x0f)
	}
	e.key[1] = len(h.arena)
	e.val[0] = len(h.arena)
	h.arena = append(h.arena, value...)
	e.val[1] = len(h.arena)
	h.entries = append(h.entries, e)
	return nil
}

func (h *listHasher) key(i int) []byte {
	r := h.entries[i].key
	return h.arena[r[0]:r[1]]
}

// Hash implements types.ListHasher.
func (h *listHasher) Hash() common.Hash {
	n := len(h.entries)
	if n == 0 {
		return types.EmptyRootHash
	}
	for i := 1; i < n; i++ {
		if bytes.Compare(h.key(i-1), h.key(i)) >= 0 {
			// not the strictly increasing order DeriveSha gives: sort, the
			// last value of a key winning as in a trie.
			h.sortEntries()
			n = len(h.entries)
			break
		}
	}
	h.out = h.out[:0]
	start := len(h.out)
	h.out = h.node(h.out, 0, n, 0)
	return h.keccak(h.out[start:])
}

func (h *listHasher) sortEntries() {
	sort.SliceStable(h.entries, func(i, j int) bool {
		ri, rj := h.entries[i].key, h.entries[j].key
		return bytes.Compare(h.arena[ri[0]:ri[1]], h.arena[rj[0]:rj[1]]) < 0
	})
	out := h.entries[:0]
	for i, e := range h.entries {
		if i+1 < len(h.entries) && bytes.Equal(h.key(i), h.key(i+1)) {
			continue
		}
		out = append(out, e)
	}
	h.entries = out
}

func (h *listHasher) keccak(b []byte) common.Hash {
	h.kc.Reset()
	h.kc.Write(b)
	h.kc.Read(h.sum[:])
	return h.sum
}

// node appends the RLP encoding of the trie node holding entries [lo, hi),
// whose keys agree on their first depth nibbles.
func (h *listHasher) node(out []byte, lo, hi, depth int) []byte {
	first := h.key(lo)
	if hi-lo == 1 {
		start := len(out)
		out = appendCompact(out, first[depth:], true)
		r := h.entries[lo].val
		out = appendRLPString(out, h.arena[r[0]:r[1]])
		return wrapList(out, start)
	}
	last := h.key(hi - 1)
	common := 0
	for depth+common < len(first) && depth+common < len(last) && first[depth+common] == last[depth+common] {
		common++
	}
	if common > 0 {
		start := len(out)
		out = appendCompact(out, first[depth:depth+common], false)
		out = h.ref(out, lo, hi, depth+common)
		return wrapList(out, start)
	}
	// a branch: keys are prefix-free (RLP-encoded indexes), so no value.
	start := len(out)
	i := lo
	for nib := byte(0); nib < 16; nib++ {
		j := i
		for j < hi && h.key(j)[depth] == nib {
			j++
		}
		if j == i {
			out = append(out, 0x80)
			continue
		}
		out = h.ref(out, i, j, depth+1)
		i = j
	}
	out = append(out, 0x80)
	return wrapList(out, start)
}

// ref appends the reference to the node of entries [lo, hi): its encoding
// when shorter than 32 bytes, else its hash.
func (h *listHasher) ref(out []byte, lo, hi, depth int) []byte {
	start := len(out)
	out = h.node(out, lo, hi, depth)
	if len(out)-start < 32 {
		return out
	}
	sum := h.keccak(out[start:])
	out = append(out[:start], 0xa0)
	return append(out, sum[:]...)
}

// appendCompact appends the hex-prefix encoding of a nibble path as an RLP
// string.
func appendCompact(out, path []byte, leaf bool) []byte {
	var buf [40]byte
	c := buf[:0]
	if len(path) > 2*(len(buf)-1) {
		c = make([]byte, 0, len(path)/2+1)
	}
	flag := byte(0)
	if leaf {
		flag = 2
	}
	if len(path)%2 == 1 {
		c = append(c, (flag+1)<<4|path[0])
		path = path[1:]
	} else {
		c = append(c, flag<<4)
	}
	for i := 0; i < len(path); i += 2 {
		c = append(c, path[i]<<4|path[i+1])
	}
	return appendRLPString(out, c)
}

func appendRLPString(out, s []byte) []byte {
	if len(s) == 1 && s[0] < 0x80 {
		return append(out, s[0])
	}
	out = appendStringHeader(out, len(s))
	return append(out, s...)
}

func appendStringHeader(out []byte, n int) []byte {
	if n < 56 {
		return append(out, 0x80+byte(n))
	}
	return appendLongHeader(out, 0xb7, n)
}

func appendLongHeader(out []byte, base byte, n int) []byte {
	var buf [8]byte
	i := len(buf)
	for v := n; v > 0; v >>= 8 {
		i--
		buf[i] = byte(v)
	}
	out = append(out, base+byte(len(buf)-i))
	return append(out, buf[i:]...)
}

// wrapList turns out[start:] into an RLP list (header inserted before it).
func wrapList(out []byte, start int) []byte {
	n := len(out) - start
	var hdr [9]byte
	var h []byte
	if n < 56 {
		hdr[0] = 0xc0 + byte(n)
		h = hdr[:1]
	} else {
		h = appendLongHeader(hdr[:0], 0xf7, n)
	}
	out = append(out, h...) // grow by the header's size
	copy(out[start+len(h):], out[start:start+n])
	copy(out[start:], h)
	return out
}
