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
	"strings"
	"sync"
	"testing"
	"time"
)

// limitServer has methods that wait for their context (test_wait) and
// answer a large result (test_big, size in bytes).
func limitServer(opts Options) (*Server, chan error) {
	s := NewServer(opts)
	ended := make(chan error, 16)
	s.Register("test_wait", func(ctx context.Context, _ Params) (any, error) {
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return nil, &ServerError{Msg: ctx.Err().Error()}
	})
	s.Register("test_big", func(_ context.Context, p Params) (any, error) {
		var n int
		if err := p.Required(0, &n); err != nil {
			return nil, err
		}
		return strings.Repeat("x", n), nil
	})
	s.Register("debug_thing", func(context.Context, Params) (any, error) { return true, nil })
	s.Register("eth_thing", func(context.Context, Params) (any, error) { return true, nil })
	return s, ended
}

func decode(t *testing.T, b []byte) response {
	t.Helper()
	var r response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("answer %s: %v", b, err)
	}
	return r
}

func wantError(t *testing.T, b []byte, code int, msg string) {
	t.Helper()
	r := decode(t, b)
	if r.Error == nil || r.Error.Code != code || !strings.Contains(r.Error.Message, msg) {
		t.Fatalf("answer %s, want error %d containing %q", b, code, msg)
	}
}

// Past the deadline a call answers -32002 "request timed out", on every
// transport; the handler's context ended with the timeout as its cause.
func TestRequestDeadline(t *testing.T) {
	s, ended := limitServer(Options{Timeout: 100 * time.Millisecond})
	call := `{"jsonrpc":"2.0","id":1,"method":"test_wait"}`
	check := func(name string, answer []byte) {
		t.Helper()
		wantError(t, answer, CodeTimeout, "request timed out")
		if cause := <-ended; !errors.Is(cause, ErrRequestTimeout) {
			t.Fatalf("%s: handler's context ended with %v", name, cause)
		}
	}
	check("Handle", s.Handle(context.Background(), []byte(call)))

	ws := s.WSHandler(WSOptions{})
	defer ws.Close()
	addr, _ := startFast(t, s, HTTPOptions{Other: ws})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	check("fast path", []byte(readBody(t, rawExchange(t, conn, bufio.NewReader(conn), post(call)))))
	// net/http ("Connection: close" is handed over).
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	check("net/http", []byte(readBody(t, rawExchange(t, c2, bufio.NewReader(c2), post(call, "Connection: close")))))
	c := dial(t, "ws://"+addr+"/")
	send(t, c, call)
	m := recv(t, c)
	if m.Error == nil || m.Error.Code != CodeTimeout {
		t.Fatalf("websocket answer %+v", m)
	}
	if cause := <-ended; !errors.Is(cause, ErrRequestTimeout) {
		t.Fatalf("websocket: handler's context ended with %v", cause)
	}
	// In a batch, calls reached after the deadline are not started.
	batch := s.Handle(context.Background(), []byte(`[`+call+`,{"jsonrpc":"2.0","id":2,"method":"eth_thing"}]`))
	var answers []response
	if err := json.Unmarshal(batch, &answers); err != nil || len(answers) != 2 {
		t.Fatalf("batch answer %s", batch)
	}
	for _, a := range answers {
		if a.Error == nil || a.Error.Code != CodeTimeout {
			t.Fatalf("batch answer %s", batch)
		}
	}
	<-ended
}

// A fast-path client that disconnects cancels its request.
func TestClientGoneCancels(t *testing.T) {
	s, ended := limitServer(Options{Timeout: time.Minute})
	addr, _ := startFast(t, s, HTTPOptions{})
	for _, extra := range [][]string{nil, {"Connection: close"}} { // fast path, net/http
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte(post(`{"jsonrpc":"2.0","id":1,"method":"test_wait"}`, extra...))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * watchAfter)
		conn.Close()
		select {
		case cause := <-ended:
			if errors.Is(cause, ErrRequestTimeout) {
				t.Fatalf("%v: cancelled by the deadline, not the client leaving", extra)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: request still running after its client left", extra)
		}
	}
}

// A pipelined request read by the watcher is answered, not lost.
func TestWatcherKeepsPipelinedRequest(t *testing.T) {
	s := NewServer(Options{})
	s.Register("test_slow", func(context.Context, Params) (any, error) {
		time.Sleep(3 * watchAfter)
		return "slow", nil
	})
	s.Register("test_fast", func(context.Context, Params) (any, error) { return "fast", nil })
	addr, _ := startFast(t, s, HTTPOptions{})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	conn.Write([]byte(post(`{"jsonrpc":"2.0","id":1,"method":"test_slow"}`)))
	time.Sleep(2 * watchAfter) // the watcher is reading now
	for i, want := range []string{`"slow"`, `"fast"`} {
		if i == 0 {
			conn.Write([]byte(post(`{"jsonrpc":"2.0","id":2,"method":"test_fast"}`)))
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := httpReadResponse(br)
		if err != nil {
			t.Fatal(err)
		}
		if r := decode(t, []byte(resp)); string(r.Result) != want {
			t.Fatalf("answer %d: %s, want %s", i, resp, want)
		}
	}
}

func TestResponseSizeCap(t *testing.T) {
	s, _ := limitServer(Options{MaxResponseSize: 1000})
	ok := s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"test_big","params":[900]}`))
	if r := decode(t, ok); r.Error != nil {
		t.Fatalf("answer under the cap refused: %s", ok)
	}
	big := s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":7,"method":"test_big","params":[2000]}`))
	wantError(t, big, CodeLimitExceeded, "--rpc.max-response-size")
	if r := decode(t, big); string(r.ID) != "7" {
		t.Fatalf("error lost the id: %s", big)
	}
	batch := s.Handle(context.Background(), []byte(`[{"jsonrpc":"2.0","id":1,"method":"test_big","params":[600]},{"jsonrpc":"2.0","id":2,"method":"test_big","params":[600]}]`))
	wantError(t, batch, CodeLimitExceeded, "response too large")
	if got := ResponseLimit(s.withLimits(context.Background())); got != 1000 {
		t.Fatalf("ResponseLimit = %d", got)
	}
}

// The namespace filter serves the listed namespaces only; the server's
// namespaces are those registered, served or not.
func TestNamespaces(t *testing.T) {
	s, _ := limitServer(Options{Namespaces: []string{"eth"}})
	if !s.Has("eth_thing") || s.Has("debug_thing") || s.Has("test_big") {
		t.Fatal("namespace filter not applied")
	}
	wantError(t, s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"debug_thing"}`)), CodeMethodNotFound, "does not exist")
	if got := strings.Join(s.Namespaces(), ","); got != "debug,eth,test" {
		t.Fatalf("Namespaces() = %s, want debug,eth,test", got)
	}
	if got := strings.Join(NewServer(Options{}).Namespaces(), ","); got != "" {
		t.Fatalf("an empty server has namespaces %s", got)
	}
}

// A fallback answers methods not registered, in the served namespaces
// only, and declines by returning nil.
func TestFallback(t *testing.T) {
	s, _ := limitServer(Options{Namespaces: []string{"eth"}})
	var asked []string
	s.SetFallback(func(method string) Handler {
		asked = append(asked, method)
		if method == "eth_declined" {
			return nil
		}
		return func(context.Context, Params) (any, error) { return "forwarded " + method, nil }
	})
	call := func(method string) []byte {
		return s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"`+method+`"}`))
	}
	if got := string(call("eth_other")); !strings.Contains(got, `"forwarded eth_other"`) {
		t.Fatalf("eth_other: %s", got)
	}
	wantError(t, call("debug_other"), CodeMethodNotFound, "does not exist")
	wantError(t, call("eth_declined"), CodeMethodNotFound, "does not exist")
	if got := string(call("eth_thing")); strings.Contains(got, "forwarded") {
		t.Fatalf("a registered method went to the fallback: %s", got)
	}
	if strings.Join(asked, ",") != "eth_other,eth_declined" {
		t.Fatalf("fallback asked for %v", asked)
	}
}

// Throttled methods run at most MaxThrottled at once; a waiting call gives
// up at its deadline.
func TestThrottle(t *testing.T) {
	release := make(chan struct{})
	var running, peak int
	var mu sync.Mutex
	s := NewServer(Options{Throttled: []string{"debug_trace"}, MaxThrottled: 2, Timeout: 2 * time.Second})
	s.Register("debug_trace", func(ctx context.Context, _ Params) (any, error) {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		select {
		case <-release:
		case <-ctx.Done():
		}
		mu.Lock()
		running--
		mu.Unlock()
		return true, nil
	})
	var wg sync.WaitGroup
	answers := make([][]byte, 5)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"debug_trace"}`))
		}()
	}
	time.Sleep(200 * time.Millisecond)
	close(release)
	wg.Wait()
	if peak != 2 {
		t.Fatalf("%d ran at once, want 2", peak)
	}
	for _, a := range answers {
		if r := decode(t, a); r.Error != nil {
			t.Fatalf("answer %s", a)
		}
	}
	// A call that cannot get a slot before its deadline times out.
	block := make(chan struct{})
	s2 := NewServer(Options{Throttled: []string{"debug_trace"}, MaxThrottled: 1, Timeout: 100 * time.Millisecond})
	s2.Register("debug_trace", func(ctx context.Context, _ Params) (any, error) { <-block; return true, nil })
	go s2.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"debug_trace"}`))
	time.Sleep(50 * time.Millisecond)
	wantError(t, s2.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":2,"method":"debug_trace"}`)), CodeTimeout, "timed out")
	close(block)
}

// Drain waits for a request in flight; past its own deadline it cancels
// the fast path's requests (net/http's and websockets' end with their
// connections).
func TestDrain(t *testing.T) {
	s, ended := limitServer(Options{Timeout: time.Minute})
	addr, _ := startFast(t, s, HTTPOptions{})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.Write([]byte(post(`{"jsonrpc":"2.0","id":1,"method":"test_wait"}`)))
	for s.InFlight() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Drain(ctx); err == nil {
		t.Fatal("Drain returned nil with a request running")
	}
	if cause := <-ended; !errors.Is(cause, context.Canceled) {
		t.Fatalf("request ended with %v, want cancelled by the drain", cause)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := httpReadResponse(bufio.NewReader(conn)); err != nil {
		t.Fatalf("aborted request got no answer: %v", err)
	}
	if err := s.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A call that arrives once Drain has begun (over a websocket, or read by
// the fast path as its listener closed) is refused, not run: when Drain
// returns no handler is running, so the node may close what they read.
func TestDrainRefusesNewCalls(t *testing.T) {
	s := NewServer(Options{Timeout: time.Minute})
	release, ran := make(chan struct{}), make(chan string, 4)
	s.Register("test_hold", func(context.Context, Params) (any, error) { <-release; return true, nil })
	s.Register("test_read", func(context.Context, Params) (any, error) { ran <- "test_read"; return true, nil })
	held := make(chan []byte, 1)
	go func() {
		held <- s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"test_hold"}`))
	}()
	for s.InFlight() == 0 {
		time.Sleep(time.Millisecond)
	}
	drained := make(chan error, 1)
	go func() { drained <- s.Drain(context.Background()) }()
	for !s.draining.Load() {
		time.Sleep(time.Millisecond)
	}
	wantError(t, s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":2,"method":"test_read"}`)), CodeServer, "shutting down")
	b := s.Handle(context.Background(), []byte(`[{"jsonrpc":"2.0","id":3,"method":"test_read"}]`))
	if !strings.Contains(string(b), "shutting down") {
		t.Fatalf("batch during drain: %s", b)
	}
	select {
	case m := <-ran:
		t.Fatalf("%s ran during the drain", m)
	default:
	}
	close(release)
	if r := decode(t, <-held); r.Error != nil {
		t.Fatalf("the call in flight was not answered: %+v", r.Error)
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
}

// httpReadResponse reads one response's body as a string.
func httpReadResponse(br *bufio.Reader) (string, error) {
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// Zero is the default; NoTimeout and NoResponseCap lift the limits: no
// deadline on the handler's context, no cap on an answer above the default.
func TestLimitsDefaultAndNone(t *testing.T) {
	for _, tc := range []struct {
		name         string
		opts         Options
		wantDeadline bool
		bigOK        bool
	}{
		{"zero: the defaults", Options{}, true, false},
		{"none", Options{Timeout: NoTimeout, MaxResponseSize: NoResponseCap}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := limitServer(tc.opts)
			s.Register("test_deadline", func(ctx context.Context, _ Params) (any, error) {
				_, ok := ctx.Deadline()
				return ok, nil
			})
			r := decode(t, s.Handle(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"test_deadline"}`)))
			if got := string(r.Result) == "true"; got != tc.wantDeadline {
				t.Errorf("deadline set: %s, want %v", r.Result, tc.wantDeadline)
			}
			big := s.Handle(context.Background(), []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"test_big","params":[%d]}`, DefaultMaxResponseSize+10)))
			if r := decode(t, big); (r.Error == nil) != tc.bigOK {
				t.Errorf("answer of %d bytes: error %v, want accepted %v", DefaultMaxResponseSize+10, r.Error, tc.bigOK)
			}
		})
	}
}
