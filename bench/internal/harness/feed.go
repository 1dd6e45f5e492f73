package harness

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/preconf/preconf/flashblock"
)

// FeedWatcher records when each flashblock arrives on a /flashblocks feed.
type FeedWatcher struct {
	conn *websocket.Conn
	mu   sync.Mutex
	seen map[string]FeedMsg
	done chan struct{}
}

type FeedMsg struct {
	At    time.Time
	Txs   int
	Index uint64 // the flashblock's index in its block
}

func WatchFeed(addr string) (*FeedWatcher, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws://"+addr+"/flashblocks", nil)
	if err != nil {
		return nil, fmt.Errorf("feed of %s: %w", addr, err)
	}
	conn.SetReadLimit(64 << 20)
	w := &FeedWatcher{conn: conn, seen: make(map[string]FeedMsg), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			at := time.Now()
			fb, err := flashblock.Decode(data)
			if err != nil {
				continue
			}
			w.mu.Lock()
			w.seen[fb.PayloadID.String()+"/"+strconv.FormatUint(fb.Index, 10)] = FeedMsg{At: at, Txs: SentTxs(fb.Diff.Transactions), Index: fb.Index}
			w.mu.Unlock()
		}
	}()
	return w, nil
}

// SentTxs counts a flashblock's transactions other than OP-stack deposits
// (type 0x7e), which the node adds itself (the L1-attributes deposit in each
// block's flashblock 0) and nobody sent.
func SentTxs(txs []hexutil.Bytes) int {
	n := 0
	for _, raw := range txs {
		if len(raw) == 0 || raw[0] != types.DepositTxType {
			n++
		}
	}
	return n
}

func (w *FeedWatcher) Snapshot() map[string]FeedMsg {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]FeedMsg, len(w.seen))
	for k, v := range w.seen {
		out[k] = v
	}
	return out
}

func (w *FeedWatcher) Close() { w.conn.CloseNow(); <-w.done }

// WatchFeeds watches the feeds of a sequencer and of its follower; stop
// closes both.
func WatchFeeds(seq, fol string) (seqFeed, folFeed *FeedWatcher, stop func(), err error) {
	if seqFeed, err = WatchFeed(seq); err != nil {
		return nil, nil, nil, err
	}
	if folFeed, err = WatchFeed(fol); err != nil {
		seqFeed.Close()
		return nil, nil, nil, err
	}
	return seqFeed, folFeed, func() { seqFeed.Close(); folFeed.Close() }, nil
}
