package rpc

import (
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
	// DefaultReadHeaderTimeout bounds the arrival of a request's head: a
	// new connection's first head counts from the accept, as net/http's
	// ReadHeaderTimeout does, so a connection that sends nothing is closed
	// after it. Clients send their request as soon as they connect
	// (browsers that preconnect a socket and leave it unused drop it
	// themselves after 10 s, and retry on a fresh one when it was closed).
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
	// healthReserve is how many loopback connections may be open past the
	// cap, when no connection is idle, for health checks (see connTable).
	healthReserve = 8
)

// DefaultWriteTimeout bounds the writing of one answer on the fast path.
const DefaultWriteTimeout = 30 * time.Second

// connTable admits connections under the cap. A silent or idle connection
// must not lock the others out, so at the cap a new connection takes the
// place of the longest-idle one (closed for it), and is refused (503) only
// when every open connection is in use: answering a request, or a
// websocket with a call in flight, a live subscription or a feed stream.
// A connection from a loopback address is then still let in, over the cap
// into a small reserve, to ask a health path (HTTPOptions.HealthPaths) and
// nothing else: probes from the machine itself always get through.
//
// Every connection is counted from its accept until its first Close (or
// its eviction), whichever path owns it then: the fast path, net/http, a
// websocket.
type connTable struct {
	max     int
	reserve int
	m       *Metrics
	open    atomic.Int64 // len(main)+len(spare), read without the lock

	mu    sync.Mutex
	main  []*connSlot
	spare []*connSlot // health-only, past the cap
}

func newConnTable(max int, m *Metrics) *connTable {
	return &connTable{max: max, reserve: healthReserve, m: m}
}

// The values of connSlot.active besides counts.
const evicted = -1

// connSlot is one admitted connection's place in the table.
type connSlot struct {
	t   *connTable
	raw net.Conn // the accepted socket
	// healthOnly: admitted into the reserve, for a health path only.
	healthOnly bool
	// active counts what keeps the connection in use: the request being
	// answered (HTTP), calls in flight and subscriptions (websocket), a
	// stream (the feed). At 0 the connection is idle since idleSince
	// (UnixNano); evicted once it was closed to make room.
	active    atomic.Int32
	idleSince atomic.Int64
	// httpHeld: net/http's request holds the slot (ConnState; only the
	// connection's own goroutine touches it).
	httpHeld bool

	// Under t.mu.
	index    int    // in its list
	released bool   // no longer counted
	evict    func() // closes it (nil: shut its reading side; see evictConn)
}

// admit places a connection accepted at now, evicting an idle one at the
// cap; nil when it is refused.
func (t *connTable) admit(c net.Conn, now time.Time) *connSlot {
	s := &connSlot{t: t, raw: c}
	s.idleSince.Store(now.UnixNano())
	t.mu.Lock()
	list := &t.main
	var victim *connSlot
	if len(t.main) >= t.max {
		victim = t.takeIdle(t.main)
		if victim == nil {
			if !isLoopback(c.RemoteAddr()) {
				t.mu.Unlock()
				t.m.rejected.Inc()
				return nil
			}
			s.healthOnly, list = true, &t.spare
			if len(t.spare) >= t.reserve {
				if victim = t.takeIdle(t.spare); victim == nil {
					t.mu.Unlock()
					t.m.rejected.Inc()
					return nil
				}
			}
		}
	}
	var evict func()
	if victim != nil {
		evict = victim.evict
		t.removeLocked(victim)
		t.m.evicted.Inc()
	}
	s.index = len(*list)
	*list = append(*list, s)
	t.open.Add(1)
	t.mu.Unlock()
	t.m.conns.Inc()
	t.m.connsTotal.Inc()
	if victim != nil {
		evictConn(victim.raw, evict)
	}
	return s
}

// takeIdle marks the longest-idle connection of list evicted and returns
// it (nil: none is idle). t.mu held.
func (t *connTable) takeIdle(list []*connSlot) *connSlot {
	for {
		var oldest *connSlot
		var since int64
		for _, s := range list {
			if s.active.Load() == 0 {
				if at := s.idleSince.Load(); oldest == nil || at < since {
					oldest, since = s, at
				}
			}
		}
		if oldest == nil || oldest.active.CompareAndSwap(0, evicted) {
			return oldest
		}
		// It became busy meanwhile: look again.
	}
}

// removeLocked takes s out of its list and the count. t.mu held.
func (t *connTable) removeLocked(s *connSlot) {
	s.released = true
	list := &t.main
	if s.healthOnly {
		list = &t.spare
	}
	last := len(*list) - 1
	(*list)[s.index] = (*list)[last]
	(*list)[s.index].index = s.index
	(*list)[last] = nil
	*list = (*list)[:last]
	t.open.Add(-1)
	t.m.conns.Dec()
}

// release frees s's place (once; eviction may have freed it already).
func (s *connSlot) release() {
	if s == nil {
		return
	}
	t := s.t
	t.mu.Lock()
	if !s.released {
		t.removeLocked(s)
	}
	t.mu.Unlock()
}

// setEvict replaces how s is closed when evicted (a websocket sends its
// close frame).
func (s *connSlot) setEvict(f func()) {
	if s == nil {
		return
	}
	s.t.mu.Lock()
	s.evict = f
	s.t.mu.Unlock()
}

// begin marks s in use (a request, a call, a subscription); false once it
// was evicted. A nil slot (a connection not admitted by a table) is always
// in use.
func (s *connSlot) begin() bool {
	if s == nil {
		return true
	}
	for {
		a := s.active.Load()
		if a == evicted {
			return false
		}
		if s.active.CompareAndSwap(a, a+1) {
			return true
		}
	}
}

// end undoes a begin that succeeded, at now.
func (s *connSlot) end(now time.Time) {
	if s == nil {
		return
	}
	s.idleSince.Store(now.UnixNano())
	s.active.Add(-1)
}

// isEvicted reports whether s was closed to make room.
func (s *connSlot) isEvicted() bool { return s != nil && s.active.Load() == evicted }

// evictConn closes an evicted connection: by its owner's function, or by
// shutting the socket's reading side, so that whoever reads it (the fast
// path, net/http) sees EOF and closes it itself. Closing it from here
// would race with its owner: the fast path's arrival order knows sockets
// by number, which a close frees for reuse.
func evictConn(raw net.Conn, evict func()) {
	if evict != nil {
		evict()
		return
	}
	if cr, ok := raw.(interface{ CloseRead() error }); ok && cr.CloseRead() == nil {
		return
	}
	raw.Close()
}

func isLoopback(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true // on this machine by construction
	}
	return false
}

// countedConn is an admitted connection: its first Close frees its place.
type countedConn struct {
	net.Conn
	slot *connSlot
}

func (c *countedConn) Close() error {
	c.slot.release()
	return c.Conn.Close()
}

func (c *countedConn) connSlot() *connSlot { return c.slot }

// slotted is a connection that knows its place (countedConn, and the
// fast path's hand-offs wrapping one).
type slotted interface{ connSlot() *connSlot }

// slotOf is c's place, nil if it was not admitted by a table.
func slotOf(c net.Conn) *connSlot {
	if s, ok := c.(slotted); ok {
		return s.connSlot()
	}
	return nil
}

// busyResponse answers a connection refused at the cap before it is closed.
const busyResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Connection: close\r\nRetry-After: 1\r\nContent-Length: 25\r\n\r\ntoo many open connections"

func refuse(c net.Conn) {
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	c.Write([]byte(busyResponse)) // a fresh socket's buffer takes it at once
	c.Close()
}
