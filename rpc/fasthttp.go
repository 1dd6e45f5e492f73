package rpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The fast HTTP path. Profiles of the read workloads showed net/http's
// per-request machinery (request and header maps, the response writer's
// buffering, the background read that watches for a closed connection, the
// extra goroutine hand-offs) costing more CPU than decoding, dispatching and
// answering the call. ServeFast answers the overwhelmingly common request —
// a keep-alive "POST / HTTP/1.1" with a Content-Length JSON body — directly
// on the connection, and hands every other connection (GET, websocket
// upgrades, CORS, chunked bodies, oversized bodies, odd headers, HTTP/1.0…)
// unread to a regular http.Server, so every behaviour other than speed stays
// net/http's. Answers are byte-for-byte those of HTTPHandler.

const (
	fastBufSize     = 8 << 10 // a request head and a typical body fit
	fastIdleTimeout = 120 * time.Second
	fastHeadTimeout = 10 * time.Second
)

// ServeFast serves JSON-RPC on ln until srv is shut down: fast-path requests
// are answered here, every other connection is served by srv (whose Handler
// must route "/" to s.HTTPHandler(opts), with the same opts). srv.Shutdown
// or srv.Close also stops the fast path: ln is closed, idle connections are
// closed, and busy ones close after their current answer. It returns
// http.ErrServerClosed after that, like http.Server.Serve.
func (s *Server) ServeFast(ln net.Listener, srv *http.Server, opts HTTPOptions) error {
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	f := &fastServer{rpc: s, opts: opts, ln: ln, conns: make(map[*fastConn]struct{}),
		handoff: &chanListener{addr: ln.Addr(), ch: make(chan net.Conn), done: make(chan struct{})}}
	f.ctx, f.cancel = context.WithCancel(WithTransport(context.Background(), "http"))
	f.handoff.onClose = f.shutdown
	go srv.Serve(f.handoff) // returns when srv shuts down (it closes the listener)
	for {
		c, err := ln.Accept()
		if err != nil {
			if f.closing.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			f.shutdown()
			return err
		}
		fc := &fastConn{srv: f, c: c}
		if !f.track(fc, true) {
			c.Close()
			return http.ErrServerClosed
		}
		go fc.serve()
	}
}

type fastServer struct {
	rpc     *Server
	opts    HTTPOptions
	ln      net.Listener
	handoff *chanListener
	ctx     context.Context
	cancel  context.CancelFunc
	closing atomic.Bool

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
	f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		if !c.busy.Load() {
			c.c.Close()
		}
	}
	f.mu.Unlock()
	f.cancel()
	f.handoff.Close()
}

// fastConn is one connection served by the fast path.
type fastConn struct {
	srv  *fastServer
	c    net.Conn
	busy atomic.Bool // answering a request (not waiting for one)
}

var fastReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, fastBufSize) }}

func (fc *fastConn) serve() {
	f := fc.srv
	br := fastReaders.Get().(*bufio.Reader)
	br.Reset(fc.c)
	handedOff := false
	defer func() {
		// As net/http does for a handler: a panic outside the method
		// handlers (which Server already recovers) ends this connection,
		// not the process.
		if r := recover(); r != nil {
			f.rpc.log.Error("http connection panic", "panic", r, "stack", string(debug.Stack()))
		}
		f.track(fc, false)
		if !handedOff {
			fc.c.Close()
			br.Reset(nil)
			fastReaders.Put(br)
		}
	}()
	out := bytes.NewBuffer(make([]byte, 0, 1024))
	for {
		if f.closing.Load() {
			return
		}
		fc.c.SetReadDeadline(time.Now().Add(fastIdleTimeout))
		if _, err := br.Peek(1); err != nil {
			return // closed, idle timeout or garbage: nothing to answer
		}
		fc.busy.Store(true)
		head, n, ok := fc.readHead(br)
		if !ok {
			// Not ours: net/http reads this request (and the rest of the
			// connection) from the same buffered bytes.
			fc.c.SetReadDeadline(time.Time{})
			handedOff = f.handoff.give(&bufConn{Conn: fc.c, r: br})
			return
		}
		br.Discard(head)
		body := make([]byte, n)
		if _, err := readFull(br, body); err != nil {
			return
		}
		out.Reset()
		out.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: ")
		out.Write(httpDate())
		out.WriteString("\r\nContent-Length: ")
		mark := out.Len()
		out.WriteString("0000000000\r\n\r\n") // patched below
		start := out.Len()
		f.rpc.handleInto(f.ctx, body, out)
		b := out.Bytes()
		// Patch the length in place, keeping the header's size: write the
		// digits, then move the body up against them.
		digits := strconv.AppendInt(nil, int64(len(b)-start), 10)
		copy(b[mark:], digits)
		copy(b[mark+len(digits):], "\r\n\r\n")
		shift := 10 - len(digits)
		copy(b[mark+len(digits)+4:], b[start:])
		b = b[:len(b)-shift]
		if _, err := fc.c.Write(b); err != nil {
			return
		}
		fc.busy.Store(false)
	}
}

// readHead parses the request head in br without consuming it. ok means the
// fast path answers it: then head is the head's length and n the body's.
// Anything unusual (or a head that does not arrive within fastHeadTimeout)
// is left to net/http.
func (fc *fastConn) readHead(br *bufio.Reader) (head, n int, ok bool) {
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, crlfcrlf)
	if end < 0 {
		// The head is split across reads: wait for the rest, a little.
		fc.c.SetReadDeadline(time.Now().Add(fastHeadTimeout))
		for end < 0 && br.Buffered() < fastBufSize {
			if _, err := br.Peek(br.Buffered() + 1); err != nil {
				return 0, 0, false
			}
			buf, _ = br.Peek(br.Buffered())
			end = bytes.Index(buf, crlfcrlf)
		}
		if end < 0 {
			return 0, 0, false
		}
	}
	head = end + 4
	lines := buf[:end+2]
	line, rest, _ := bytes.Cut(lines, crlf)
	if string(line) != "POST / HTTP/1.1" {
		return 0, 0, false
	}
	n = -1
	hasHost, hasType := false, false
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, crlf)
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !validHeaderName(line[:colon]) {
			return 0, 0, false
		}
		name, value := line[:colon], bytes.Trim(line[colon+1:], " \t")
		switch {
		case asciiFold(name, "content-length"):
			if n >= 0 || len(value) == 0 || len(value) > 12 {
				return 0, 0, false
			}
			v := 0
			for _, c := range value {
				if c < '0' || c > '9' {
					return 0, 0, false
				}
				v = v*10 + int(c-'0')
			}
			n = v
		case asciiFold(name, "content-type"):
			if hasType || !contentTypeOK(string(value)) {
				return 0, 0, false
			}
			hasType = true
		case asciiFold(name, "host"):
			if hasHost {
				return 0, 0, false
			}
			hasHost = true
		case asciiFold(name, "connection"):
			if !asciiFold(value, "keep-alive") {
				return 0, 0, false
			}
		case asciiFold(name, "origin"):
			if len(fc.srv.opts.CORSOrigins) > 0 {
				return 0, 0, false // CORS headers are net/http's business
			}
		case asciiFold(name, "transfer-encoding"), asciiFold(name, "expect"), asciiFold(name, "upgrade"),
			asciiFold(name, "trailer"), asciiFold(name, "te"):
			return 0, 0, false
		}
		if bytes.ContainsAny(value, "\x00\r\n") {
			return 0, 0, false
		}
	}
	if !hasHost || !hasType || n < 0 || int64(n) > fc.srv.opts.MaxBody {
		return 0, 0, false
	}
	return head, n, true
}

var (
	crlf     = []byte("\r\n")
	crlfcrlf = []byte("\r\n\r\n")
)

func validHeaderName(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || c == '(' || c == ')' || c == '<' || c == '>' || c == '@' || c == ',' ||
			c == ';' || c == ':' || c == '\\' || c == '"' || c == '/' || c == '[' || c == ']' || c == '?' ||
			c == '=' || c == '{' || c == '}' {
			return false
		}
	}
	return true
}

func asciiFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func readFull(br *bufio.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := br.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// httpDate is the Date header value, formatted once a second.
func httpDate() []byte {
	now := time.Now().Unix()
	if d := cachedDate.Load(); d != nil && d.unix == now {
		return d.text
	}
	d := &dateText{unix: now, text: []byte(time.Unix(now, 0).UTC().Format(http.TimeFormat))}
	cachedDate.Store(d)
	return d.text
}

type dateText struct {
	unix int64
	text []byte
}

var cachedDate atomic.Pointer[dateText]

// bufConn is a connection whose first bytes were already buffered.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

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
