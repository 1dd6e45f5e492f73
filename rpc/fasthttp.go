package rpc

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/preconf/preconf/internal/arrival"
)

// The fast HTTP path. Profiles of the read workloads showed net/http's
// per-request machinery (request and header maps, the response writer's
// buffering, the background read that watches for a closed connection, the
// extra goroutine hand-offs) costing more CPU than decoding, dispatching and
// answering the call. The fast path answers the overwhelmingly common request —
// a keep-alive "POST / HTTP/1.1" with a Content-Length JSON body — directly
// on the connection, and hands every other connection (GET, websocket
// upgrades, CORS, chunked bodies, oversized bodies, odd headers, HTTP/1.0…)
// unread to a regular http.Server, so every behaviour other than speed stays
// net/http's. Answers are byte-for-byte those of HTTPHandler.

// serveFast serves cl's connections until srv is shut down: fast-path
// requests are answered here, every other connection is handed to srv.
// srv.Shutdown or srv.Close also stops the fast path: cl is closed, idle
// connections are closed, and busy ones close after their current answer
// (Server.Drain waits for those).
func (t *HTTPTransport) serveFast(cl *connListener, table *connTable, srv *http.Server) error {
	s, opts := t.srv, t.opts
	f := &fastServer{rpc: s, opts: opts, policy: t.policy, ln: cl, table: table, conns: make(map[*fastConn]struct{}),
		done: make(chan struct{}), handoff: &chanListener{addr: cl.Addr(), ch: make(chan net.Conn), done: make(chan struct{})}}
	// Shutdown does not cancel requests in flight: they finish (Drain,
	// whose abort reaches them through the watcher, see watch).
	f.ctx = s.withLimits(WithTransport(context.Background(), "http"))
	f.order = arrival.New(runtime.GOMAXPROCS(0), opts.IdleTimeout/4)
	f.orderFrom = int64(2 * runtime.GOMAXPROCS(0))
	f.handoff.onClose = f.shutdown
	go srv.Serve(f.handoff) // returns when srv shuts down (it closes the listener)
	for {
		c, err := cl.Accept()
		if err != nil { // only once closed
			if f.closing.Load() {
				return http.ErrServerClosed
			}
			f.shutdown()
			return err
		}
		cc := c.(*countedConn)
		if cc.slot.healthOnly {
			// Past the cap for a health check: net/http answers it (track).
			f.handoff.give(cc)
			continue
		}
		fc := &fastConn{srv: f, c: cc, raw: cc.Conn, slot: cc.slot}
		if !f.track(fc, true) {
			cc.Close()
			return http.ErrServerClosed
		}
		go fc.serve()
	}
}

type fastServer struct {
	rpc     *Server
	opts    HTTPOptions
	policy  *requestPolicy
	ln      net.Listener
	handoff *chanListener
	table   *connTable
	order   *arrival.Order // nil: connections wait in the netpoller
	// orderFrom is the number of open connections above which they are
	// woken in arrival order (see ordered).
	orderFrom int64
	ctx       context.Context
	closing   atomic.Bool
	done      chan struct{} // closed at shutdown

	mu    sync.Mutex
	conns map[*fastConn]struct{}
}

// track adds or removes a connection; adding fails once closing.
func (f *fastServer) track(c *fastConn, add bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !add {
		delete(f.conns, c)
		return true
	}
	if f.closing.Load() {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

// shutdown stops accepting and closes idle connections.
func (f *fastServer) shutdown() {
	if f.closing.Swap(true) {
		return
	}
	close(f.done)
	f.order.Close()
	f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		if !c.busy.Load() {
			c.c.Close()
		}
	}
	f.mu.Unlock()
	f.handoff.Close()
}

// bufConn is a connection whose first bytes were already buffered.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *bufConn) connSlot() *connSlot { return slotOf(c.Conn) }

// chanListener hands connections to an http.Server.
type chanListener struct {
	addr    net.Addr
	ch      chan net.Conn
	once    sync.Once
	done    chan struct{}
	onClose func()
}

// give passes c on; false (and c closed) when the listener is closed.
func (l *chanListener) give(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		c.Close()
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close is called by the http.Server on Shutdown and on Close; either stops
// the fast path too.
func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	if l.onClose != nil {
		l.onClose()
	}
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }
