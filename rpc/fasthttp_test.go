package rpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// startFast serves s with its HTTP transport (the mux routes "/" to the
// transport, as node's does) and returns its address and the http.Server.
func startFast(t *testing.T, s *Server, opts HTTPOptions) (string, *http.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := s.HTTPHandler(opts)
	mux := http.NewServeMux()
	mux.Handle("/", h)
	srv := h.NewServer(mux)
	done := make(chan error, 1)
	go func() { done <- h.Serve(ln, srv) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		select {
		case err := <-done:
			if !errors.Is(err, http.ErrServerClosed) {
				t.Errorf("ServeFast returned %v, want http.ErrServerClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("ServeFast did not return after Shutdown")
		}
	})
	return ln.Addr().String(), srv
}

// bothPaths runs a test on the fast path and on net/http alone
// (HTTPOptions.DisableFastPath).
func bothPaths(t *testing.T, test func(t *testing.T, netHTTPOnly bool)) {
	t.Run("fast path", func(t *testing.T) { test(t, false) })
	t.Run("net/http", func(t *testing.T) { test(t, true) })
}

// rawExchange sends raw request bytes on conn and reads one response.
func rawExchange(t *testing.T, conn net.Conn, br *bufio.Reader, req string) *http.Response {
	t.Helper()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read response to %q: %v", req, err)
	}
	return resp
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func post(body string, extra ...string) string {
	h := "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
	for _, e := range extra {
		h += e + "\r\n"
	}
	return fmt.Sprintf("%sContent-Length: %d\r\n\r\n%s", h, len(body), body)
}

// Every request gets the same status, body and headers (but Date) from the
// fast path as from HTTPHandler on a plain net/http server.
func TestServeFastMatchesHTTPHandler(t *testing.T) { bothPaths(t, testMatchesHTTPHandler) }

func testMatchesHTTPHandler(t *testing.T, netHTTPOnly bool) {
	s := testServer()
	opts := HTTPOptions{MaxBody: 1024, CORSOrigins: []string{"https://ok.example"}, DisableFastPath: netHTTPOnly}
	fastAddr, _ := startFast(t, s, opts)
	plain := httptest.NewServer(s.HTTPHandler(opts))
	defer plain.Close()
	plainAddr := strings.TrimPrefix(plain.URL, "http://")

	valid := `{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2]}`
	reqs := []string{
		post(valid),
		post(`[` + valid + `,` + valid + `]`),
		post(`{"jsonrpc":"2.0","method":"test_add","params":[1,2]}`), // notification: empty 200
		post(`{`),
		post(`{"jsonrpc":"2.0","id":"a","method":"nope"}`),
		post(`{"jsonrpc":"2.0","id":1,"method":"test_panic"}`),
		post(`{"jsonrpc":"2.0","id":1,"method":"test_revert"}`),
		post(valid, "Content-Type: application/json; charset=utf-8"),
		post(valid, "Origin: https://ok.example"),
		post(valid, "Origin: https://evil.example"),
		post(valid, "Connection: keep-alive"),
		post(`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":["` + strings.Repeat("a", 2048) + `"]}`), // 413
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}",              // 415
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",                                          // 415
		"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"OPTIONS / HTTP/1.1\r\nHost: x\r\nOrigin: https://ok.example\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
			fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(valid), valid),
	}
	// One connection each, used for every request in turn: the fast path
	// also has to hand a connection over to net/http mid-way.
	fc, err := net.Dial("tcp", fastAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	fbr := bufio.NewReader(fc)
	for i, req := range reqs {
		pc, err := net.Dial("tcp", plainAddr)
		if err != nil {
			t.Fatal(err)
		}
		want := rawExchange(t, pc, bufio.NewReader(pc), req)
		wantBody := readBody(t, want)
		pc.Close()
		got := rawExchange(t, fc, fbr, req)
		gotBody := readBody(t, got)
		if got.StatusCode != want.StatusCode || gotBody != wantBody {
			t.Errorf("request %d %q:\n got %d %q\nwant %d %q", i, req, got.StatusCode, gotBody, want.StatusCode, wantBody)
		}
		for _, h := range []string{"Content-Type", "Content-Length", "Access-Control-Allow-Origin", "Allow", "Connection"} {
			if g, w := got.Header.Get(h), want.Header.Get(h); g != w {
				t.Errorf("request %d %q: header %s = %q, want %q", i, req, h, g, w)
			}
		}
		if got.Header.Get("Date") == "" {
			t.Errorf("request %d: no Date header", i)
		}
	}
}

// A request head that arrives in pieces, and pipelined requests, are both
// answered in order on the same connection.
func TestServeFastSplitAndPipelined(t *testing.T) {
	s := testServer()
	addr, _ := startFast(t, s, HTTPOptions{})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	req := post(`{"jsonrpc":"2.0","id":7,"method":"test_add","params":[3,4]}`)
	for _, cut := range []int{5, 20, len(req) - 3} {
		conn.SetDeadline(time.Now().Add(30 * time.Second))
		io.WriteString(conn, req[:cut])
		time.Sleep(20 * time.Millisecond)
		io.WriteString(conn, req[cut:])
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b := readBody(t, resp); b != `{"jsonrpc":"2.0","id":7,"result":7}` {
			t.Fatalf("cut %d: %s", cut, b)
		}
	}
	var pipelined strings.Builder
	for i := 0; i < 5; i++ {
		pipelined.WriteString(post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"test_add","params":[%d,1]}`, i, i)))
	}
	io.WriteString(conn, pipelined.String())
	for i := 0; i < 5; i++ {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b, want := readBody(t, resp), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%d}`, i, i+1); b != want {
			t.Fatalf("pipelined %d: %s, want %s", i, b, want)
		}
	}
}

// Many concurrent keep-alive clients through net/http's client (run with -race).
func TestServeFastConcurrent(t *testing.T) {
	s := testServer()
	addr, _ := startFast(t, s, HTTPOptions{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 30 * time.Second}
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		go func(w int) {
			for i := 0; i < 100; i++ {
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"test_add","params":[%d,%d]}`, i, w, i)
				resp, err := client.Post("http://"+addr, "application/json", strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%d}`, i, w+i); string(b) != want {
					errs <- fmt.Errorf("got %s, want %s", b, want)
					return
				}
			}
			errs <- nil
		}(w)
	}
	for w := 0; w < 8; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// Shutdown closes idle fast-path connections and stops accepting.
func TestServeFastShutdown(t *testing.T) {
	s := testServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := s.HTTPHandler(HTTPOptions{})
	srv := &http.Server{Handler: h}
	done := make(chan error, 1)
	go func() { done <- h.Serve(ln, srv) }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	resp := rawExchange(t, conn, br, post(`{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,1]}`))
	readBody(t, resp)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, http.ErrServerClosed) {
			t.Fatalf("ServeFast: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeFast still running")
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("idle connection still open after shutdown")
	}
}

// srv.Close (not only Shutdown) stops the fast path.
func TestServeFastClose(t *testing.T) {
	s := testServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := s.HTTPHandler(HTTPOptions{})
	srv := &http.Server{Handler: h}
	done := make(chan error, 1)
	go func() { done <- h.Serve(ln, srv) }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	readBody(t, rawExchange(t, conn, bufio.NewReader(conn), post(`{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,1]}`)))
	srv.Close()
	select {
	case err := <-done:
		if !errors.Is(err, http.ErrServerClosed) {
			t.Fatalf("ServeFast: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeFast still running after Close")
	}
}

// A websocket upgrade is handed to net/http, hijacked there and served as
// JSON-RPC; plain POSTs on other connections keep the fast path.
func TestServeFastWebSocketHandoff(t *testing.T) {
	s := testServer()
	ws := s.WSHandler(WSOptions{})
	defer ws.Close()
	addr, _ := startFast(t, s, HTTPOptions{Other: ws})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":3,"method":"test_add","params":[2,5]}`)); err != nil {
		t.Fatal(err)
	}
	_, msg, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(msg) != `{"jsonrpc":"2.0","id":3,"result":7}` {
		t.Fatalf("websocket answer %s", msg)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp := rawExchange(t, conn, bufio.NewReader(conn), post(`{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,1]}`))
	if b := readBody(t, resp); b != `{"jsonrpc":"2.0","id":1,"result":2}` {
		t.Fatalf("POST answer %s", b)
	}
}

// Connections are answered whether they wait in arrival order (more open
// connections than orderFrom) or in the netpoller (fewer), and across the
// change both ways: many open, then all but one closed, then many again.
func TestServeFastOrderedAndNot(t *testing.T) {
	s := testServer()
	addr, _ := startFast(t, s, HTTPOptions{})
	type conn struct {
		c  net.Conn
		rw *bufio.ReadWriter
	}
	open := func(n int) []conn {
		var cs []conn
		for range n {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			c.SetDeadline(time.Now().Add(10 * time.Second))
			cs = append(cs, conn{c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c))})
		}
		return cs
	}
	ask := func(cs []conn, rounds int) {
		t.Helper()
		for r := range rounds {
			for _, c := range cs {
				c.rw.WriteString(post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"test_echo","params":["x"]}`, r)))
				c.rw.Flush()
			}
			for i, c := range cs {
				resp, err := http.ReadResponse(c.rw.Reader, nil)
				if err != nil {
					t.Fatalf("round %d, conn %d of %d: %v", r, i, len(cs), err)
				}
				if b := readBody(t, resp); !strings.Contains(b, `"x"`) {
					t.Fatalf("round %d, conn %d: %s", r, i, b)
				}
			}
		}
	}
	many := open(2*runtime.GOMAXPROCS(0) + 3)
	ask(many, 20) // ordered
	for _, c := range many[1:] {
		c.c.Close()
	}
	time.Sleep(100 * time.Millisecond) // the server sees the closes
	ask(many[:1], 20)                  // one left: in the netpoller
	more := append(many[:1], open(2*runtime.GOMAXPROCS(0)+3)...)
	ask(more, 20) // ordered again, the first connection included
}

// TestValidHeaderName: the table gives RFC 9110's token characters, as
// net/http accepts them in a field name.
func TestValidHeaderName(t *testing.T) {
	for c := 0; c < 256; c++ {
		want := c > ' ' && c < 0x7f && !strings.ContainsRune(`()<>@,;:\"/[]?={}`, rune(c))
		if got := validHeaderName([]byte{byte(c)}); got != want {
			t.Errorf("byte %#x: valid %v, want %v", c, got, want)
		}
	}
	for name, want := range map[string]bool{"Content-Type": true, "X-Odd_1.2~!#$%&'*+^`|": true, "": true, "Bad Name": false, "Bad\tName": false, "Na:me": false, "Ümlaut": false} {
		if got := validHeaderName([]byte(name)); got != want {
			t.Errorf("%q: valid %v, want %v", name, got, want)
		}
	}
}
