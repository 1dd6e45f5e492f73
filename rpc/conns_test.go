package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// flakyListener fails its first n accepts with EMFILE, as a process out of
// descriptors does.
type flakyListener struct {
	net.Listener
	fails atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// Running out of descriptors slows accepting down; it never stops it.
func TestAcceptErrorsDoNotStopServing(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	s := NewServer(Options{Metrics: m})
	s.Register("test_ok", func(context.Context, Params) (any, error) { return true, nil })
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &flakyListener{Listener: inner}
	ln.fails.Store(5)
	h := s.HTTPHandler(HTTPOptions{})
	srv := h.NewServer(h)
	done := make(chan error, 1)
	go func() { done <- h.Serve(ln, srv) }()
	defer func() {
		srv.Close()
		<-done
	}()
	conn, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if b := readBody(t, rawExchange(t, conn, bufio.NewReader(conn), post(`{"jsonrpc":"2.0","id":1,"method":"test_ok"}`))); !strings.Contains(b, "true") {
		t.Fatalf("answer %s", b)
	}
	if got := testutil.ToFloat64(m.acceptErrs); got != 5 {
		t.Fatalf("accept errors counted %v, want 5", got)
	}
}

// Connections are counted whichever path (fast, net/http, websocket) owns
// them, and each frees its place when it closes.
func TestConnectionsCountedUntilClosed(t *testing.T) {
	s := testServer()
	ws := s.WSHandler(WSOptions{})
	defer ws.Close()
	addr, _ := startFast(t, s, HTTPOptions{Other: ws})
	fast, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, rawExchange(t, fast, bufio.NewReader(fast), post(`{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,1]}`)))
	plain, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, rawExchange(t, plain, bufio.NewReader(plain), "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
	wsc := dial(t, "ws://"+addr+"/")
	open := func() float64 { return testutil.ToFloat64(s.metrics.conns) }
	if n := open(); n != 3 {
		t.Fatalf("%v connections counted, want 3", n)
	}
	fast.Close()
	plain.Close()
	wsc.Close(websocket.StatusNormalClosure, "")
	for deadline := time.Now().Add(10 * time.Second); open() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%v connections still counted after all closed", open())
		}
	}
}

// A client that sends its head or body too slowly is cut off, on both paths.
func TestSlowClientsCutOff(t *testing.T) { bothPaths(t, testSlowClientsCutOff) }

func testSlowClientsCutOff(t *testing.T, netHTTPOnly bool) {
	s := testServer()
	opts := HTTPOptions{ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 400 * time.Millisecond, DisableFastPath: netHTTPOnly}
	addr, _ := startFast(t, s, opts)
	cases := map[string]string{
		"silent":            "",
		"slow head":         "POST / HTTP/1.1\r\nHost: x\r\nContent-Ty",
		"slow body":         "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
		"slow chunked body": "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"jsonrpc\":\"2.0\"\r\n",
		"slow body, close":  "POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{",
	}
	for name, partial := range cases {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			io.WriteString(conn, partial)
			start := time.Now()
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err = io.ReadAll(conn) // a 408/400 answer or nothing, then EOF
			if err != nil {
				t.Fatalf("connection not closed: %v", err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("closed after %v", d)
			}
		})
	}
}

// A keep-alive connection left idle is closed after IdleTimeout, not
// before, also when the requests before kept its deadline from moving
// (keepDeadline); one that keeps sending is never cut.
func TestIdleConnectionClosed(t *testing.T) {
	const idle = 400 * time.Millisecond
	addr, _ := startFast(t, testServer(), HTTPOptions{IdleTimeout: idle})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	for end := time.Now().Add(3 * idle); time.Now().Before(end); time.Sleep(idle / 8) {
		readBody(t, rawExchange(t, conn, br, post(`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":[1]}`)))
	}
	last := time.Now()
	conn.SetReadDeadline(last.Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: read %v, want EOF", err)
	}
	if d := time.Since(last); d < idle*9/10 {
		t.Fatalf("closed after %v idle, IdleTimeout is %v", d, idle)
	}
}

// keepDeadline moves a deadline only when it is unknown or outside
// [now+timeout, now+1.25 timeout].
func TestKeepDeadline(t *testing.T) {
	now := time.Unix(1000, 0)
	const timeout = 100 * time.Second
	for _, tc := range []struct {
		name  string
		dl    time.Time
		moved bool
	}{
		{"unknown", time.Time{}, true},
		{"past", aLongTimeAgo, true},
		{"too early", now.Add(timeout - time.Nanosecond), true},
		{"at the bound", now.Add(timeout), false},
		{"within the slack", now.Add(timeout + timeout/8), false},
		{"at the slack's end", now.Add(timeout + timeout/4), false},
		{"too late", now.Add(timeout + timeout/4 + time.Nanosecond), true},
	} {
		dl, set := tc.dl, time.Time{}
		(&fastConn{}).keepDeadline(&dl, now, timeout, func(t time.Time) error { set = t; return nil })
		if want := now.Add(timeout + timeout/4); tc.moved && (set != want || dl != want) {
			t.Errorf("%s: set %v, kept %v; want both %v", tc.name, set, dl, want)
		}
		if !tc.moved && (!set.IsZero() || dl != tc.dl) {
			t.Errorf("%s: moved to %v", tc.name, dl)
		}
	}
}

// A large declared body is not allocated before it arrives.
func TestBodyBufferGrowsWithData(t *testing.T) {
	const declared = 4 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 20 {
		br := bufio.NewReader(io.LimitReader(strings.NewReader(strings.Repeat("x", 100)), 100))
		if _, err := readRequestBody(br, declared); err == nil {
			t.Fatal("short body read without error")
		}
	}
	runtime.ReadMemStats(&after)
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 20*declared/4 {
		t.Fatalf("20 short bodies allocated %d bytes", grown)
	}
	full := strings.Repeat("y", 3*bodyStep+17)
	b, err := readRequestBody(bufio.NewReader(strings.NewReader(full)), len(full))
	if err != nil || string(b) != full {
		t.Fatalf("full body: %d bytes, %v", len(b), err)
	}
}

// The Host allow-list applies on the fast path and on net/http; IP
// literals always pass.
func TestHostAllowList(t *testing.T) {
	s := testServer()
	ws := s.WSHandler(WSOptions{})
	defer ws.Close()
	hosts := NewHostAllowList(DefaultVHosts)
	addr, _ := startFast(t, s, HTTPOptions{Hosts: hosts, Other: ws})
	body := `{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,1]}`
	for host, want := range map[string]int{
		"localhost:8545": 200, "LOCALHOST": 200, "127.0.0.1:8545": 200, "[::1]:8545": 200, "10.1.2.3": 200,
		"evil.example": 403, "evil.example:8545": 403, "localhost.evil.example": 403, "": 403,
	} {
		for _, extra := range []string{"", "Connection: close\r\n"} {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			req := fmt.Sprintf("POST / HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", host, extra, len(body), body)
			resp := rawExchange(t, conn, bufio.NewReader(conn), req)
			resp.Body.Close()
			conn.Close()
			if resp.StatusCode != want {
				t.Errorf("Host %q %q: status %d, want %d", host, extra, resp.StatusCode, want)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, "ws://"+addr+"/", &websocket.DialOptions{Host: "evil.example"})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("websocket with a foreign Host: %v %v", resp, err)
	}
	for host, want := range map[string]bool{"localhost:1": true, "127.0.0.2": true, "[::1]:8545": true, "10.1.2.3": false, "evil.example": false} {
		if LoopbackHosts.Allows(host) != want {
			t.Errorf("LoopbackHosts.Allows(%q) != %v", host, want)
		}
	}
}

// A subscriber that stops reading gets a 1008 close frame after what was
// already written, not a bare EOF.
func TestSlowSubscriberGetsPolicyClose(t *testing.T) {
	srv := NewServer(Options{})
	created := testSubs(srv, 0)
	_, url := startWS(t, srv, WSOptions{StreamOptions: StreamOptions{QueueLen: 8, QueueBytes: 1 << 20}})
	c := dial(t, url)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"test_subscribe"}`)
	recv(t, c)
	sub := <-created
	payload := json.RawMessage(`"` + strings.Repeat("x", 64<<10) + `"`)
	for i := 0; i < 100000 && sub.Notify(payload); i++ {
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		_, _, err := c.Read(ctx)
		if err == nil {
			continue
		}
		if st := websocket.CloseStatus(err); st != websocket.StatusPolicyViolation {
			t.Fatalf("dropped subscriber saw %v (status %d), want close 1008", err, st)
		}
		return
	}
}

// Shutdown sends 1001 after the answers already queued.
func TestWSCloseSendsGoingAway(t *testing.T) {
	srv := NewServer(Options{})
	testSubs(srv, 0)
	ws, url := startWS(t, srv, WSOptions{})
	c := dial(t, url)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"test_echo","params":["hi"]}`)
	recv(t, c)
	ws.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, err := c.Read(ctx)
	if st := websocket.CloseStatus(err); st != websocket.StatusGoingAway {
		t.Fatalf("after shutdown: %v, want close 1001", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("no close frame")
	}
}

// A client that stops reading cannot hold an answer's write (and its
// goroutine and buffer) for ever: the fast path gives the write up 1–1.25×
// WriteTimeout after it began and closes the connection, and answers other
// clients meanwhile. The answer is larger than both sockets' buffers (the
// client's receive buffer is made small; Linux's default tcp_wmem caps the
// server's send buffer at 4 MiB), so its write stalls; were it not, the
// client would read the whole answer at the end and the test fail.
func TestStalledWriteClosed(t *testing.T) {
	const (
		writeTimeout = 200 * time.Millisecond
		// Generous: the close is due by 1.25× WriteTimeout, but building and
		// copying the 16 MiB answer under -race on a loaded 2-core machine
		// took up to 4 s before the write even began.
		bound      = 20 * time.Second
		answerSize = 16 << 20
	)
	m := NewMetrics(prometheus.NewRegistry())
	s := NewServer(Options{Metrics: m})
	big := json.RawMessage(`"` + strings.Repeat("a", answerSize) + `"`)
	asked := make(chan struct{}, 1)
	s.Register("test_big", func(context.Context, Params) (any, error) {
		asked <- struct{}{}
		return big, nil
	})
	s.Register("test_ok", func(context.Context, Params) (any, error) { return true, nil })
	addr, _ := startFast(t, s, HTTPOptions{WriteTimeout: writeTimeout})

	other, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	obr := bufio.NewReader(other)
	ask := func(when string) {
		t.Helper()
		if b := readBody(t, rawExchange(t, other, obr, post(`{"jsonrpc":"2.0","id":1,"method":"test_ok"}`))); b != `{"jsonrpc":"2.0","id":1,"result":true}` {
			t.Fatalf("other client, %s: %s", when, b)
		}
	}
	ask("before")

	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	stalled, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	if _, err := io.WriteString(stalled, post(`{"jsonrpc":"2.0","id":2,"method":"test_big"}`)); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	<-asked
	ask("while the answer to the stalled client is written") // never read: the write stalls

	// The server closes the stalled connection: only the other one stays open.
	for testutil.ToFloat64(m.conns) != 1 {
		if time.Since(sent) > bound {
			t.Fatalf("stalled connection still open %v after its request (WriteTimeout %v): %v connections open",
				time.Since(sent), writeTimeout, testutil.ToFloat64(m.conns))
		}
		time.Sleep(10 * time.Millisecond)
	}
	ask("after the stalled connection closed")

	// What the client reads now is a cut answer, then the end of the
	// connection: the write was given up, not finished.
	stalled.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(stalled), nil)
	if err != nil {
		t.Fatalf("stalled client: no response head: %v", err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("stalled client read %d of %d body bytes, then %v; want a cut answer and a closed connection", n, resp.ContentLength, err)
	}
	t.Logf("stalled client read %d of %d body bytes, then %v", n, resp.ContentLength, err)
}
