// Package rpc is the JSON-RPC 2.0 layer: the envelope, the method table,
// typed errors with codes, limits, and the HTTP transport. It knows nothing of
// the chain: methods are plain functions registered by other packages.
package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/preconf/preconf/internal/jsonscan"
)

// Handler answers one method call. The result is encoded with encoding/json,
// except json.RawMessage, which is written verbatim (precomputed answers),
// and an Appender, which writes itself.
type Handler func(ctx context.Context, params Params) (any, error)

// Appender is a result that appends its own JSON (valid and compact) to b
// and returns the extended slice: a large answer built by hand is written
// straight into the response buffer rather than into a buffer of its own
// that is then copied (eth_simulateV1: one allocation of the answer's size
// less per request). Other consumers see it through its MarshalJSON, which
// it must also have.
type Appender interface {
	json.Marshaler
	AppendJSON(b []byte) []byte
}

// Options are the server's limits.
type Options struct {
	// BatchLimit caps the number of requests in one batch (default 1000).
	BatchLimit int
	// MaxResponseSize caps the bytes of one answer, a single call's or a
	// whole batch's (default DefaultMaxResponseSize; NoResponseCap: none).
	MaxResponseSize int
	// Timeout is a message's deadline (default DefaultTimeout; NoTimeout:
	// none): its context ends then, and a call that fails past it is
	// answered -32002 "request timed out".
	Timeout time.Duration
	// Namespaces lists the method namespaces served (the part of a name
	// before its first '_': eth, debug, …); methods of others are never
	// registered, nor answered by a fallback. Nil: all. The server knows no
	// namespace of its own: the application's are those it registers
	// (Namespaces reports them).
	Namespaces []string
	// Throttled methods run at most MaxThrottled at a time (default 2);
	// further calls wait for a slot within their deadline.
	Throttled    []string
	MaxThrottled int
	// Metrics receives the request metrics (nil: kept unregistered).
	Metrics *Metrics
	Logger  *slog.Logger
}

// Server dispatches JSON-RPC messages to registered handlers. Register all
// methods before serving; the table is read without locks afterwards.
type Server struct {
	methods map[string]*method
	// namespaces are those of every method offered to Register, served or
	// filtered out (Namespaces).
	namespaces map[string]bool
	opts       Options
	log        *slog.Logger
	metrics    *Metrics
	limits     requestLimits
	throttle   throttle
	unknown    *methodMetrics
	// fallback answers methods not registered (SetFallback).
	fallback  func(method string) Handler
	forwarded *methodMetrics
	inflight  atomic.Int64
	// draining: Drain has begun and no call starts any more (see Drain).
	draining atomic.Bool
	// base ends when in-flight requests outlast Drain; the fast path's
	// watcher cancels its requests with it (see fastConn.watch).
	base  context.Context
	abort context.CancelFunc
}

// method is a registered handler with its metrics.
type method struct {
	h         Handler
	m         *methodMetrics
	throttled bool
}

// NewServer returns an empty server.
func NewServer(opts Options) *Server {
	if opts.BatchLimit <= 0 {
		opts.BatchLimit = 1000
	}
	if opts.MaxResponseSize <= 0 {
		opts.MaxResponseSize = DefaultMaxResponseSize
	}
	switch {
	case opts.Timeout <= 0:
		opts.Timeout = DefaultTimeout
	case opts.Timeout == NoTimeout:
		opts.Timeout = 0 // from here on, no deadline: no timer is armed (Timeout > 0 tests)
	}
	if opts.MaxThrottled <= 0 {
		opts.MaxThrottled = 2
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	s := &Server{methods: make(map[string]*method), namespaces: make(map[string]bool), opts: opts, log: opts.Logger, metrics: opts.Metrics,
		throttle: make(throttle, opts.MaxThrottled)}
	if opts.MaxResponseSize != NoResponseCap {
		s.limits.maxResponse = opts.MaxResponseSize
	}
	s.unknown = s.metrics.forMethod("unknown")
	s.base, s.abort = context.WithCancel(context.Background())
	return s
}

// Metrics are the server's metrics (shared with its transports).
func (s *Server) Metrics() *Metrics { return s.metrics }

// InFlight is the number of messages being answered.
func (s *Server) InFlight() int { return int(s.inflight.Load()) }

// Drain waits until no message is being answered (and, on the fast path,
// its answer written). If ctx ends first, the requests still running are
// cancelled and an error says how many there were.
//
// From its start every call not yet started is answered ErrShuttingDown
// instead of run, whatever its transport (a websocket message, a request
// the fast path read while its listener closed): once Drain has seen no
// message in flight, none reaches a handler, so what the handlers read may
// be closed. (A message is counted before its calls check draining, and
// Drain sets draining before it reads the count: one of the two sees the
// other.)
func (s *Server) Drain(ctx context.Context) error {
	s.draining.Store(true)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for s.inflight.Load() > 0 {
		select {
		case <-ctx.Done():
			s.abort()
			return fmt.Errorf("%d requests still running: %w", s.inflight.Load(), ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// enter and leave bracket the answering of one message.
func (s *Server) enter() {
	s.inflight.Add(1)
	s.metrics.inflight.Inc()
}

func (s *Server) leave() {
	s.inflight.Add(-1)
	s.metrics.inflight.Dec()
}

// Register adds (or replaces) a method. A method outside the served
// namespaces (Options.Namespaces) is not registered: calls to it answer
// -32601 as for any unknown method.
func (s *Server) Register(name string, h Handler) {
	s.namespaces[namespaceOf(name)] = true
	if !s.allowed(name) {
		return
	}
	s.methods[name] = &method{h: h, m: s.metrics.forMethod(name), throttled: slices.Contains(s.opts.Throttled, name)}
}

// SetFallback makes a call to a method that is not registered, in a served
// namespace, go to the handler fallback returns for its name instead of
// answering -32601 (nil: -32601 still); follow mode forwards such calls to
// its upstream. Their metrics are counted under the method "forwarded".
// Call before serving.
func (s *Server) SetFallback(fallback func(method string) Handler) {
	s.fallback = fallback
	s.forwarded = s.metrics.forMethod("forwarded")
}

// Namespaces lists, sorted, the namespaces of every method registered,
// including those Options.Namespaces keeps from being served: what an
// application can serve, for checking a namespace filter against.
func (s *Server) Namespaces() []string {
	return slices.Sorted(maps.Keys(s.namespaces))
}

// Has reports whether a method is registered.
func (s *Server) Has(name string) bool { _, ok := s.methods[name]; return ok }

// Lookup returns a registered method's handler (for servers that wrap
// another's methods, e.g. follow mode routing between local and upstream).
func (s *Server) Lookup(name string) (Handler, bool) {
	if m, ok := s.methods[name]; ok {
		return m.h, true
	}
	return nil, false
}

// Methods lists the registered method names.
func (s *Server) Methods() []string {
	out := make([]string, 0, len(s.methods))
	for m := range s.methods {
		out = append(out, m)
	}
	return out
}

// request is the wire form of one call. Fields are raw so that their JSON
// types can be checked exactly (jsonrpc must be the string "2.0", etc.).
type request struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	ID      json.RawMessage `json:"id"`
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Handle answers one message (a single request or a batch) and returns the
// response bytes, or nil when nothing is to be sent (only notifications).
func (s *Server) Handle(ctx context.Context, body []byte) []byte {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer putBuffer(buf)
	s.handleInto(ctx, body, buf)
	if buf.Len() == 0 {
		return nil
	}
	return cloneBytes(buf)
}

// maxKeptBuffer is the largest answer buffer kept for reuse: one huge
// answer must not pin its memory for the life of a pool or a connection.
const maxKeptBuffer = 1 << 20

func putBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= maxKeptBuffer {
		bufPool.Put(buf)
	}
}

// handleInto appends the answer to one message to buf under the server's
// deadline; it appends nothing when nothing is to be sent (only
// notifications).
func (s *Server) handleInto(ctx context.Context, body []byte, buf *bytes.Buffer) {
	s.enter()
	defer s.leave()
	ctx, cancel := s.requestContext(ctx)
	defer cancel()
	s.dispatch(ctx, body, buf, nil)
}

// dispatch is handleInto for a ctx that already carries the deadline
// (requestContext); g, when not nil, lets the deadline answer first
// (lateGate: dispatch holds g.mu but while a handler runs).
func (s *Server) dispatch(ctx context.Context, body []byte, buf *bytes.Buffer, g *lateGate) {
	body = bytes.TrimSpace(body)
	base := buf.Len()
	if len(body) > 0 && body[0] == '[' {
		var msgs Params
		if sc := jsonscan.New(body); !fastDecode || !scanArray(&sc, 0, &msgs) || !sc.End() {
			msgs = nil
			if err := json.Unmarshal(body, &msgs); err != nil {
				writeError(buf, nil, &ParseError{Msg: "parse error: " + err.Error()})
				return
			}
		}
		if len(msgs) == 0 {
			writeError(buf, nil, &InvalidRequestError{Msg: "empty batch"})
			return
		}
		if len(msgs) > s.opts.BatchLimit {
			writeError(buf, nil, &InvalidRequestError{Msg: fmt.Sprintf("batch too large: %d requests, limit %d", len(msgs), s.opts.BatchLimit)})
			return
		}
		buf.WriteByte('[')
		g.startBatch(msgs, buf)
		s.batchInto(ctx, msgs, buf, base, g)
		return
	}
	// The fast decoder validates what it accepts; only other shapes need
	// encoding/json's validity check.
	var env envelope
	if fastDecode && len(body) > 0 && body[0] == '{' && decodeFast(body, &env.fastRequest) {
		env.fast = true
	} else if !json.Valid(body) {
		writeError(buf, nil, &ParseError{Msg: "parse error: invalid JSON"})
		return
	}
	if !s.handleEnvelope(ctx, body, &env, buf, g) {
		buf.Truncate(base)
	}
}

// batchInto appends the answers to a batch's calls to buf, after the '['
// at base (and any answers already there), and the closing ']'; without
// any answer (only notifications) it takes the '[' back. It stops once the
// deadline answered (g). An answer past the size cap replaces the whole
// batch's with an error.
func (s *Server) batchInto(ctx context.Context, msgs Params, buf *bytes.Buffer, base int, g *lateGate) {
	wrote := buf.Len() > base+1
	for i, m := range msgs {
		g.at(i)
		mark := buf.Len()
		if wrote {
			buf.WriteByte(',')
		}
		if s.handleOne(ctx, m, buf, g) {
			wrote = true
		} else {
			buf.Truncate(mark)
		}
		if g.isLate() {
			return
		}
		if buf.Len()-base > s.opts.MaxResponseSize {
			buf.Truncate(base)
			s.metrics.tooLarge.Inc()
			writeError(buf, nil, s.tooLarge())
			return
		}
	}
	if !wrote {
		buf.Truncate(base)
		return
	}
	buf.WriteByte(']')
}

// envelope is a request decoded by either decoder.
type envelope struct {
	fastRequest
	fast bool // decoded by decodeFast; else by encoding/json below
}

// handleOne answers one request into buf; false means no answer (a notification).
func (s *Server) handleOne(ctx context.Context, msg json.RawMessage, buf *bytes.Buffer, g *lateGate) bool {
	var env envelope
	env.fast = fastDecode && len(msg) > 0 && msg[0] == '{' && decodeFast(msg, &env.fastRequest)
	return s.handleEnvelope(ctx, msg, &env, buf, g)
}

// handleEnvelope validates and answers one request; msg is only decoded
// here when the fast decoder did not take it. No answer is written once
// the deadline answered (g).
func (s *Server) handleEnvelope(ctx context.Context, msg json.RawMessage, env *envelope, buf *bytes.Buffer, g *lateGate) bool {
	var rawParams json.RawMessage
	if !env.fast {
		var req request
		if len(msg) == 0 || msg[0] != '{' {
			writeError(buf, nil, &InvalidRequestError{Msg: "invalid request: not an object"})
			return true
		}
		if err := json.Unmarshal(msg, &req); err != nil {
			writeError(buf, nil, &InvalidRequestError{Msg: "invalid request: " + err.Error()})
			return true
		}
		env.jsonrpc, env.method, env.id, rawParams = req.JSONRPC, req.Method, req.ID, req.Params
	}
	id, ok := validID(env.id)
	if !ok {
		writeError(buf, nil, &InvalidRequestError{Msg: "invalid request: id must be a number, a string or null"})
		return true
	}
	if string(env.jsonrpc) != `"2.0"` {
		writeError(buf, id, &InvalidRequestError{Msg: `invalid request: "jsonrpc" must be "2.0"`})
		return true
	}
	method, ok := methodName(env.method)
	if !ok {
		writeError(buf, id, &InvalidRequestError{Msg: `invalid request: "method" must be a non-empty string`})
		return true
	}
	notification := env.id == nil
	var (
		params Params
		err    error
	)
	switch {
	case !env.fast:
		params, err = splitParams(rawParams)
	case env.paramsNotArray:
		err = errNonArrayParams
	default:
		params = env.params
	}
	if err != nil {
		if notification {
			return false
		}
		writeError(buf, id, err)
		return true
	}
	g.unlock()
	result, err := s.callRaw(ctx, method, params)
	if !g.relock() || notification {
		return false
	}
	if err != nil {
		if timedOut(ctx) {
			s.metrics.timeouts.Inc()
			err = ErrRequestTimeout
		}
		writeError(buf, id, err)
		return true
	}
	mark := buf.Len()
	writeResult(buf, id, result)
	if buf.Len()-mark > s.opts.MaxResponseSize {
		buf.Truncate(mark)
		s.metrics.tooLarge.Inc()
		writeError(buf, id, s.tooLarge())
	}
	return true
}

// tooLarge is the error that replaces an answer over the size cap.
func (s *Server) tooLarge() error {
	return ResponseTooLarge(s.opts.MaxResponseSize)
}

// methodName decodes the raw "method" member: a non-empty JSON string. The
// common plain names are returned without copying.
func methodName(raw json.RawMessage) ([]byte, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return nil, false
	}
	if m, ok := plainString(raw); ok {
		return m, len(m) > 0
	}
	var method string
	if json.Unmarshal(raw, &method) != nil || method == "" {
		return nil, false
	}
	return []byte(method), true
}

func cloneBytes(b *bytes.Buffer) []byte { return append([]byte(nil), b.Bytes()...) }

// callRaw runs the handler (the name is looked up without a copy), turning a
// panic into an internal error so that no input can take the node down.
func (s *Server) callRaw(ctx context.Context, name []byte, params Params) (result any, err error) {
	start := time.Now()
	m, ok := s.methods[string(name)]
	if !ok && s.fallback != nil && s.allowed(string(name)) {
		if h := s.fallback(string(name)); h != nil {
			m, ok = &method{h: h, m: s.forwarded}, true
		}
	}
	if !ok {
		s.unknown.observe(start, true)
		return nil, &MethodNotFoundError{Method: string(name)}
	}
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("handler panic", "method", string(name), "panic", r, "stack", string(debug.Stack()))
			result, err = nil, &InternalError{Msg: "internal error"}
		}
		m.m.observe(start, err != nil)
	}()
	if s.draining.Load() {
		return nil, ErrShuttingDown
	}
	// A call that reaches its turn after the deadline (in a batch, or
	// after waiting for a slot) is not started.
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if m.throttled {
		if len(s.throttle) == cap(s.throttle) {
			s.metrics.throttled.Inc()
		}
		if err := s.throttle.acquire(ctx); err != nil {
			return nil, err
		}
		defer s.throttle.release()
	}
	return m.h(ctx, params)
}

// validID accepts absent, null, numbers and strings, as every node does.
func validID(id json.RawMessage) (json.RawMessage, bool) {
	if len(id) == 0 {
		return nil, true
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return id, true
	case string(id) == "null":
		return id, true
	}
	return nil, false
}

func writeResult(buf *bytes.Buffer, id json.RawMessage, result any) {
	mark := buf.Len()
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	writeID(buf, id)
	buf.WriteString(`,"result":`)
	switch r := result.(type) {
	case json.RawMessage:
		buf.Write(r)
	case Appender:
		// Appended in the buffer's spare room (pooled buffers keep theirs);
		// Write then copies it onto itself.
		buf.Write(r.AppendJSON(buf.AvailableBuffer()))
	case nil:
		buf.WriteString("null")
	default:
		if appendText(buf, r) {
			break
		}
		enc, err := json.Marshal(r)
		if err != nil {
			buf.Truncate(mark)
			writeError(buf, id, &InternalError{Msg: "encode result: " + err.Error()})
			return
		}
		buf.Write(enc)
	}
	buf.WriteByte('}')
}

func writeError(buf *bytes.Buffer, id json.RawMessage, err error) {
	obj := toErrorObject(err)
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	writeID(buf, id)
	buf.WriteString(`,"error":`)
	enc, mErr := json.Marshal(obj)
	if mErr != nil { // data that cannot be encoded: drop it, keep code and message
		obj.Data = nil
		enc, _ = json.Marshal(obj)
	}
	buf.Write(enc)
	buf.WriteByte('}')
}

func writeID(buf *bytes.Buffer, id json.RawMessage) {
	if len(id) == 0 {
		buf.WriteString("null")
		return
	}
	buf.Write(id)
}
