// Package feed is the follower's flashblocks client: it reads the feed's
// frames (decoded by package flashblock), keeps a websocket connection alive
// with pings and reconnects with backoff, and applies the sequencing rules
// that decide which flashblocks make up the pending block (Tracker).
package feed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/preconf/preconf/flashblock"
)

// Received is one decoded flashblock and when its frame was read.
type Received struct {
	FB *flashblock.Message
	At time.Time
}

// Client defaults.
const (
	// DefaultPingInterval is how often the feed is pinged, as Base's node
	// does: a feed that froze silently (a half-open TCP connection, no close,
	// no pong) is dropped within two intervals.
	DefaultPingInterval = 500 * time.Millisecond
	// DefaultMaxBackoff caps the wait between reconnection attempts: a feed
	// that comes back is seen again within about one flashblock interval
	// (a refused dial costs one TCP handshake).
	DefaultMaxBackoff = 200 * time.Millisecond
	// DefaultMinBackoff is the wait after the first failed attempt (the
	// first attempt after a lost connection is immediate).
	DefaultMinBackoff = 20 * time.Millisecond
	// DefaultReadLimit caps one frame, the same as MaxMessage caps one
	// message once decompressed. Base's node refuses flashblocks over
	// 5 MiB decoded. A larger frame is read up to the limit before it is
	// refused (the websocket library reads, then counts), so the limit is
	// also what each oversized frame costs in transient memory: with 32 MiB,
	// a thousand mixed faults (ten 33 MiB frames) grew a follower's RSS
	// from 147 to 352 MiB (tests/faults TestFaultSoak), against a flat
	// 182-208 MiB without them.
	DefaultReadLimit = flashblock.MaxMessage
)

// Client keeps a websocket connection to a flashblocks feed: it pings the
// feed, decodes every frame, and reconnects when the connection is lost or
// stops answering. Connection trouble is logged once per episode (lost,
// then back with how long it took), not once per attempt or frame.
type Client struct {
	URL string
	// MinBackoff and MaxBackoff bound the wait between reconnection attempts
	// (defaults DefaultMinBackoff, DefaultMaxBackoff): the first attempt
	// after a lost connection is immediate, then the wait doubles, with up
	// to 50 % random jitter so that replicas do not retry in step.
	MinBackoff, MaxBackoff time.Duration
	// PingInterval is how often the feed is pinged (default
	// DefaultPingInterval); a ping unanswered within it, while no frame
	// arrives either, ends the connection.
	PingInterval time.Duration
	// ReadLimit caps one frame (default DefaultReadLimit); a larger frame
	// ends the connection (the feed is then reconnected).
	ReadLimit int64
	Metrics   *Metrics
	Logger    *slog.Logger

	mu        sync.Mutex
	connected bool
	changed   time.Time // when connected last changed (zero: never connected)
	lastErr   error

	stop      context.CancelCauseFunc // ends the current connection (nil: none)
	lastFrame atomic.Int64            // Unix ns of the last frame read (0: none yet)
	invalid   Episode                 // undecodable frames in a row
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

// LastFrame is when the last frame was read (zero before the first).
func (c *Client) LastFrame() time.Time {
	if ns := c.lastFrame.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
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
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	c.MaxBackoff = max(c.MaxBackoff, c.MinBackoff)
	if c.PingInterval <= 0 {
		c.PingInterval = DefaultPingInterval
	}
	if c.ReadLimit <= 0 {
		c.ReadLimit = DefaultReadLimit
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
	var o outage
	for {
		got, err := c.session(ctx, deliver, connected, func() { o.up(c) })
		c.setStatus(false, err)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if wait := o.lost(c, err, got); wait > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
	}
}

// outage is Run's reconnection state: when the feed was lost, how many
// attempts failed since, and the current backoff. A connection counts as
// up once it delivers a frame (a feed that accepts and hangs up at once is
// still down).
type outage struct {
	ever     bool          // a connection delivered frames at least once
	down     time.Time     // when the feed was lost (zero: up)
	attempts int           // failed attempts since down
	backoff  time.Duration // the last wait's base
}

// up: a connection delivered its first frame.
func (o *outage) up(c *Client) {
	switch {
	case !o.ever:
		c.Logger.Info("flashblocks feed connected", "url", c.URL)
	case !o.down.IsZero():
		c.Metrics.Reconnects.Add(1)
		c.Logger.Info("flashblocks feed back", "url", c.URL, "down_for", time.Since(o.down).Round(time.Millisecond), "failed_attempts", o.attempts)
	}
	o.ever, o.down, o.attempts, o.backoff = true, time.Time{}, 0, 0
}

// lost: a connection (or an attempt) ended with err; got says whether it
// delivered frames. It logs the first failure of an outage and returns the
// wait before the next attempt: none right after a working connection,
// then MinBackoff doubling to MaxBackoff, with jitter.
func (o *outage) lost(c *Client, err error, got bool) time.Duration {
	if errors.Is(err, ErrFrozen) {
		c.Metrics.Freezes.Add(1)
	}
	if errors.Is(err, errResync) {
		c.Metrics.Resyncs.Add(1)
		c.Logger.Info("flashblocks feed reconnecting to replay the block after a gap", "url", c.URL)
		return 0
	}
	if got {
		o.down = time.Now()
		c.Logger.Warn("flashblocks feed connection lost; reconnecting", "url", c.URL, "err", err)
		return 0
	}
	c.Metrics.DialFailures.Add(1)
	if o.down.IsZero() {
		o.down = time.Now()
	}
	if o.attempts == 0 && !o.ever {
		c.Logger.Warn("flashblocks feed unreachable; retrying", "url", c.URL, "err", err, "retry_every_max", c.MaxBackoff)
	} else if o.attempts == 0 {
		c.Logger.Warn("flashblocks feed still down; retrying quietly", "url", c.URL, "err", err, "retry_every_max", c.MaxBackoff)
	}
	o.attempts++
	o.backoff = min(max(2*o.backoff, c.MinBackoff), c.MaxBackoff)
	return o.backoff/2 + rand.N(o.backoff/2+1)
}

// errResync ends a connection on purpose (Resync).
var errResync = errors.New("reconnecting to have the feed replay the block")

// Resync ends the current connection and reconnects at once, so that a feed
// which replays the current block on connect (a preconf node's
// ?replay=block) fills a gap in it.
func (c *Client) Resync() {
	c.mu.Lock()
	stop := c.stop
	c.mu.Unlock()
	if stop != nil {
		stop(errResync)
	}
}

// ErrFrozen is a connection that stopped answering pings while no frame
// arrived: a silent freeze (half-open TCP, a stuck proxy).
var ErrFrozen = errors.New("feed froze: no frame and no pong")

// session runs one connection until it fails; got reports whether any frame
// was received (firstFrame is called at the first).
func (c *Client) session(ctx context.Context, deliver func(Received), connected, firstFrame func()) (got bool, err error) {
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
	if connected != nil {
		connected()
	}

	sctx, stop := context.WithCancelCause(ctx)
	c.mu.Lock()
	c.stop = stop
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.stop = nil
		c.mu.Unlock()
		stop(nil)
	}()
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
		c.lastFrame.Store(at.UnixNano())
		if !got {
			got = true
			firstFrame()
		}
		c.Metrics.Frames.Add(1)
		c.Metrics.Bytes.Add(uint64(len(data)))
		if typ == websocket.MessageBinary {
			c.Metrics.Brotli.Add(1)
		}
		fb, err := flashblock.Decode(data)
		if err != nil {
			c.Metrics.Count(Invalid)
			if c.invalid.Begin() {
				c.Logger.Warn("invalid flashblocks frame; further ones are counted (invalid) until a valid one", "url", c.URL, "err", err, "bytes", len(data))
			}
			continue
		}
		if ok, lasted, n := c.invalid.End(); ok {
			c.Logger.Info("flashblocks feed valid again", "url", c.URL, "invalid_frames", n, "for", lasted.Round(time.Millisecond))
		}
		fb.Received = at
		deliver(Received{FB: fb, At: at})
	}
}

// pinger pings every PingInterval; a ping unanswered within the interval
// ends the connection unless a frame arrived meanwhile (a pong can queue
// behind a burst of frames, which prove the connection alive anyway).
func (c *Client) pinger(ctx context.Context, stop context.CancelCauseFunc, conn *websocket.Conn) {
	t := time.NewTicker(c.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sent := time.Now()
		pctx, cancel := context.WithTimeout(ctx, c.PingInterval)
		err := conn.Ping(pctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			continue
		}
		if last := c.LastFrame(); last.After(sent) {
			continue
		}
		stop(fmt.Errorf("%w within %v: %v", ErrFrozen, c.PingInterval, err))
		return
	}
}
