// Package feed serves the flashblocks feed: a websocket on which every
// published pending snapshot is streamed as one message in the wire format
// of package flashblock (see docs/streaming.md), so Base-compatible
// consumers can follow this node.
package feed

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"

	"github.com/coder/websocket"

	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
)

// Buffer is how many snapshots may wait for the feed's encoder before the
// pending source skips them for it.
const Buffer = 4096

// Feed streams every published snapshot to its websocket clients. One
// goroutine encodes each flashblock once; each client has its own bounded
// queue and is dropped when it falls behind, so the sequencer and the other
// clients never wait for it. A client joining mid-block may ask for the
// block's earlier flashblocks first, so it can follow from its first message.
type Feed struct {
	src  *pending.Source
	opts rpc.StreamOptions
	log  *slog.Logger

	mu      sync.Mutex
	clients map[*client]struct{}
	closed  bool
	// history holds the current block's messages so far (from index 0), so
	// that a client joining mid-block can follow at once.
	history   [][]byte
	historyID [8]byte

	stop    chan struct{}
	wg      sync.WaitGroup
	started bool

	// last published position, for gap reports (encoder goroutine only)
	lastID    [8]byte
	lastIndex uint64
	seen      bool
}

type client struct {
	st     *rpc.Stream
	brotli bool
}

// New returns a feed of src's snapshots; Start runs it.
func New(src *pending.Source, opts rpc.StreamOptions) *Feed {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Feed{src: src, opts: opts, log: opts.Logger, clients: make(map[*client]struct{}), stop: make(chan struct{})}
}

// Start follows the pending source until Close.
func (f *Feed) Start() {
	if f.started {
		return
	}
	f.started = true
	snaps, cancel := f.src.Subscribe(Buffer)
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		defer cancel()
		for {
			select {
			case snap := <-snaps:
				if snap != nil && snap.Header != nil {
					f.safePublish(snap)
				}
			case <-f.stop:
				return
			}
		}
	}()
}

// Close stops the feed and disconnects every client.
func (f *Feed) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	clients := f.clients
	f.clients = nil
	f.mu.Unlock()
	close(f.stop)
	f.wg.Wait()
	for c := range clients {
		c.st.Close(nil)
	}
	return nil
}

// Clients is the number of connected clients.
func (f *Feed) Clients() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.clients)
}

// safePublish is publish that logs a panic (a malformed snapshot) and
// skips that flashblock rather than taking the node down.
func (f *Feed) safePublish(snap *pending.Snapshot) {
	defer func() {
		if r := recover(); r != nil {
			f.log.Error("flashblocks feed: publish failed", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	f.publish(snap)
}

// publish encodes one flashblock and queues it for every client.
func (f *Feed) publish(snap *pending.Snapshot) {
	if f.seen && snap.PayloadID == f.lastID && snap.Index > f.lastIndex+1 {
		f.log.Warn("flashblocks feed: gap in indexes", "payload", snap.PayloadID, "after", f.lastIndex, "got", snap.Index)
	}
	f.seen, f.lastID, f.lastIndex = true, snap.PayloadID, snap.Index
	msg, err := flashblock.EncodeSnapshot(snap)
	if err != nil {
		f.log.Error("flashblocks feed: encode", "err", err)
		return
	}
	// Record and take the client list in one step: a client registering
	// concurrently gets this message either in its replay or from here,
	// never both, never neither.
	f.mu.Lock()
	if snap.Index == 0 || snap.PayloadID != f.historyID {
		f.history, f.historyID = nil, snap.PayloadID
	}
	f.history = append(f.history, msg)
	clients := make([]*client, 0, len(f.clients))
	for c := range f.clients {
		clients = append(clients, c)
	}
	f.mu.Unlock()
	var compressed []byte
	for _, c := range clients {
		if !c.brotli {
			c.st.SendText(msg)
			continue
		}
		if compressed == nil {
			compressed = flashblock.Compress(msg)
		}
		c.st.Send(websocket.MessageBinary, compressed)
	}
}

// ServeHTTP accepts a websocket client (GET with Upgrade). ?compress=brotli
// selects brotli-compressed JSON in binary frames; the default is JSON text.
// ?replay=block first sends the current block's flashblocks so far (from
// index 0), then every new one; by default a client gets the flashblocks
// published after it connected, as from Base's builders.
func (f *Feed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !rpc.IsWebSocketUpgrade(r) {
		w.Header().Set("Allow", "GET")
		http.Error(w, "the flashblocks feed is a websocket: connect with Upgrade: websocket", http.StatusBadRequest)
		return
	}
	useBrotli := false
	switch r.URL.Query().Get("compress") {
	case "", "none":
	case "brotli":
		useBrotli = true
	default:
		http.Error(w, "unknown compress value: use brotli or none", http.StatusBadRequest)
		return
	}
	replay := false
	switch r.URL.Query().Get("replay") {
	case "", "none":
	case "block":
		replay = true
	default:
		http.Error(w, "unknown replay value: use block or none", http.StatusBadRequest)
		return
	}
	st, err := rpc.AcceptStream(context.Background(), w, r, f.opts)
	if err != nil {
		return
	}
	c := &client{st: st, brotli: useBrotli}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		st.Close(nil)
		return
	}
	for _, msg := range f.history { // the current block so far, then live
		if !replay {
			break
		}
		if useBrotli {
			st.Send(websocket.MessageBinary, flashblock.Compress(msg))
		} else {
			st.SendText(msg)
		}
	}
	f.clients[c] = struct{}{}
	f.mu.Unlock()
	// Read to answer pings and notice the peer leaving; the feed expects no
	// data from clients.
	<-st.Conn().CloseRead(st.Context()).Done()
	st.Close(nil)
	f.mu.Lock()
	delete(f.clients, c)
	f.mu.Unlock()
}
