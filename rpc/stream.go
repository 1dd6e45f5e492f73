package rpc

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// StreamOptions bound one websocket's outgoing queue. Zero values take the
// defaults below.
type StreamOptions struct {
	// QueueLen caps the messages waiting to be written (default 4096).
	QueueLen int
	// QueueBytes caps the bytes waiting to be written (default 32 MiB).
	QueueBytes int64
	// WriteTimeout bounds one write to the peer (default 10 s).
	WriteTimeout time.Duration
	// PingInterval is how often the peer is pinged (default 30 s); a peer
	// that does not answer within the interval is disconnected.
	PingInterval time.Duration
	// Origins lists the browser origins allowed to connect ("*": any).
	// Requests without an Origin header (non-browser clients) and same-host
	// origins are always allowed.
	Origins []string
	Logger  *slog.Logger
	// Metrics counts slow consumers dropped (nil: not counted).
	Metrics *Metrics
}

func (o *StreamOptions) defaults() {
	if o.QueueLen <= 0 {
		o.QueueLen = 4096
	}
	if o.QueueBytes <= 0 {
		o.QueueBytes = 32 << 20
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// ErrSlowConsumer is the reason a stream is dropped when its queue is full.
var ErrSlowConsumer = errors.New("subscriber too slow: outgoing queue full")

// Stream is an accepted websocket with a bounded outgoing queue, written by
// its own goroutine. Send never blocks: a peer that falls behind its queue's
// bounds is disconnected (close code 1008), so a slow reader can never slow
// the publisher.
//
// ctx is the stream's life as its users see it; the connection's reads and
// writes run under contexts of their own, because the websocket library
// drops a connection without a close frame when an operation's context is
// cancelled. Closing is the writer's job: it sends what is queued (unless
// the peer was too slow), then the close frame.
type Stream struct {
	conn   *websocket.Conn
	opts   StreamOptions
	ctx    context.Context
	cancel context.CancelCauseFunc
	once   sync.Once
	closed chan struct{} // the close frame has been sent (or the connection failed)
	// slot is the connection's place under the cap (nil: not admitted by a
	// table); held: the upgrade request's hold on it, which the stream
	// keeps (a feed is never idle) unless it gives it up (Idle).
	slot *connSlot
	held bool

	// The queue grows with use (an idle connection holds no buffer) and is
	// bounded by QueueLen and QueueBytes; the writer swaps it out whole.
	mu     sync.Mutex
	queue  []outMsg
	spare  []outMsg
	queued int64         // bytes in queue and being written
	wake   chan struct{} // capacity 1: the queue is not empty
}

// outMsg is one queued message: data, or (for a large shared payload) parts
// written as one fragmented message, so the payload is never copied per peer.
type outMsg struct {
	typ   websocket.MessageType
	data  []byte
	parts [][]byte
}

func (m *outMsg) size() int64 {
	n := len(m.data)
	for _, p := range m.parts {
		n += len(p)
	}
	return int64(n)
}

// IsWebSocketUpgrade reports whether r asks to switch to the websocket protocol.
func IsWebSocketUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet &&
		headerHasToken(r.Header, "Connection", "upgrade") &&
		headerHasToken(r.Header, "Upgrade", "websocket")
}

func headerHasToken(h http.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// AcceptStream upgrades an HTTP request to a websocket and starts its writer.
// On failure an HTTP error has already been written. The stream ends when
// ctx ends, the peer goes away, Close is called, or the peer is too slow.
func AcceptStream(ctx context.Context, w http.ResponseWriter, r *http.Request, opts StreamOptions) (*Stream, error) {
	opts.defaults()
	aopts := &websocket.AcceptOptions{}
	for _, o := range opts.Origins {
		if o == "*" {
			aopts.InsecureSkipVerify = true
			continue
		}
		aopts.OriginPatterns = append(aopts.OriginPatterns, strings.TrimRight(o, "/"))
	}
	// net/http's read and write deadlines stay on a hijacked connection:
	// a websocket lives longer than one request (pings catch dead peers).
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	c, err := websocket.Accept(w, r, aopts)
	if err != nil {
		return nil, err
	}
	s := &Stream{conn: c, opts: opts, wake: make(chan struct{}, 1), closed: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancelCause(ctx)
	// net/http's request marked the connection in use (track), from this
	// goroutine; evicted, it is closed with its close frame.
	if s.slot = slotFromContext(r.Context()); s.slot != nil {
		s.held = s.slot.httpHeld
		s.slot.setEvict(func() { s.Close(errEvicted) })
	}
	go s.writeLoop()
	go s.pingLoop()
	return s, nil
}

// Idle gives up the stream's hold on its connection's place under the cap:
// from now on it is idle, and may be closed to make room, whenever nothing
// holds it (a call in flight, a subscription; see JSON-RPC's wsConn).
func (s *Stream) Idle() {
	if s.held {
		s.held = false
		s.slot.end(time.Now())
	}
}

// Conn is the underlying websocket (for reading).
func (s *Stream) Conn() *websocket.Conn { return s.conn }

// Context ends when the stream does.
func (s *Stream) Context() context.Context { return s.ctx }

// Done is closed when the stream ends.
func (s *Stream) Done() <-chan struct{} { return s.ctx.Done() }

// Err says why the stream ended (nil while it runs).
func (s *Stream) Err() error {
	if s.ctx.Err() == nil {
		return nil
	}
	return context.Cause(s.ctx)
}

// SendText queues a text message; see Send.
func (s *Stream) SendText(msg []byte) bool { return s.Send(websocket.MessageText, msg) }

// Send queues a message without blocking. It reports false when the stream
// has ended or the queue is full, in which case the stream is dropped. msg
// must not be modified afterwards (it may be shared between streams).
func (s *Stream) Send(typ websocket.MessageType, msg []byte) bool {
	return s.send(outMsg{typ: typ, data: msg})
}

// SendParts queues one message made of parts (written in order, as one
// fragmented websocket message); like Send otherwise. The parts must not be
// modified afterwards.
func (s *Stream) SendParts(typ websocket.MessageType, parts ...[]byte) bool {
	return s.send(outMsg{typ: typ, parts: parts})
}

func (s *Stream) send(m outMsg) bool {
	if s.ctx.Err() != nil {
		return false
	}
	n := m.size()
	s.mu.Lock()
	if len(s.queue) >= s.opts.QueueLen || s.queued+n > s.opts.QueueBytes {
		s.mu.Unlock()
		s.Close(ErrSlowConsumer)
		return false
	}
	s.queue = append(s.queue, m)
	s.queued += n
	s.mu.Unlock()
	wake(s.wake)
	return true
}

// Close ends the stream with a reason (nil: a normal close). It does not
// block: the writer sends what is queued and then the close frame (1000;
// 1001 at shutdown), or at once 1008 for a slow consumer, whose queue is
// dropped.
func (s *Stream) Close(reason error) {
	s.once.Do(func() {
		if reason == nil {
			reason = errStreamClosed
		}
		if errors.Is(reason, ErrSlowConsumer) {
			s.opts.Logger.Debug("websocket subscriber dropped", "reason", reason)
			if s.opts.Metrics != nil {
				s.opts.Metrics.slowDropped.Inc()
			}
			s.mu.Lock()
			s.queue, s.queued = nil, 0
			s.mu.Unlock()
		}
		s.cancel(reason)
	})
}

// Closed is closed once the close frame has been sent (or the connection
// failed): the stream has finished writing.
func (s *Stream) Closed() <-chan struct{} { return s.closed }

var (
	errStreamClosed = errors.New("stream closed")
	errShutdown     = errors.New("server shutting down")
	errEvicted      = errors.New("idle connection closed to make room")
)

// closeFrame sends the close frame for the stream's reason, bounded by the
// library's own close timeouts.
func (s *Stream) closeFrame() {
	defer close(s.closed)
	reason := context.Cause(s.ctx)
	code, text := websocket.StatusNormalClosure, ""
	switch {
	case errors.Is(reason, ErrSlowConsumer):
		code, text = websocket.StatusPolicyViolation, "too slow"
	case errors.Is(reason, errShutdown):
		code, text = websocket.StatusGoingAway, "server shutting down"
	case errors.Is(reason, errEvicted):
		code, text = websocket.StatusTryAgainLater, errEvicted.Error()
	}
	s.conn.Close(code, text)
}

func (s *Stream) writeLoop() {
	defer s.closeFrame()
	for {
		select {
		case <-s.ctx.Done():
		case <-s.wake:
		}
		s.mu.Lock()
		batch := s.queue
		s.queue, s.spare = s.spare[:0], nil
		s.mu.Unlock()
		if len(batch) == 0 && s.ctx.Err() != nil {
			return // closed and everything queued is written
		}
		for i := range batch {
			m := &batch[i]
			if errors.Is(context.Cause(s.ctx), ErrSlowConsumer) {
				break
			}
			wctx, cancel := context.WithTimeout(context.Background(), s.opts.WriteTimeout)
			err := s.write(wctx, m)
			cancel()
			if err != nil {
				s.Close(err)
				return
			}
			s.mu.Lock()
			s.queued -= m.size()
			s.mu.Unlock()
			*m = outMsg{} // let the payload go
		}
		s.mu.Lock()
		if cap(batch) <= 2*s.opts.QueueLen && cap(batch) <= 1024 {
			s.spare = batch[:0] // reuse a modest buffer; drop a large one
		}
		s.mu.Unlock()
	}
}

func (s *Stream) write(ctx context.Context, m *outMsg) error {
	if m.parts == nil {
		return s.conn.Write(ctx, m.typ, m.data)
	}
	w, err := s.conn.Writer(ctx, m.typ)
	if err != nil {
		return err
	}
	for _, p := range m.parts {
		if _, err := w.Write(p); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

func (s *Stream) pingLoop() {
	t := time.NewTicker(s.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			pctx, cancel := context.WithTimeout(context.Background(), s.opts.PingInterval)
			err := s.conn.Ping(pctx)
			cancel()
			if err != nil {
				s.Close(err)
				return
			}
		}
	}
}
