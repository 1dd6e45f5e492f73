package feed

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/big"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
)

// snapshot is flashblock index of block 100 carrying extra bytes of
// random extra data (the wire format's fields are package flashblock's tests'
// business; here messages need only differ in index and size).
func snapshot(index uint64, extra int) *pending.Snapshot {
	b := make([]byte, extra)
	rand.NewChaCha8([32]byte{1}).Read(b) // incompressible, as transactions are
	h := &types.Header{Number: big.NewInt(100), Difficulty: new(big.Int), BaseFee: big.NewInt(1), Extra: b}
	return &pending.Snapshot{Header: h, Index: index, PayloadID: [8]byte{0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a}}
}

func startFeed(t *testing.T, opts rpc.StreamOptions) (*Feed, *pending.Source, string) {
	t.Helper()
	src := new(pending.Source)
	f := New(src, opts)
	f.Start()
	hs := httptest.NewServer(f)
	t.Cleanup(func() { f.Close(); hs.Close() })
	return f, src, "ws" + strings.TrimPrefix(hs.URL, "http")
}

func dialFeed(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func waitClients(t *testing.T, f *Feed, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for f.Clients() != n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := f.Clients(); got != n {
		t.Fatalf("%d clients, want %d", got, n)
	}
}

func readFrame(t *testing.T, c *websocket.Conn) (websocket.MessageType, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	typ, data, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return typ, data
}

// Every flashblock reaches every client in order, as JSON text or as brotli
// binary frames holding the same bytes.
func TestFeedStreamsEveryFlashblock(t *testing.T) {
	f, src, url := startFeed(t, rpc.StreamOptions{})
	plain, compressed := dialFeed(t, url), dialFeed(t, url+"?compress=brotli")
	waitClients(t, f, 2)
	const n = 50
	var want [][]byte
	for i := range n {
		snap := snapshot(uint64(i), 0)
		msg, err := flashblock.EncodeSnapshot(snap)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, msg)
		src.Publish(snap)
	}
	for i := range n {
		typ, data := readFrame(t, plain)
		if typ != websocket.MessageText || !bytes.Equal(data, want[i]) {
			t.Fatalf("plain message %d differs (type %v)", i, typ)
		}
		typ, data = readFrame(t, compressed)
		if typ != websocket.MessageBinary {
			t.Fatalf("brotli message %d: type %v", i, typ)
		}
		dec, err := io.ReadAll(brotli.NewReader(bytes.NewReader(data)))
		if err != nil || !bytes.Equal(dec, want[i]) {
			t.Fatalf("brotli message %d does not decompress to the JSON: %v", i, err)
		}
	}
}

// A client that never reads is dropped; the others keep every message.
func TestFeedDropsSlowClient(t *testing.T) {
	f, src, url := startFeed(t, rpc.StreamOptions{QueueLen: 256, QueueBytes: 4 << 20})
	slow, fast := dialFeed(t, url), dialFeed(t, url)
	_ = slow
	waitClients(t, f, 2)
	snap := snapshot(0, 30<<10) // ~60 KiB messages (extra data is in index 0's base)
	const n = 300               // ~18 MiB in all: beyond loopback socket buffers plus the 4 MiB queue
	go func() {
		for range n {
			src.Publish(snap)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	for i := range n {
		if _, data := readFrame(t, fast); len(data) < 1000 {
			t.Fatalf("message %d too short", i)
		}
	}
	waitClients(t, f, 1)
}

func TestFeedRejectsPlainHTTP(t *testing.T) {
	f := New(new(pending.Source), rpc.StreamOptions{})
	w := httptest.NewRecorder()
	f.ServeHTTP(w, httptest.NewRequest("GET", "/flashblocks", nil))
	if w.Code != 400 {
		t.Fatalf("status %d", w.Code)
	}
}

func (f *Feed) historyLen() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.history)
}

func waitHistory(t *testing.T, f *Feed, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for f.historyLen() != n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := f.historyLen(); got != n {
		t.Fatalf("history holds %d messages, want %d", got, n)
	}
}

func indexOf(t *testing.T, data []byte) (string, uint64) {
	t.Helper()
	var m struct {
		PayloadID string `json:"payload_id"`
		Index     uint64 `json:"index"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m.PayloadID, m.Index
}

// A client joining mid-block with ?replay=block first gets the block's
// flashblocks from index 0, then the live ones; a new block starts the
// history afresh. Without it, a client gets only what comes after it.
func TestFeedReplaysCurrentBlock(t *testing.T) {
	f, src, url := startFeed(t, rpc.StreamOptions{})
	for i := range 3 {
		snap := snapshot(uint64(i), 0)
		src.Publish(snap)
	}
	waitHistory(t, f, 3)
	c := dialFeed(t, url+"?replay=block")
	live := dialFeed(t, url)
	waitClients(t, f, 2)
	snap := snapshot(3, 0)
	src.Publish(snap)
	_, first := readFrame(t, live)
	if _, i := indexOf(t, first); i != 3 {
		t.Fatalf("a client without replay got index %d first", i)
	}
	for want := range uint64(4) {
		_, data := readFrame(t, c)
		if _, i := indexOf(t, data); i != want {
			t.Fatalf("message %d has index %d", want, i)
		}
	}

	next := snapshot(0, 0)
	next.PayloadID[0] = 0x0b
	src.Publish(next)
	_, data := readFrame(t, c)
	if id, i := indexOf(t, data); id != "0x0b0a0a0a0a0a0a0a" || i != 0 {
		t.Fatalf("next block: payload %s index %d", id, i)
	}
	waitHistory(t, f, 1)
	late := dialFeed(t, url+"?compress=brotli&replay=block")
	typ, data := readFrame(t, late)
	plain, err := io.ReadAll(brotli.NewReader(bytes.NewReader(data)))
	if err != nil || typ != websocket.MessageBinary {
		t.Fatalf("replay to a brotli client: %v %v", typ, err)
	}
	if id, i := indexOf(t, plain); id != "0x0b0a0a0a0a0a0a0a" || i != 0 {
		t.Fatalf("late client's first message: payload %s index %d", id, i)
	}
}

// A malformed snapshot is skipped (and logged); the feed goes on.
func TestFeedSurvivesMalformedSnapshot(t *testing.T) {
	f, src, url := startFeed(t, rpc.StreamOptions{})
	c := dialFeed(t, url)
	waitClients(t, f, 1)
	bad := snapshot(1, 0)
	bad.Header.Number = nil
	src.Publish(bad)
	good := snapshot(2, 0)
	src.Publish(good)
	_, data := readFrame(t, c)
	if _, i := indexOf(t, data); i != 2 {
		t.Fatalf("first message has index %d, want the good snapshot's 2", i)
	}
}
