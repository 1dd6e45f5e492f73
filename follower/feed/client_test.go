package feed

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

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
		c.Write(ctx, websocket.MessageBinary, Compress([]byte(strings.Replace(sample, `"index": 0`, `"index": 0 `, 1))))
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
