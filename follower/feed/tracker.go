package feed

import (
	"github.com/ethereum/go-ethereum/common"
	"github.com/preconf/preconf/flashblock"
)

// Head is a canonical (sealed) block as the tracker sees it.
type Head struct {
	Number     uint64
	Hash       common.Hash
	ParentHash common.Hash
	// Txs are the sealed block's transaction hashes, in order (nil: unknown,
	// which disables the reorg check for that block).
	Txs []common.Hash
}

// block is one payload's flashblocks, in index order without holes.
type block struct {
	payload flashblock.PayloadID
	number  uint64
	parent  common.Hash
	fbs     []*flashblock.Message
	txs     []common.Hash // pre-confirmed transaction hashes so far
	seq     uint64        // arrival order of index 0
	// held are flashblocks that arrived after a missing index, by index,
	// applied when the missing one arrives (reordered messages).
	held map[uint64]*flashblock.Message
}

// Tracker applies the sequencing rules of the flashblocks format to a stream
// of flashblocks and canonical heads, and says which flashblocks make up the
// pending block: those of the block whose parent is the canonical head.
//
//   - Accept the next index of a known payload, or index 0 of a new block.
//   - Ignore duplicates, and messages of payloads already left behind
//     (replays of earlier blocks' messages: stale).
//   - A flashblock after a missing index is held (up to maxHeld a block)
//     and applied when the missing one arrives; until then the block's
//     flashblocks up to the gap stay pending. A gap never filled keeps that
//     prefix pending until the block is sealed: older by a few flashblocks,
//     never older than the sealed chain.
//   - A non-zero index for a block whose index 0 was never seen is counted
//     and ignored; the pending block stays (it is still the newest state
//     known to build on the canonical head).
//   - A flashblock ahead of the canonical head (its parent not sealed yet) is
//     buffered, up to Ahead blocks beyond the next one.
//   - A canonical head covering the pending block clears it (catch-up); if
//     its transactions differ from those pre-confirmed, it is counted as a
//     reorg. Either way pending is rebuilt from the buffered flashblocks of
//     the block after the new head, if they build on it.
//
// A Tracker is not safe for concurrent use: one goroutine feeds it.
type Tracker struct {
	ahead   uint64
	head    Head
	hasHead bool
	blocks  map[flashblock.PayloadID]*block
	cur     *block
	seq     uint64
	m       *Metrics
	// gone remembers the payloads no longer held (sealed, too old, dropped),
	// so that a replay of their messages is recognised as stale.
	gone     map[flashblock.PayloadID]struct{}
	goneRing [goneKept]flashblock.PayloadID
	goneNext int
}

// goneKept is how many left-behind payloads are remembered.
const goneKept = 256

// maxHeld bounds the flashblocks held after a gap in one block.
const maxHeld = 64

// DefaultAhead is how many blocks past the next one are buffered.
const DefaultAhead = 3

// NewTracker returns a tracker buffering up to ahead blocks beyond the next
// (ahead ≤ 0: DefaultAhead). m may be nil.
func NewTracker(ahead int, m *Metrics) *Tracker {
	if ahead <= 0 {
		ahead = DefaultAhead
	}
	return &Tracker{ahead: uint64(ahead), blocks: make(map[flashblock.PayloadID]*block), gone: make(map[flashblock.PayloadID]struct{}, goneKept), m: m}
}

// forget removes a block and remembers its payload as left behind.
func (t *Tracker) forget(b *block) {
	delete(t.blocks, b.payload)
	if _, ok := t.gone[b.payload]; ok {
		return
	}
	if old := t.goneRing[t.goneNext]; old != (flashblock.PayloadID{}) {
		delete(t.gone, old)
	}
	t.goneRing[t.goneNext] = b.payload
	t.goneNext = (t.goneNext + 1) % goneKept
	t.gone[b.payload] = struct{}{}
}

func (t *Tracker) count(o Outcome) Outcome {
	t.m.Count(o)
	return o
}

// Flashblock feeds one flashblock and says what became of it.
func (t *Tracker) Flashblock(fb *flashblock.Message) Outcome {
	if fb == nil || (fb.Index == 0 && fb.Base == nil) {
		return t.count(Invalid)
	}
	if _, ok := t.gone[fb.PayloadID]; ok {
		return t.count(Stale)
	}
	b, ok := t.blocks[fb.PayloadID]
	if fb.Index == 0 {
		if ok {
			return t.count(Duplicate)
		}
		n := fb.Number()
		if t.hasHead {
			if n <= t.head.Number {
				return t.count(Stale)
			}
			if n > t.head.Number+1+t.ahead {
				return t.count(TooFar)
			}
		}
		t.seq++
		b = &block{payload: fb.PayloadID, number: n, parent: fb.Base.ParentHash, seq: t.seq}
		b.add(fb)
		t.blocks[fb.PayloadID] = b
		t.bound()
		t.recompute()
		if t.cur == b {
			return t.count(Accepted)
		}
		return t.count(Buffered)
	}
	if !ok {
		// The builder is on a block whose start we never saw (index 0 lost,
		// or joined mid-block): nothing to apply it to.
		return t.count(Unknown)
	}
	switch next := uint64(len(b.fbs)); {
	case fb.Index < next:
		return t.count(Duplicate)
	case fb.Index > next:
		if _, dup := b.held[fb.Index]; dup {
			return t.count(Duplicate)
		}
		if fb.Index-next <= maxHeld && len(b.held) < maxHeld {
			if b.held == nil {
				b.held = make(map[uint64]*flashblock.Message)
			}
			b.held[fb.Index] = fb
		}
		return t.count(Gap)
	}
	b.add(fb)
	for {
		next, ok := b.held[uint64(len(b.fbs))]
		if !ok {
			break
		}
		delete(b.held, next.Index)
		b.add(next)
	}
	if b == t.cur {
		return t.count(Accepted)
	}
	return t.count(Buffered)
}

// Held is the number of flashblocks of payload id waiting for a missing
// index.
func (t *Tracker) Held(id flashblock.PayloadID) int {
	if b := t.blocks[id]; b != nil {
		return len(b.held)
	}
	return 0
}

func (b *block) add(fb *flashblock.Message) {
	b.fbs = append(b.fbs, fb)
	b.txs = append(b.txs, fb.TxHashes()...)
}

// Head feeds a canonical head and says what it did to the pending block.
func (t *Tracker) Head(h Head) Outcome {
	if t.hasHead && h.Hash == t.head.Hash {
		if t.head.Txs == nil {
			t.head.Txs = h.Txs
		}
		return t.count(HeadUnchanged)
	}
	outcome := HeadNew
	if c := t.cur; c != nil && c.number <= h.Number {
		outcome = CaughtUp
		if c.number == h.Number && (h.ParentHash != c.parent || (h.Txs != nil && !isPrefix(c.txs, h.Txs))) {
			outcome = Reorg
		}
	}
	t.head, t.hasHead = h, true
	for _, b := range t.blocks {
		if b.number <= h.Number || b.number > h.Number+1+t.ahead {
			t.forget(b)
		}
	}
	t.recompute()
	return t.count(outcome)
}

// Drop discards a payload (its re-execution failed for good); pending waits
// for the next index 0.
func (t *Tracker) Drop(id flashblock.PayloadID) {
	if b := t.blocks[id]; b != nil {
		t.forget(b)
	}
	t.recompute()
}

// Reset forgets every flashblock (the feed reconnected); the head is kept.
func (t *Tracker) Reset() {
	clear(t.blocks)
	t.cur = nil
}

// Pending returns the flashblocks of the pending block (index 0 first) and
// the head it builds on; ok is false when nothing is pending. The slice is
// shared: callers must not modify it.
func (t *Tracker) Pending() (head Head, fbs []*flashblock.Message, ok bool) {
	if t.cur == nil {
		return t.head, nil, false
	}
	return t.head, t.cur.fbs[:len(t.cur.fbs):len(t.cur.fbs)], true
}

// After returns the flashblocks of the newest-started block held whose
// parent is hash (index 0 first), or nil: the block that follows a
// pre-confirmed one the upstream has not sealed yet, which a follower may
// execute on that block's pending state. The slice is shared.
func (t *Tracker) After(hash common.Hash) []*flashblock.Message {
	var best *block
	for _, b := range t.blocks {
		if b.parent == hash && (best == nil || b.seq > best.seq) {
			best = b
		}
	}
	if best == nil {
		return nil
	}
	return best.fbs[:len(best.fbs):len(best.fbs)]
}

// CurrentHead is the last canonical head fed (ok false before the first).
func (t *Tracker) CurrentHead() (Head, bool) { return t.head, t.hasHead }

// Buffered is the number of blocks held (pending one included).
func (t *Tracker) Buffered() int { return len(t.blocks) }

// recompute picks the pending block: the newest-started block whose parent
// is the canonical head.
func (t *Tracker) recompute() {
	t.cur = nil
	if !t.hasHead {
		return
	}
	for _, b := range t.blocks {
		if b.number == t.head.Number+1 && b.parent == t.head.Hash && (t.cur == nil || b.seq > t.cur.seq) {
			t.cur = b
		}
	}
}

// bound keeps the buffer small when no head is known yet (or the head is
// far behind): the oldest-started blocks go first.
func (t *Tracker) bound() {
	limit := int(t.ahead) + 2
	for len(t.blocks) > limit {
		var oldest *block
		for _, b := range t.blocks {
			if oldest == nil || b.seq < oldest.seq {
				oldest = b
			}
		}
		t.forget(oldest)
	}
}

func isPrefix(pre, full []common.Hash) bool {
	if len(pre) > len(full) {
		return false
	}
	for i := range pre {
		if pre[i] != full[i] {
			return false
		}
	}
	return true
}
