package rpc

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// connListener accepts connections and admits them under the cap
// (connTable): it returns only admitted ones, as *countedConn, and answers
// the refused ones 503 itself. Accept errors never stop it (acceptBackoff);
// it returns an error only once the listener is closed.
type connListener struct {
	net.Listener
	table *connTable
	log   *slog.Logger
	m     *Metrics
	once  sync.Once
	done  chan struct{} // closed by Close
	// backoff is Accept's (called from one goroutine).
	backoff acceptBackoff
}

func newConnListener(ln net.Listener, table *connTable, log *slog.Logger, m *Metrics) *connListener {
	return &connListener{Listener: ln, table: table, log: log, m: m, done: make(chan struct{})}
}

func (l *connListener) Accept() (net.Conn, error) {
	backoff := &l.backoff
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if isClosed(err) {
				return nil, err
			}
			select {
			case <-l.done:
				return nil, net.ErrClosed
			default:
			}
			backoff.wait(err, l.log, l.m, l.done)
			continue
		}
		backoff.reset()
		s := l.table.admit(c, time.Now())
		if s == nil {
			refuse(c)
			continue
		}
		return &countedConn{Conn: c, slot: s}, nil
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// slotKey carries a connection's place in its requests' contexts (the
// websocket handler marks it in use while it streams).
type slotKey struct{}

func slotFromContext(ctx context.Context) *connSlot {
	s, _ := ctx.Value(slotKey{}).(*connSlot)
	return s
}

// track makes srv report its connections' use to their places in the
// table (ServeFast and Serve call it before serving): a request read and
// being answered holds the place, an idle keep-alive connection does not;
// a hijacked one (a websocket) is the websocket's to report. It also
// limits a connection admitted for health checks (connTable) to the
// health paths.
func track(srv *http.Server, opts HTTPOptions) {
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if s := slotOf(c); s != nil {
			return context.WithValue(ctx, slotKey{}, s)
		}
		return ctx
	}
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		s := slotOf(c)
		if s == nil {
			return
		}
		switch st {
		case http.StateActive:
			// Evicted meanwhile: its reading side is shut, and net/http
			// closes it after this answer.
			s.httpHeld = s.begin()
		case http.StateIdle:
			if s.httpHeld {
				s.httpHeld = false
				s.end(time.Now())
			}
		}
	}
	next := srv.Handler
	paths := opts.HealthPaths
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := slotFromContext(r.Context()); s != nil && s.healthOnly &&
			!(slices.Contains(paths, r.URL.Path) && (r.Method == http.MethodGet || r.Method == http.MethodHead)) {
			w.Header().Set("Connection", "close")
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many open connections", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
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
