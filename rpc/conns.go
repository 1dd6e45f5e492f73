package rpc

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Connection defaults (HTTPOptions), after net/http's, geth's and reth's.
const (
	// DefaultMaxConnections caps open connections, HTTP and websocket
	// together (reth's --rpc.max-connections is 500).
	DefaultMaxConnections = 500
	// DefaultReadHeaderTimeout bounds the arrival of a request's head.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds the arrival of a whole request, head and
	// body (geth's HTTP read timeout).
	DefaultReadTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection waiting this long
	// for its next request.
	DefaultIdleTimeout = 120 * time.Second
	// writeMargin is added to the request deadline for net/http's write
	// timeout, which runs from the request's arrival through the answer.
	writeMargin = 10 * time.Second
)

// DefaultWriteTimeout bounds the writing of one answer on the fast path.
const DefaultWriteTimeout = 30 * time.Second

// connLimiter counts open connections and refuses those over the cap.
type connLimiter struct {
	max  int64
	open atomic.Int64
	m    *Metrics
}

// admit wraps c to be counted until it is closed; false (c untouched) when
// the cap is reached.
func (l *connLimiter) admit(c net.Conn) (net.Conn, bool) {
	if l.open.Add(1) > l.max {
		l.open.Add(-1)
		l.m.rejected.Inc()
		return c, false
	}
	l.m.conns.Inc()
	l.m.connsTotal.Inc()
	return &countedConn{Conn: c, l: l}, true
}

// countedConn releases its slot once, on the first Close (whoever ends
// up owning it: the fast path, net/http or a websocket).
type countedConn struct {
	net.Conn
	l    *connLimiter
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.open.Add(-1)
		c.l.m.conns.Dec()
	})
	return c.Conn.Close()
}

// busyResponse answers a connection over the cap before it is closed.
const busyResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Connection: close\r\nRetry-After: 1\r\nContent-Length: 25\r\n\r\ntoo many open connections"

func refuse(c net.Conn) {
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	c.Write([]byte(busyResponse)) // a fresh socket's buffer takes it at once
	c.Close()
}

// acceptBackoff is net/http's: after a failed accept (too many open files,
// a connection aborted before accept, …) wait 5 ms, doubling up to 1 s, and
// try again. Accepting never stops for an error other than a closed
// listener, so running out of descriptors degrades service instead of
// ending it.
type acceptBackoff struct {
	delay time.Duration
	last  time.Time // last log line, to log at most once a second
}

// wait sleeps before the next try (or returns early when done closes).
func (b *acceptBackoff) wait(err error, log *slog.Logger, m *Metrics, done <-chan struct{}) {
	m.acceptErrs.Inc()
	if b.delay == 0 {
		b.delay = 5 * time.Millisecond
	} else {
		b.delay = min(2*b.delay, time.Second)
	}
	if time.Since(b.last) >= time.Second {
		b.last = time.Now()
		log.Warn("accept failed; retrying", "err", err, "retry_in", b.delay)
	}
	t := time.NewTimer(b.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-done:
	}
}

func (b *acceptBackoff) reset() { b.delay = 0 }

func isClosed(err error) bool { return errors.Is(err, net.ErrClosed) }
