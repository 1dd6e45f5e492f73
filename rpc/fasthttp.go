package rpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/preconf/preconf/internal/arrival"
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
	fastBufSize = 8 << 10 // a request head and a typical body fit
	// bodyStep is the body buffer first allocated for a large declared
	// Content-Length; it doubles as bytes arrive, so a client that declares
	// megabytes and sends nothing costs 64 KiB, not the declared size.
	bodyStep = 64 << 10
	// watchAfter is how long a request runs before its connection is
	// watched for the client going away (a read that would see EOF), as
	// net/http's background read does for every request; short requests,
	// nearly all of them, skip the goroutine and the syscalls.
	watchAfter = 50 * time.Millisecond
)

// ServeFast serves JSON-RPC on ln until srv is shut down: fast-path requests
// are answered here, every other connection is served by srv (whose Handler
// must route "/" to s.HTTPHandler(opts), with the same opts; HTTPServer
// makes one with the matching timeouts; ServeFast sets its ConnState and
// ConnContext hooks and wraps its Handler, see track). srv.Shutdown or
// srv.Close also stops the fast path: ln is closed, idle connections are
// closed, and busy ones close after their current answer (Server.Drain
// waits for those). It returns http.ErrServerClosed after that, like
// http.Server.Serve.
//
// Accept errors (too many open files, …) never stop it: it backs off and
// retries. Connections are admitted under opts.MaxConnections (counted
// with those handed to srv, websockets included, until they close; see
// connTable).
func (s *Server) ServeFast(ln net.Listener, srv *http.Server, opts HTTPOptions) error {
	opts.defaults()
	table := newConnTable(opts.MaxConnections, s.metrics)
	cl := newConnListener(ln, table, s.log, s.metrics)
	f := &fastServer{rpc: s, opts: opts, ln: cl, table: table, conns: make(map[*fastConn]struct{}), done: make(chan struct{}),
		handoff: &chanListener{addr: ln.Addr(), ch: make(chan net.Conn), done: make(chan struct{})}}
	// Shutdown does not cancel requests in flight: they finish (Drain,
	// whose abort reaches them through the watcher, see watch).
	f.ctx = s.withLimits(WithTransport(context.Background(), "http"))
	f.order = arrival.New(runtime.GOMAXPROCS(0), opts.IdleTimeout/4)
	f.orderFrom = int64(2 * runtime.GOMAXPROCS(0))
	f.handoff.onClose = f.shutdown
	track(srv, opts)
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

// fastConn is one connection served by the fast path.
type fastConn struct {
	srv  *fastServer
	c    net.Conn
	busy atomic.Bool // answering a request (not waiting for one)
	// ready wakes the connection when its next request may have arrived,
	// in arrival order (nil: not registered, see ordered); raw is the
	// accepted socket.
	ready      *arrival.Waiter
	registered bool // ready was asked for (it is nil if that failed)
	raw        net.Conn
	drained    bool // the last socket read emptied it (see Read)
	// slot is its place under the cap: held while a request is answered.
	slot *connSlot
	// headBy is when the head being read must be complete (zero: the
	// read-header timeout from now).
	headBy time.Time

	// The socket's deadlines as this goroutine last set them (see
	// keepDeadline); zero when unknown.
	readDL, writeDL time.Time

	// The watcher (see watch): a byte it read belongs to the next request
	// and is delivered first by Read.
	stash    byte
	hasStash bool
	timer    *time.Timer
	wmu      sync.Mutex
	timerSet bool // timer is pending
	armed    bool // a request is running: cancel and start are its
	reading  bool
	wdone    chan struct{}
	cancel   context.CancelCauseFunc
	start    time.Time
	deadline *time.Timer
	abort    func() bool // stops the AfterFunc that cancels on Server.Drain's abort
}

// Read is what the connection's bufio.Reader reads from.
func (fc *fastConn) Read(p []byte) (int, error) {
	if fc.hasStash && len(p) > 0 {
		p[0], fc.hasStash = fc.stash, false
		return 1, nil
	}
	n, err := fc.c.Read(p)
	// A read that did not fill p took all the socket held: whatever comes
	// later is announced by the arrival order.
	fc.drained = n < len(p)
	return n, err
}

var fastReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, fastBufSize) }}

func (fc *fastConn) serve() {
	f := fc.srv
	br := fastReaders.Get().(*bufio.Reader)
	br.Reset(fc)
	handedOff := false
	defer func() {
		// As net/http does for a handler: a panic outside the method
		// handlers (which Server already recovers) ends this connection,
		// not the process.
		if r := recover(); r != nil {
			f.rpc.log.Error("http connection panic", "panic", r, "stack", string(debug.Stack()))
		}
		if fc.timer != nil {
			fc.timer.Stop()
		}
		f.track(fc, false)
		f.order.Remove(fc.ready) // before the close: the number can be reused
		if !handedOff {
			fc.c.Close()
			br.Reset(nil)
			fastReaders.Put(br)
		}
	}()
	out := bytes.NewBuffer(make([]byte, 0, 1024))
	idleSince := time.Now() // the last answer's write (one clock read less a request)
	// The first head must be complete by the read-header timeout from the
	// accept, as on net/http: a connection that sends nothing is closed
	// then, not after the idle timeout.
	fc.headBy = time.Unix(0, fc.slot.idleSince.Load()).Add(f.opts.ReadHeaderTimeout)
	fc.setReadDeadline(fc.headBy)
	for {
		if f.closing.Load() {
			return
		}
		// A pipelined request already buffered is not waited for.
		if br.Buffered() == 0 {
			if fc.headBy.IsZero() {
				fc.keepDeadline(&fc.readDL, idleSince, f.opts.IdleTimeout, fc.c.SetReadDeadline)
			}
			if fc.ordered() && fc.drained && !fc.hasStash {
				// Wait for our turn (arrival order), then read as before.
				// Only when the socket was emptied: bytes that were there
				// already would announce nothing more (edge-triggered).
				if !fc.ready.Wait(f.done) {
					return
				}
			}
			if _, err := br.Peek(1); err != nil {
				return // closed, evicted, idle timeout or garbage: nothing to answer
			}
		}
		fc.busy.Store(true)
		arrived, got := time.Now(), br.Buffered()
		head, n, v := fc.readHead(br)
		fc.headBy = time.Time{}
		switch v {
		case headClose:
			return // a head that never completed (slow loris)
		case headHandOff:
			if fc.slot.isEvicted() {
				return // closed to make room while its head arrived
			}
			// Not ours: net/http reads this request (and the rest of the
			// connection) from the same buffered bytes.
			f.order.Remove(fc.ready)
			fc.ready = nil
			fc.c.SetReadDeadline(time.Time{})
			handedOff = f.handoff.give(&bufConn{Conn: fc.c, r: br})
			return
		}
		// The connection is in use from here until the answer is written;
		// before, it was idle and could be closed to make room.
		if !fc.slot.begin() {
			return
		}
		br.Discard(head)
		if br.Buffered() < n { // the body is still on its way
			fc.setReadDeadline(arrived.Add(f.opts.ReadTimeout))
		}
		body, err := readRequestBody(br, n)
		if err != nil {
			return // slow or short body: cut off
		}
		// The call's deadline runs from its dispatch: the arrival, unless
		// the request took more reads to arrive.
		start := arrived
		if got < head+n {
			start = time.Now()
		}
		var ok bool
		if idleSince, ok = fc.answer(body, out, start); !ok {
			return
		}
		fc.slot.end(idleSince)
		if out.Cap() > maxKeptBuffer { // do not keep one huge answer's buffer for the connection's life
			out = bytes.NewBuffer(make([]byte, 0, 1024))
		}
		fc.busy.Store(false)
	}
}

// ordered reports whether the connection waits for its turn in arrival
// order (package arrival), registering or unregistering it as the number of open
// connections crosses orderFrom. With no more connections than twice the
// threads that run them there is no queue to order, and the wake-up through
// the order's goroutine only costs: at one connection it took 0.90–0.93× the
// requests/s and 1.2–1.4× the CPU per request of waiting in the netpoller
// (go run ./bench -conns 1 -rounds 5 against the commit before the order).
func (fc *fastConn) ordered() bool {
	f := fc.srv
	want := f.order != nil && f.table.open.Load() > f.orderFrom
	if want != fc.registered {
		fc.registered = want
		if want {
			fc.ready = f.order.Add(fc.raw)
		} else {
			f.order.Remove(fc.ready)
			fc.ready = nil
		}
	}
	return fc.ready != nil
}

// setReadDeadline sets the read deadline exactly.
func (fc *fastConn) setReadDeadline(t time.Time) {
	fc.readDL = t
	fc.c.SetReadDeadline(t)
}

// keepDeadline makes the deadline *dl (set with set) fall between
// now+timeout and now+timeout+timeout/4 (timeout > 0), leaving it alone
// when it already does. Moving a socket deadline modifies a runtime timer
// under the poll descriptor's lock, and on a keep-alive connection the idle
// and write deadlines would move by microseconds on every request; so they
// move only once a quarter of the timeout has passed (as valyala/fasthttp
// does, after golang/go#15133). The bounds loosen accordingly: an idle
// connection closes 1–1.25× IdleTimeout after its last answer's write
// began (less the time that write took, itself bounded by the write
// deadline), a stalled write ends 1–1.25× WriteTimeout after it began. The
// body's deadline is exact, and set only when the body is not already
// buffered. The three deadlines a request used to set cost 0.26–0.52 µs
// together, and with the watcher's timer and context 2.2–3.9 µs against
// 0.33–0.50 µs now (BenchmarkRequestBookkeeping, busy 2-CPU machine).
func (fc *fastConn) keepDeadline(dl *time.Time, now time.Time, timeout time.Duration, set func(time.Time) error) {
	lo := now.Add(timeout)
	if !dl.IsZero() && !dl.Before(lo) && !dl.After(lo.Add(timeout/4)) {
		return
	}
	*dl = lo.Add(timeout / 4)
	set(*dl)
}

// answer handles one request, dispatched at start, and writes the
// response; it returns when the write began, false if the connection
// failed.
func (fc *fastConn) answer(body []byte, out *bytes.Buffer, start time.Time) (time.Time, bool) {
	f := fc.srv
	f.rpc.enter()
	defer f.rpc.leave()
	out.Reset()
	out.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: ")
	out.Write(httpDate(start))
	out.WriteString("\r\nContent-Length: ")
	mark := out.Len()
	out.WriteString("0000000000\r\n\r\n") // patched below
	body0 := out.Len()
	// f.ctx cannot be cancelled: the request's context costs no
	// registration with a parent. What cancels it (the deadline, the
	// client leaving, Drain's abort) is armed by the watcher, once the
	// request has run for watchAfter; most end well before and pay for
	// neither timer nor goroutine.
	ctx, cancel := context.WithCancelCause(f.ctx)
	fc.watch(cancel, start)
	f.rpc.dispatch(ctx, body, out)
	fc.unwatch()
	cancel(nil)
	b := out.Bytes()
	// Patch the length in place, keeping the header's size: write the
	// digits, then move the body up against them.
	digits := strconv.AppendInt(nil, int64(len(b)-body0), 10)
	copy(b[mark:], digits)
	copy(b[mark+len(digits):], "\r\n\r\n")
	shift := 10 - len(digits)
	copy(b[mark+len(digits)+4:], b[body0:])
	b = b[:len(b)-shift]
	now := time.Now()
	fc.keepDeadline(&fc.writeDL, now, f.opts.WriteTimeout, fc.c.SetWriteDeadline)
	_, err := fc.c.Write(b)
	return now, err == nil
}

// watch notes the start of a request, whose context cancel ends: if it is
// still running after watchAfter, the watcher (startWatch) arms the
// request's deadline (Options.Timeout) and its cancellation by
// Server.Drain, and reads the connection, as net/http's background read
// does; EOF or a reset means the client left, and the request is
// cancelled. A byte it reads instead (a pipelined request) is kept for
// Read.
//
// The connection has one timer, armed by the first request and left
// pending across the next ones: when it fires it looks at the request
// running then, and either starts watching it, waits for the rest of its
// watchAfter, or (idle connection) stays disarmed. Under steady load it
// fires once per watchAfter per connection instead of being reset and
// stopped for every request (a Reset and a Stop: 45–110 ns together,
// BenchmarkRequestBookkeeping/part/timer-reset-stop).
func (fc *fastConn) watch(cancel context.CancelCauseFunc, start time.Time) {
	fc.wmu.Lock()
	fc.armed, fc.cancel, fc.start = true, cancel, start
	if !fc.timerSet {
		fc.timerSet = true
		if fc.timer == nil {
			fc.timer = time.AfterFunc(watchAfter, fc.startWatch)
		} else {
			fc.timer.Reset(watchAfter)
		}
	}
	fc.wmu.Unlock()
}

func (fc *fastConn) startWatch() {
	fc.wmu.Lock()
	if !fc.armed || fc.reading {
		// Idle, or a watcher already reads for this request (two would
		// race for the stash).
		fc.timerSet = false
		fc.wmu.Unlock()
		return
	}
	if left := watchAfter - time.Since(fc.start); left > 0 {
		fc.timer.Reset(left) // a younger request than the one that armed the timer
		fc.wmu.Unlock()
		return
	}
	fc.timerSet = false
	fc.reading, fc.wdone = true, make(chan struct{})
	cancel, done := fc.cancel, fc.wdone
	if t := fc.srv.rpc.opts.Timeout; t > 0 {
		fc.deadline = time.AfterFunc(time.Until(fc.start.Add(t)), func() { cancel(ErrRequestTimeout) })
	}
	// Drain's abort cancels the requests it outlasts (those younger than
	// watchAfter then, once they reach it).
	base := fc.srv.rpc.base
	fc.abort = context.AfterFunc(base, func() { cancel(context.Cause(base)) })
	// The body's deadline no longer applies. Cleared under wmu: unwatch
	// sets its past deadline after it sees reading under wmu, so it always
	// comes later and stops the read below. Cleared after the unlock, it
	// could undo unwatch's, and the read (with unwatch waiting for it)
	// would last until the client, waiting for the answer, gave up.
	fc.c.SetReadDeadline(time.Time{})
	fc.wmu.Unlock()
	defer close(done)
	if testHookWatchUnlocked != nil {
		testHookWatchUnlocked()
	}
	var b [1]byte
	n, err := fc.c.Read(b[:])
	if n == 1 {
		fc.stash, fc.hasStash = b[0], true
		return
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		cancel(errClientGone) // EOF or reset: nobody waits for the answer
	}
}

// unwatch ends the request for the watcher and, if it is reading, stops
// its read. The timer stays pending (see watch).
func (fc *fastConn) unwatch() {
	fc.wmu.Lock()
	fc.armed, fc.cancel = false, nil
	reading, done, deadline, abort := fc.reading, fc.wdone, fc.deadline, fc.abort
	fc.reading, fc.deadline, fc.abort = false, nil, nil
	fc.wmu.Unlock()
	if !reading {
		return
	}
	if deadline != nil {
		deadline.Stop()
	}
	abort()
	fc.setReadDeadline(aLongTimeAgo)
	<-done
}

var aLongTimeAgo = time.Unix(1, 0)

// testHookWatchUnlocked, when set by a test, runs in startWatch after the
// watcher released wmu and before its read.
var testHookWatchUnlocked func()

// readRequestBody reads an n-byte body, growing its buffer as bytes arrive.
func readRequestBody(br *bufio.Reader, n int) ([]byte, error) {
	if n <= bodyStep {
		b := make([]byte, n)
		_, err := io.ReadFull(br, b)
		return b, err
	}
	b := make([]byte, 0, bodyStep)
	for len(b) < n {
		if len(b) == cap(b) {
			b = slices.Grow(b, min(cap(b), n-len(b)))
		}
		m, err := br.Read(b[len(b):min(cap(b), n)])
		b = b[:len(b)+m]
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

// headVerdict is what readHead decided about a request head.
type headVerdict int

const (
	headFast    headVerdict = iota // answered here
	headHandOff                    // served by net/http
	headClose                      // the head did not arrive in time
)

// readHead parses the request head in br without consuming it. headFast
// means the fast path answers it: then head is the head's length and n the
// body's. Anything unusual is left to net/http; a head that does not
// complete within the read-header timeout closes the connection.
func (fc *fastConn) readHead(br *bufio.Reader) (head, n int, v headVerdict) {
	const no = headHandOff
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, crlfcrlf)
	if end < 0 {
		// The head is split across reads: wait for the rest, a little,
		// unless what came already is not ours (net/http answers some
		// malformed heads before they are complete).
		by := fc.headBy
		if by.IsZero() {
			by = time.Now().Add(fc.srv.opts.ReadHeaderTimeout)
		}
		fc.setReadDeadline(by)
		for end < 0 && br.Buffered() < fastBufSize {
			if !fastPrefix(buf) {
				return 0, 0, no
			}
			if _, err := br.Peek(br.Buffered() + 1); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					return 0, 0, headClose
				}
				return 0, 0, no
			}
			buf, _ = br.Peek(br.Buffered())
			end = bytes.Index(buf, crlfcrlf)
		}
		if end < 0 {
			return 0, 0, no
		}
	}
	// Through the last header's CRLF, so that fastPrefix checks every
	// header line and the loop below need not again.
	if !fastPrefix(buf[:end+2]) {
		return 0, 0, no
	}
	head = end + 4
	lines := buf[:end+2]
	line, rest, _ := cutLine(lines)
	if string(line) != "POST / HTTP/1.1" {
		return 0, 0, no
	}
	n = -1
	hasHost, hasType := false, false
	for len(rest) > 0 {
		line, rest, _ = cutLine(rest)
		colon := bytes.IndexByte(line, ':') // name and value valid: fastPrefix
		if colon <= 0 {
			return 0, 0, no // fastPrefix refused it already; kept so a slip cannot panic
		}
		name, value := line[:colon], trimOWS(line[colon+1:])
		switch {
		case asciiFold(name, "content-length"):
			if n >= 0 || len(value) == 0 || len(value) > 12 {
				return 0, 0, no
			}
			v := 0
			for _, c := range value {
				if c < '0' || c > '9' {
					return 0, 0, no
				}
				v = v*10 + int(c-'0')
			}
			n = v
		case asciiFold(name, "content-type"):
			if hasType || !contentTypeOK(string(value)) {
				return 0, 0, no
			}
			hasType = true
		case asciiFold(name, "host"):
			if hasHost || !fc.srv.opts.Hosts.allowsBytes(value) {
				return 0, 0, no // net/http answers 403
			}
			hasHost = true
		case asciiFold(name, "connection"):
			if !asciiFold(value, "keep-alive") {
				return 0, 0, no
			}
		case asciiFold(name, "origin"):
			if len(fc.srv.opts.CORSOrigins) > 0 {
				return 0, 0, no // CORS headers are net/http's business
			}
		case asciiFold(name, "transfer-encoding"), asciiFold(name, "expect"), asciiFold(name, "upgrade"),
			asciiFold(name, "trailer"), asciiFold(name, "te"):
			return 0, 0, no
		}
	}
	if !hasHost || !hasType || n < 0 || int64(n) > fc.srv.opts.MaxBody {
		return 0, 0, no
	}
	return head, n, headFast
}

var crlfcrlf = []byte("\r\n\r\n")

// validHeaderName is net/http's rule: a token (RFC 9110), looked up in
// headerTokenByte (a table: the comparisons it replaces were a third of
// BenchmarkReadHead).
func validHeaderName(b []byte) bool {
	for _, c := range b {
		if !headerTokenByte[c] {
			return false
		}
	}
	return true
}

var headerTokenByte = func() (t [256]bool) {
	for c := '!'; c < 0x7f; c++ {
		t[c] = !strings.ContainsRune(`()<>@,;:\"/[]?={}`, c)
	}
	return t
}()

var fastRequestLine = []byte("POST / HTTP/1.1\r\n")

// fastPrefix reports whether head (or its start) can be a fast-path request
// head: it begins with the one request line served here, every line ends in
// CRLF (net/http also takes a bare LF) and every complete header line is
// well-formed. net/http reads a head line by line and answers 400 at the
// first bad line, before the rest arrives: such heads go to it at once.
func fastPrefix(head []byte) bool {
	n := min(len(head), len(fastRequestLine))
	if !bytes.Equal(head[:n], fastRequestLine[:n]) {
		return false
	}
	for i := 0; ; i++ { // every LF ends a CRLF
		j := bytes.IndexByte(head[i:], '\n')
		if j < 0 {
			break
		}
		if i += j; i == 0 || head[i-1] != '\r' {
			return false
		}
	}
	if len(head) <= len(fastRequestLine) {
		return true
	}
	rest := head[len(fastRequestLine):]
	for {
		line, after, complete := cutLine(rest)
		if !complete {
			return true
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !validHeaderName(line[:colon]) || !validHeaderValue(line[colon+1:]) {
			return false
		}
		rest = after
	}
}

// cutLine splits b at its first LF, which ends a CRLF (fastPrefix rejects
// a head with a bare LF before anything is cut): the line without its CRLF,
// the rest, and whether there was one. A byte search for LF instead of a
// search for CRLF, and trimOWS instead of bytes.Trim's cutset, took
// BenchmarkReadHead/fetch from 508-524 to 380-387 ns.
func cutLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 1 {
		return b, nil, false
	}
	return b[:i-1], b[i+1:], true
}

// trimOWS trims the spaces and tabs around a header value.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// validHeaderValue is net/http's rule: no control bytes but tab.
func validHeaderValue(v []byte) bool {
	for _, c := range v {
		if (c < ' ' && c != '\t') || c == 0x7f {
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

// httpDate is the Date header value at t, formatted once a second.
func httpDate(t time.Time) []byte {
	now := t.Unix()
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
