package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// WSOptions configure JSON-RPC over websocket.
type WSOptions struct {
	StreamOptions
	// MaxMessage limits one incoming message in bytes (default DefaultMaxBody).
	MaxMessage int64
	// Parallel caps the calls of one connection answered at once (default 16).
	Parallel int
	// MaxSubscriptions caps one connection's live subscriptions (default
	// DefaultMaxSubscriptions).
	MaxSubscriptions int
}

// DefaultMaxSubscriptions is WSOptions.MaxSubscriptions's default (and
// --ws.max-subscriptions's).
const DefaultMaxSubscriptions = 1000

// WSHandler serves JSON-RPC over websocket: every text or binary message is a
// request or a batch, answered on the same connection; eth_subscribe-style
// handlers find a Notifier in their context. Close disconnects everyone.
type WSHandler struct {
	srv  *Server
	opts WSOptions

	mu     sync.Mutex
	conns  map[*Stream]struct{}
	closed bool
}

// WSHandler returns the websocket transport of s.
func (s *Server) WSHandler(opts WSOptions) *WSHandler {
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = DefaultMaxBody
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 16
	}
	if opts.MaxSubscriptions <= 0 {
		opts.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if opts.Logger == nil {
		opts.Logger = s.log
	}
	if opts.Metrics == nil {
		opts.Metrics = s.metrics
	}
	return &WSHandler{srv: s, opts: opts, conns: make(map[*Stream]struct{})}
}

// ServeHTTP upgrades the request and serves the connection until it ends.
func (h *WSHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The connection outlives nothing but itself: do not tie it to the
	// request's context, which net/http cancels on shutdown of the handler.
	st, err := AcceptStream(context.Background(), w, r, h.opts.StreamOptions)
	if err != nil {
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		st.Close(errShutdown)
		return
	}
	h.conns[st] = struct{}{}
	h.mu.Unlock()
	m := h.srv.metrics
	m.wsConns.Inc()
	defer func() {
		m.wsConns.Dec()
		h.mu.Lock()
		delete(h.conns, st)
		h.mu.Unlock()
	}()
	c := &wsConn{srv: h.srv, st: st, subs: make(map[string]*Subscription), maxSubs: h.opts.MaxSubscriptions}
	c.serve(h.opts)
}

// Conns is the number of open connections.
func (h *WSHandler) Conns() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// closeWait bounds how long Close waits for connections to send what they
// have queued and their close frame.
const closeWait = 5 * time.Second

// Close disconnects every connection (close code 1001 after the answers
// already queued) and refuses new ones; it waits a little for the close
// frames to go out.
func (h *WSHandler) Close() error {
	h.mu.Lock()
	h.closed = true
	conns := make([]*Stream, 0, len(h.conns))
	for st := range h.conns {
		conns = append(conns, st)
	}
	h.mu.Unlock()
	for _, st := range conns {
		st.Close(errShutdown)
	}
	deadline := time.NewTimer(closeWait)
	defer deadline.Stop()
	for _, st := range conns {
		select {
		case <-st.Closed():
		case <-deadline.C:
			return nil
		}
	}
	return nil
}

// wsConn is one JSON-RPC websocket connection and its subscriptions.
type wsConn struct {
	srv     *Server
	st      *Stream
	maxSubs int

	mu     sync.Mutex
	subs   map[string]*Subscription
	closed bool
}

func (c *wsConn) serve(opts WSOptions) {
	defer c.closeSubs()
	c.st.conn.SetReadLimit(opts.MaxMessage)
	// Idle between messages, unless a call or a subscription holds it.
	c.st.Idle()
	sem := make(chan struct{}, opts.Parallel)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		_, msg, err := c.st.conn.Read(context.Background()) // ends when the connection does
		if err != nil {
			c.st.Close(err)
			return
		}
		if !c.st.slot.begin() {
			return // closed to make room: the close frame is on its way
		}
		select {
		case sem <- struct{}{}:
		case <-c.st.Done():
			c.st.slot.end(time.Now())
			return
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; c.st.slot.end(time.Now()); wg.Done() }()
			c.handle(msg)
		}()
	}
}

// handle answers one message. Subscriptions created by the call start
// delivering only after the answer (holding their id) is queued.
func (c *wsConn) handle(msg []byte) {
	n := &Notifier{conn: c}
	ctx := context.WithValue(WithTransport(c.st.ctx, "ws"), notifierKey{}, n)
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer putBuffer(buf)
	// At the deadline the answer is sent from the deadline's goroutine
	// (lateGate); this call's slot stays taken until the handler returns.
	if !c.srv.handleBy(ctx, msg, buf, func(late []byte) {
		if len(late) > 0 {
			c.st.SendText(bytes.Clone(late))
		}
	}) {
		n.discard() // the client never learnt their ids
		return
	}
	if buf.Len() > 0 {
		c.st.SendText(cloneBytes(buf))
	}
	n.activate()
}

var errConnClosed = errors.New("connection closed")

// add registers a subscription.
func (c *wsConn) add(s *Subscription) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errConnClosed
	}
	if len(c.subs) >= c.maxSubs {
		return &LimitExceededError{Msg: fmt.Sprintf("too many subscriptions on this connection (limit %d)", c.maxSubs)}
	}
	if !c.st.slot.begin() { // a subscription keeps the connection in use
		return errConnClosed
	}
	c.subs[s.id] = s
	c.srv.metrics.wsSubs.Inc()
	return nil
}

// remove ends the subscription with the id; false when there is none.
func (c *wsConn) remove(id string) bool {
	c.mu.Lock()
	s, ok := c.subs[id]
	delete(c.subs, id)
	c.mu.Unlock()
	if ok {
		c.st.slot.end(time.Now())
		c.srv.metrics.wsSubs.Dec()
		s.end()
	}
	return ok
}

func (c *wsConn) closeSubs() {
	c.mu.Lock()
	c.closed = true
	subs := c.subs
	c.subs = nil
	c.mu.Unlock()
	c.srv.metrics.wsSubs.Sub(float64(len(subs)))
	now := time.Now()
	for _, s := range subs {
		c.st.slot.end(now)
		s.end()
	}
}

// wake signals ch (buffered, one slot) unless a signal is already pending:
// the receiver looks at the whole state when it wakes, so one is enough.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
