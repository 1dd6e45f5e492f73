package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// sleepServer has test_sleep, a handler that ignores its context: it
// returns only once released, and then closes returned.
func sleepServer(t *testing.T, timeout time.Duration) (s *Server, release func(), returned chan struct{}) {
	s = NewServer(Options{Timeout: timeout})
	ch := make(chan struct{})
	returned = make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(release) // a failing test leaves no handler behind
	s.Register("test_sleep", func(context.Context, Params) (any, error) {
		<-ch
		close(returned)
		return "slept", nil
	})
	s.Register("test_now", func(context.Context, Params) (any, error) { return true, nil })
	return s, release, returned
}

// stillRunning fails unless the handler has not returned: the answer just
// read came at the deadline, not after the handler.
func stillRunning(t *testing.T, returned chan struct{}) {
	t.Helper()
	select {
	case <-returned:
		t.Fatal("answered after the handler returned, not at the deadline")
	default:
	}
}

// A handler that ignores its context does not hold the answer past the
// deadline: the call is answered -32002 at the deadline, while its handler
// runs on, on the fast path, on net/http and on a websocket; in a batch,
// the calls done keep their answers.
func TestDeadlineAnswersBeforeHandler(t *testing.T) {
	const timeout = 100 * time.Millisecond
	single := `{"jsonrpc":"2.0","id":1,"method":"test_sleep"}`
	batch := `[{"jsonrpc":"2.0","id":1,"method":"test_now"},{"jsonrpc":"2.0","id":2,"method":"test_sleep"},` +
		`{"jsonrpc":"2.0","method":"test_now"},{"jsonrpc":"2.0","id":3,"method":"test_now"}]`
	wantBatch := `[{"jsonrpc":"2.0","id":1,"result":true},` +
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"request timed out"}},` +
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32002,"message":"request timed out"}}]`
	wantSingle := `{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"request timed out"}}`
	for _, tc := range []struct {
		name        string
		netHTTPOnly bool
		extra       []string // request headers
	}{
		{"fast path", false, nil},
		{"net/http, handed over", false, []string{"Connection: keep-alive, x"}},
		{"net/http only", true, nil},
	} {
		for _, req := range []struct{ name, body, want string }{{"call", single, wantSingle}, {"batch", batch, wantBatch}} {
			t.Run(tc.name+"/"+req.name, func(t *testing.T) {
				s, release, returned := sleepServer(t, timeout)
				addr, _ := startFast(t, s, HTTPOptions{DisableFastPath: tc.netHTTPOnly})
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				br := bufio.NewReader(conn)
				resp := rawExchange(t, conn, br, post(req.body, tc.extra...))
				got := readBody(t, resp)
				stillRunning(t, returned)
				if got != req.want {
					t.Fatalf("answer %s, want %s", got, req.want)
				}
				if !resp.Close {
					t.Fatal("answer at the deadline keeps the connection open: the next request would wait for the handler")
				}
				release()
				<-returned
				// The connection closes once the handler returned.
				conn.SetReadDeadline(time.Now().Add(30 * time.Second))
				if n, err := br.Read(make([]byte, 1)); err != io.EOF {
					t.Fatalf("connection after the handler returned: read %d, %v; want EOF", n, err)
				}
			})
		}
	}
	t.Run("websocket", func(t *testing.T) {
		s, release, returned := sleepServer(t, timeout)
		_, url := startWS(t, s, WSOptions{})
		c := dial(t, url)
		send(t, c, single)
		m := recv(t, c)
		stillRunning(t, returned)
		if m.Error == nil || m.Error.Code != CodeTimeout || string(m.ID) != "1" {
			t.Fatalf("websocket answer %+v", m)
		}
		// The connection serves on while the handler runs.
		send(t, c, `{"jsonrpc":"2.0","id":5,"method":"test_now"}`)
		if m := recv(t, c); string(m.ID) != "5" || string(m.Result) != "true" {
			t.Fatalf("next call's answer %+v", m)
		}
		release()
		<-returned
		// The handler's own answer is dropped: the next message is the
		// next call's.
		send(t, c, `{"jsonrpc":"2.0","id":6,"method":"test_now"}`)
		if m := recv(t, c); string(m.ID) != "6" {
			t.Fatalf("after the handler returned: %+v", m)
		}
	})
}

// What runs on after the deadline's answer counts against the limits it
// ran under: an HTTP connection stays in use under MaxConnections (a new
// one is refused 503) and a websocket call keeps its slot (the next call
// waits for it), until the handler returns.
func TestDeadlineBackgroundBounded(t *testing.T) {
	bothPaths(t, func(t *testing.T, netHTTPOnly bool) {
		s, release, returned := sleepServer(t, 100*time.Millisecond)
		addr, _ := startFast(t, s, HTTPOptions{MaxConnections: 1, DisableFastPath: netHTTPOnly})
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		br := bufio.NewReader(conn)
		wantError(t, []byte(readBody(t, rawExchange(t, conn, br, post(`{"jsonrpc":"2.0","id":1,"method":"test_sleep"}`)))), CodeTimeout, "timed out")
		c2, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close()
		resp := rawExchange(t, c2, bufio.NewReader(c2), post(`{"jsonrpc":"2.0","id":2,"method":"test_now"}`))
		readBody(t, resp)
		stillRunning(t, returned)
		if resp.StatusCode != 503 {
			t.Fatalf("a new connection while the handler runs on: %d, want 503", resp.StatusCode)
		}
		release()
		<-returned
		// Served once the handler returned and its connection closed.
		br.Read(make([]byte, 1))
		for {
			c3, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			resp := rawExchange(t, c3, bufio.NewReader(c3), post(`{"jsonrpc":"2.0","id":3,"method":"test_now"}`))
			body := readBody(t, resp)
			c3.Close()
			if resp.StatusCode == 200 {
				if body != `{"jsonrpc":"2.0","id":3,"result":true}` {
					t.Fatalf("answer %s", body)
				}
				break
			}
			time.Sleep(10 * time.Millisecond) // the closed connection's slot is released on its close
		}
	})
	t.Run("websocket", func(t *testing.T) {
		s, release, returned := sleepServer(t, 100*time.Millisecond)
		_, url := startWS(t, s, WSOptions{Parallel: 1})
		c := dial(t, url)
		send(t, c, `{"jsonrpc":"2.0","id":1,"method":"test_sleep"}`)
		if m := recv(t, c); m.Error == nil || m.Error.Code != CodeTimeout {
			t.Fatalf("answer %+v", m)
		}
		send(t, c, `{"jsonrpc":"2.0","id":2,"method":"test_now"}`)
		got := make(chan wsMsg, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, data, err := c.Read(ctx)
			var m wsMsg
			if err == nil {
				json.Unmarshal(data, &m)
			}
			got <- m
		}()
		// The second call cannot start while the first's handler runs:
		// releasing it is what lets the answer come.
		select {
		case m := <-got:
			t.Fatalf("answered %+v while the only call slot was held", m)
		case <-time.After(50 * time.Millisecond):
		}
		release()
		if m := <-got; string(m.ID) != "2" || !strings.Contains(string(m.Result), "true") {
			t.Fatalf("second call: %+v", m)
		}
		<-returned
	})
}

// The call running at the deadline is counted once in its method's metrics
// (by its handler, when it returns), not also by the deadline's answer;
// the calls after it, answered -32002 without running, once each; the
// timeouts counter once per -32002 answer.
func TestDeadlineCountsRunningCallOnce(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		sleep, now float64 // test_sleep's and test_now's requests counted
		timeouts   float64
	}{
		{"call", `{"jsonrpc":"2.0","id":1,"method":"test_sleep"}`, 1, 0, 1},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"test_now"},{"jsonrpc":"2.0","id":2,"method":"test_sleep"},` +
			`{"jsonrpc":"2.0","id":3,"method":"test_now"}]`, 1, 2, 2},
		{"batch, running notification", `[{"jsonrpc":"2.0","method":"test_sleep"},{"jsonrpc":"2.0","id":3,"method":"test_now"}]`, 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, release, returned := sleepServer(t, 50*time.Millisecond)
			answered := make(chan string, 1)
			done := make(chan bool, 1)
			go func() {
				var buf bytes.Buffer
				done <- s.handleBy(context.Background(), []byte(tc.body), &buf, func(b []byte) { answered <- string(b) })
			}()
			got := <-answered
			stillRunning(t, returned)
			if !strings.Contains(got, `"code":-32002`) {
				t.Fatalf("deadline's answer %s", got)
			}
			release()
			if <-done {
				t.Fatal("handleBy's answer stands after the deadline answered")
			}
			for method, want := range map[string]float64{"test_sleep": tc.sleep, "test_now": tc.now} {
				if n := testutil.ToFloat64(s.metrics.requests.WithLabelValues(method)); n != want {
					t.Errorf("%s counted %v times, want %v", method, n, want)
				}
			}
			if n := testutil.ToFloat64(s.metrics.timeouts); n != tc.timeouts {
				t.Errorf("timeouts %v, want %v", n, tc.timeouts)
			}
		})
	}
}
