package feed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Received is one decoded flashblock and when its frame was read.
type Received struct {
	FB *Flashblock
	At time.Time
}

// Client keeps a websocket connection to a flashblocks feed: it pings the
// feed, decodes every frame, and reconnects with a growing backoff when the
// connection is lost.
type Client struct {
	URL string
	// MinBackoff and MaxBackoff bound the wait before reconnecting (defaults
	// 1 s and 10 s, as Base's node does); the wait doubles per failure and
	// resets once a frame has been received.
	MinBackoff, MaxBackoff time.Duration
	// PingInterval is how often the feed is pinged (default 10 s); a feed
	// that does not answer within it is considered dead.
	PingInterval time.Duration
	// ReadLimit caps one frame (default 32 MiB).
	ReadLimit int64
	Metrics   *Metrics
	Logger    *slog.Logger

	mu        sync.Mutex
	connected bool
	changed   time.Time // when connected last changed (zero: never connected)
	lastErr   error
}

// Status reports whether the feed is connected and the last connection error.
func (c *Client) Status() (connected bool, lastErr error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.connected, c.lastErr
}

// Since is when the connection state (Status) last changed; zero before
// the first connection.
func (c *Client) Since() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

func (c *Client) setStatus(connected bool, err error) {
	c.mu.Lock()
	if connected != c.connected {
		c.changed = time.Now()
	}
	c.connected = connected
	if err != nil {
		c.lastErr = err
	}
	c.mu.Unlock()
}

func (c *Client) defaults() {
	if c.MinBackoff <= 0 {
		c.MinBackoff = time.Second
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = max(10*time.Second, c.MinBackoff)
	}
	if c.PingInterval <= 0 {
		c.PingInterval = 10 * time.Second
	}
	if c.ReadLimit <= 0 {
		c.ReadLimit = 32 << 20
	}
	if c.Metrics == nil {
		c.Metrics = new(Metrics)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Run connects and delivers each decoded flashblock to deliver (called from
// Run's goroutine, in frame order; connected is called after each successful
// connection, so the consumer can forget a half-seen block). It returns when
// ctx ends.
func (c *Client) Run(ctx context.Context, deliver func(Received), connected func()) error {
	c.defaults()
	backoff := c.MinBackoff
	for {
		got, err := c.session(ctx, deliver, connected)
		c.setStatus(false, err)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if got {
			backoff = c.MinBackoff
		}
		c.Logger.Warn("flashblocks feed disconnected", "url", c.URL, "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, c.MaxBackoff)
	}
}

// session runs one connection until it fails; got reports whether any frame
// was received (which resets the backoff).
func (c *Client) session(ctx context.Context, deliver func(Received), connected func()) (got bool, err error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, _, err := websocket.Dial(dctx, c.URL, nil)
	cancel()
	if err != nil {
		return false, fmt.Errorf("dial %s: %w", c.URL, err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(c.ReadLimit)
	c.Metrics.Connects.Add(1)
	defer c.Metrics.Disconnect.Add(1)
	c.setStatus(true, nil)
	c.Logger.Info("flashblocks feed connected", "url", c.URL)
	if connected != nil {
		connected()
	}

	sctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go c.pinger(sctx, stop, conn)

	for {
		typ, data, err := conn.Read(sctx)
		if err != nil {
			if cause := context.Cause(sctx); cause != nil && !errors.Is(cause, context.Canceled) {
				return got, cause
			}
			return got, fmt.Errorf("read: %w", err)
		}
		at := time.Now()
		got = true
		c.Metrics.Frames.Add(1)
		c.Metrics.Bytes.Add(uint64(len(data)))
		if typ == websocket.MessageBinary {
			c.Metrics.Brotli.Add(1)
		}
		fb, err := Decode(data)
		if err != nil {
			c.Metrics.Count(Invalid)
			c.Logger.Debug("bad flashblock frame", "err", err, "bytes", len(data))
			continue
		}
		fb.Received = at
		deliver(Received{FB: fb, At: at})
	}
}

var errPingTimeout = errors.New("feed did not answer a ping in time")

func (c *Client) pinger(ctx context.Context, stop context.CancelCauseFunc, conn *websocket.Conn) {
	t := time.NewTicker(c.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, c.PingInterval)
		err := conn.Ping(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			stop(fmt.Errorf("%w: %v", errPingTimeout, err))
			return
		}
	}
}
