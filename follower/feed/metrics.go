package feed

import "sync/atomic"

// Outcome is what became of one feed event.
type Outcome int

// Outcomes of a flashblock.
const (
	Accepted  Outcome = iota // extends or starts the pending block
	Buffered                 // kept for a block ahead of the canonical head
	Duplicate                // already seen; ignored
	Gap                      // an index was skipped: the block is dropped until the next index 0
	Unknown                  // a non-zero index for a block whose index 0 was not seen
	Stale                    // for a block the canonical chain already covers
	TooFar                   // too many blocks ahead of the canonical head
	Invalid                  // undecodable frame or malformed message
	numFlashblockOutcomes
)

// Outcomes of a canonical head.
const (
	HeadNew       Outcome = iota + numFlashblockOutcomes // a new head, nothing pending covered
	CaughtUp                                             // the sealed block covers what was pending
	Reorg                                                // the sealed block differs from what was pre-confirmed
	HeadUnchanged                                        // the same head again
	numOutcomes
)

var outcomeNames = [numOutcomes]string{
	Accepted: "accepted", Buffered: "buffered", Duplicate: "duplicate", Gap: "gap",
	Unknown: "unknown", Stale: "stale", TooFar: "too_far", Invalid: "invalid",
	HeadNew: "head_new", CaughtUp: "caught_up", Reorg: "reorg", HeadUnchanged: "head_unchanged",
}

func (o Outcome) String() string {
	if o >= 0 && o < numOutcomes {
		return outcomeNames[o]
	}
	return "outcome?"
}

// Metrics counts outcomes and connection events. Safe for concurrent use.
type Metrics struct {
	outcomes   [numOutcomes]atomic.Uint64
	Connects   atomic.Uint64 // successful websocket connections
	Disconnect atomic.Uint64 // connections lost (any reason)
	Frames     atomic.Uint64 // frames read
	Bytes      atomic.Uint64 // frame bytes read
	Brotli     atomic.Uint64 // binary (brotli) frames
	// Reconnects are connections after the first; Freezes connections
	// dropped because the feed answered neither with a frame nor a pong;
	// DialFailures failed connection attempts; Resyncs connections ended
	// on purpose to have the feed replay the block after a gap.
	Reconnects, Freezes, DialFailures, Resyncs atomic.Uint64
}

// Count records one outcome.
func (m *Metrics) Count(o Outcome) {
	if m != nil && o >= 0 && o < numOutcomes {
		m.outcomes[o].Add(1)
	}
}

// Get is the count of one outcome.
func (m *Metrics) Get(o Outcome) uint64 { return m.outcomes[o].Load() }

// Snapshot returns every counter by name.
func (m *Metrics) Snapshot() map[string]uint64 {
	out := make(map[string]uint64, numOutcomes+8)
	for o := Outcome(0); o < numOutcomes; o++ {
		out[o.String()] = m.outcomes[o].Load()
	}
	out["connects"] = m.Connects.Load()
	out["disconnects"] = m.Disconnect.Load()
	out["frames"] = m.Frames.Load()
	out["frame_bytes"] = m.Bytes.Load()
	out["brotli_frames"] = m.Brotli.Load()
	out["reconnects"] = m.Reconnects.Load()
	out["freezes"] = m.Freezes.Load()
	out["dial_failures"] = m.DialFailures.Load()
	out["resyncs"] = m.Resyncs.Load()
	return out
}

// Outcomes lists every outcome, in order.
func Outcomes() []Outcome {
	out := make([]Outcome, numOutcomes)
	for i := range out {
		out[i] = Outcome(i)
	}
	return out
}
