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
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/preconf/preconf/internal/arrival"
)

const (
	fastBufSize = 8 << 10 // a request head and a typical body fit
	// bodyStep is the body buffer first allocated for a large declared
	// Content-Length; it doubles as bytes arrive, so a client that declares
	// megabytes and sends nothing costs 64 KiB, not the declared size.
	bodyStep = 64 << 10
)

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
	wseq     uint64      // the request watched (its gate's seq)

	// gate lets the deadline answer the request (lateGate); reqs numbers
	// the connection's requests for it.
	gate lateGate
	reqs uint64
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

// answer handles one request, dispatched at start, and writes the
// response; it returns when the write began, false if the connection
// failed or is to close (its answer went out at the deadline, see
// writeLate).
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
	fc.reqs++
	fc.gate.begin(body, fc.reqs)
	fc.watch(cancel, start, fc.reqs)
	f.rpc.dispatch(ctx, body, out, &fc.gate)
	answered := fc.gate.finish()
	fc.unwatch()
	cancel(nil)
	if !answered {
		return time.Time{}, false
	}
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

// writeLate sends the answer the deadline gave (lateGate), from the
// deadline's goroutine while the connection's runs the handler. The
// connection closes when the handler returns (its requests are answered in
// order, and the next would wait for it), so the answer says so.
func (fc *fastConn) writeLate(b []byte) {
	now := time.Now()
	out := make([]byte, 0, len(b)+160)
	out = append(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nDate: "...)
	out = append(out, httpDate(now)...)
	out = append(out, "\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(b)), 10)
	out = append(out, "\r\nConnection: close\r\n\r\n"...)
	out = append(out, b...)
	fc.c.SetWriteDeadline(now.Add(fc.srv.opts.WriteTimeout))
	fc.c.Write(out)
}

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

// readHead parses the request head in br without consuming it (parseHead),
// reading more of it while it is incomplete, until fc.headBy (zero: the
// read-header timeout from now); a head that does not complete by then
// closes the connection (headClose).
func (fc *fastConn) readHead(br *bufio.Reader) (head, n int, v headVerdict) {
	buf, _ := br.Peek(br.Buffered())
	if head, n, v = parseHead(buf, fc.srv.policy); v != headIncomplete {
		return head, n, v
	}
	by := fc.headBy
	if by.IsZero() {
		by = time.Now().Add(fc.srv.opts.ReadHeaderTimeout)
	}
	fc.setReadDeadline(by)
	for v == headIncomplete {
		if _, err := br.Peek(br.Buffered() + 1); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return 0, 0, headClose
			}
			return 0, 0, headHandOff
		}
		buf, _ = br.Peek(br.Buffered())
		head, n, v = parseHead(buf, fc.srv.policy)
	}
	return head, n, v
}
