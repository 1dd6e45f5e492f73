package feed

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/preconf/preconf/flashblock"
)

// sample is a flashblock message of block 100 (the wire format's fields are
// package flashblock's tests' business).
const sample = `{"payload_id": "0x0a0a0a0a0a0a0a0a", "index": 0, "base": {"block_number": "0x64", "base_fee_per_gas": "0x1"}, "diff": {"transactions": []}}`

// TestClientFramesAndReconnect serves one JSON text frame, one brotli binary
// frame and one garbage frame per connection, then drops the connection; the
// client must decode both encodings, count the garbage, and reconnect.
func TestClientFramesAndReconnect(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		conns.Add(1)
		ctx := r.Context()
		c.Write(ctx, websocket.MessageText, []byte(sample))
		c.Write(ctx, websocket.MessageBinary, flashblock.Compress([]byte(strings.Replace(sample, `"index": 0`, `"index": 0 `, 1))))
		c.Write(ctx, websocket.MessageBinary, []byte{1, 2, 3})
		c.Close(websocket.StatusGoingAway, "bye")
	}))
	defer srv.Close()

	m := new(Metrics)
	cl := &Client{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Metrics: m}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan Received, 100)
	var connected atomic.Int32
	done := make(chan error, 1)
	go func() { done <- cl.Run(ctx, func(r Received) { got <- r }, func() { connected.Add(1) }) }()

	for i := range 4 {
		select {
		case r := <-got:
			if r.FB.Number() != 100 || r.At.IsZero() {
				t.Fatalf("frame %d: %+v", i, r)
			}
		case <-ctx.Done():
			t.Fatalf("only %d frames delivered", i)
		}
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("Run returned nil after cancel")
	}
	if m.Connects.Load() < 2 || connected.Load() < 2 {
		t.Fatalf("connects %d, callbacks %d: no reconnect", m.Connects.Load(), connected.Load())
	}
	if m.Brotli.Load() < 2 || m.Get(Invalid) < 1 {
		t.Fatalf("metrics %v", m.Snapshot())
	}
	if ok, lastErr := cl.Status(); ok || lastErr == nil {
		t.Fatalf("status after stop: connected=%v err=%v", ok, lastErr)
	}
}

// TestClientBackoffWhenFeedDown checks that a dead feed is retried with a
// growing wait and reports a clear error.
func TestClientBackoffWhenFeedDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	srv.Close() // nothing listens any more

	cl := &Client{URL: url, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { cl.Run(ctx, func(Received) {}, nil); close(done) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := cl.Status(); err != nil {
			if !strings.Contains(err.Error(), "dial "+url) {
				t.Fatalf("unclear error: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no error reported for a dead feed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
}

// countingHandler counts log records by message.
type countingHandler struct {
	mu   sync.Mutex
	msgs map[string]int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	if h.msgs == nil {
		h.msgs = make(map[string]int)
	}
	h.msgs[r.Message]++
	h.mu.Unlock()
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

func (h *countingHandler) count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.msgs[msg]
}

// A feed that freezes silently (no close, no frame, no pong: the anchor is
// op-reth nodes whose pending block stayed frozen for days on a half-open
// connection) is dropped after an unanswered ping and reconnected at once;
// the loss is logged once. Garbage frames are logged once per run of them.
func TestClientFreezeIsDetected(t *testing.T) {
	var conns atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		n := conns.Add(1)
		ctx := r.Context()
		for range 3 {
			c.Write(ctx, websocket.MessageBinary, []byte{1, 2, 3})
		}
		c.Write(ctx, websocket.MessageText, []byte(sample))
		if n == 1 {
			// Frozen: nothing is read, so no pong is sent, and nothing is written.
			select {
			case <-release:
			case <-ctx.Done():
			}
			return
		}
		c.CloseRead(ctx)
		<-ctx.Done()
	}))
	defer srv.Close()
	defer close(release)

	logs := new(countingHandler)
	m := new(Metrics)
	cl := &Client{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), PingInterval: 50 * time.Millisecond, Metrics: m, Logger: slog.New(logs)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan Received, 100)
	done := make(chan error, 1)
	go func() { done <- cl.Run(ctx, func(r Received) { got <- r }, nil) }()
	for i := range 2 {
		select {
		case <-got:
		case <-ctx.Done():
			t.Fatalf("frame %d not delivered: the freeze was not detected (connections %d, metrics %v)", i, conns.Load(), m.Snapshot())
		}
	}
	cancel()
	<-done
	if m.Freezes.Load() != 1 || m.Reconnects.Load() != 1 {
		t.Fatalf("metrics %v", m.Snapshot())
	}
	if n := logs.count("flashblocks feed connection lost; reconnecting"); n != 1 {
		t.Fatalf("loss logged %d times", n)
	}
	if n := logs.count("invalid flashblocks frame; further ones are counted (invalid) until a valid one"); n != 2 {
		t.Fatalf("invalid frames logged %d times for two runs of three", n)
	}
	if m.Get(Invalid) != 6 {
		t.Fatalf("invalid frames counted: %d", m.Get(Invalid))
	}
}

// Refused reconnects (the anchor: a reset followed by seconds of refused
// reconnects left pending stale for 3.2 s after the feed was back, with a
// backoff of 1, 2, 4 s) are retried at most MaxBackoff apart and logged
// once; the feed is used again as soon as it accepts.
func TestClientRefusedReconnects(t *testing.T) {
	var refuse atomic.Bool
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		served.Add(1)
		c.Write(r.Context(), websocket.MessageText, []byte(sample))
		if served.Load() == 1 {
			refuse.Store(true)
			return // reset: no closing handshake
		}
		c.CloseRead(r.Context())
		<-r.Context().Done()
	}))
	defer srv.Close()

	logs := new(countingHandler)
	m := new(Metrics)
	cl := &Client{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), MinBackoff: 2 * time.Millisecond, MaxBackoff: 10 * time.Millisecond, Metrics: m, Logger: slog.New(logs)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan Received, 100)
	done := make(chan error, 1)
	go func() { done <- cl.Run(ctx, func(r Received) { got <- r }, nil) }()
	<-got
	for m.DialFailures.Load() < 20 {
		if ctx.Err() != nil {
			t.Fatalf("only %d attempts", m.DialFailures.Load())
		}
		time.Sleep(time.Millisecond)
	}
	refuse.Store(false)
	select {
	case <-got:
	case <-ctx.Done():
		t.Fatal("no frame after the feed accepted again")
	}
	cancel()
	<-done
	if n := logs.count("flashblocks feed connection lost; reconnecting") + logs.count("flashblocks feed still down; retrying quietly"); n != 2 {
		t.Fatalf("outage logged %d times, want the loss and the first failed retry: %v", n, logs.msgs)
	}
	if logs.count("flashblocks feed back") != 1 || m.Reconnects.Load() != 1 {
		t.Fatalf("recovery not logged once: %v, metrics %v", logs.msgs, m.Snapshot())
	}
}

// Resync reconnects at once, without logging a loss.
func TestClientResync(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		conns.Add(1)
		c.Write(r.Context(), websocket.MessageText, []byte(sample))
		c.CloseRead(r.Context())
		<-r.Context().Done()
	}))
	defer srv.Close()
	logs := new(countingHandler)
	m := new(Metrics)
	cl := &Client{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), Metrics: m, Logger: slog.New(logs)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := make(chan Received, 10)
	done := make(chan error, 1)
	go func() { done <- cl.Run(ctx, func(r Received) { got <- r }, nil) }()
	<-got
	cl.Resync()
	select {
	case <-got:
	case <-ctx.Done():
		t.Fatal("no frame after a resync")
	}
	cancel()
	<-done
	if conns.Load() != 2 || m.Resyncs.Load() != 1 || logs.count("flashblocks feed connection lost; reconnecting") != 0 {
		t.Fatalf("connections %d, metrics %v, logs %v", conns.Load(), m.Snapshot(), logs.msgs)
	}
}
