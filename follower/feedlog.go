package follower

import (
	"log/slog"
	"time"

	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/follower/feed"
)

// feedLog logs what the sequencing rules did with the feed's messages
// once per episode, not once per message: a gap once per block, a run of
// messages of unknown blocks, of stale replays or of blocks too far ahead
// once when it starts and once when the next accepted flashblock ends it.
// Every message is counted anyway (follower_status, /metrics). Loop only.
type feedLog struct {
	log     *slog.Logger
	gapped  flashblock.PayloadID // the last block whose gap was logged
	gaps    bool
	unknown feed.Episode
	stale   feed.Episode
	tooFar  feed.Episode
}

var feedEpisodes = []struct {
	outcome feed.Outcome
	start   string
}{
	{feed.Unknown, "flashblocks of a block whose first flashblock was not received; ignored until the next block"},
	{feed.Stale, "flashblocks of blocks already left behind (replays of earlier messages); ignored"},
	{feed.TooFar, "flashblocks too far ahead of the upstream's head; ignored"},
}

func (l *feedLog) episode(o feed.Outcome) *feed.Episode {
	switch o {
	case feed.Unknown:
		return &l.unknown
	case feed.Stale:
		return &l.stale
	case feed.TooFar:
		return &l.tooFar
	}
	return nil
}

// note logs fb's outcome if it starts or ends an episode.
func (l *feedLog) note(fb *flashblock.Message, o feed.Outcome, held int) {
	switch o {
	case feed.Gap:
		if !l.gaps || l.gapped != fb.PayloadID {
			l.gaps, l.gapped = true, fb.PayloadID
			l.log.Warn("flashblock missing: the block's later flashblocks are held until it arrives, its earlier ones stay pending",
				"payload", fb.PayloadID, "got_index", fb.Index, "held", held)
		}
	case feed.Accepted:
		for _, e := range feedEpisodes {
			if ok, lasted, n := l.episode(e.outcome).End(); ok {
				l.log.Info("flashblocks feed in sequence again", "after", e.outcome.String(), "messages", n, "for", lasted.Round(time.Millisecond))
			}
		}
	default:
		for _, e := range feedEpisodes {
			if e.outcome == o && l.episode(o).Begin() {
				l.log.Warn(e.start, "payload", fb.PayloadID, "index", fb.Index, "number", fb.Number())
			}
		}
	}
}
