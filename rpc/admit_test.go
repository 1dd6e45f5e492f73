package rpc

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fakeConn is an accepted connection for connTable: an address, and what
// was done to it.
type fakeConn struct {
	net.Conn
	remote           net.Addr
	readShut, closed bool
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.remote }
func (c *fakeConn) CloseRead() error     { c.readShut = true; return nil }
func (c *fakeConn) Close() error         { c.closed = true; return nil }

var (
	remoteAddr   = &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5000}
	loopbackAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5000}
)

// At the cap a connection takes the longest-idle one's place; only when
// every one is in use is it refused, unless it comes from loopback and
// fits in the health reserve (where the longest-idle is evicted in turn).
func TestConnTableAdmit(t *testing.T) {
	type step struct {
		op   string // "open", "busy" (begin), "idle" (end), "close"
		conn int    // index of the connection opened by an earlier step
		from net.Addr
		// For "open": the connection it evicts (-1: none), whether it is
		// refused, or admitted into the health reserve.
		evicts     int
		refused    bool
		healthOnly bool
	}
	open := func(from net.Addr, evicts int) step { return step{op: "open", from: from, evicts: evicts} }
	for _, tc := range []struct {
		name  string
		max   int
		steps []step
	}{
		{"under the cap", 2, []step{open(remoteAddr, -1), open(remoteAddr, -1)}},
		{"the longest idle makes room", 2, []step{
			open(remoteAddr, -1), open(remoteAddr, -1),
			{op: "busy", conn: 1}, {op: "idle", conn: 1}, // 1 answered a request after 0 was opened: 0 is idle longest
			open(remoteAddr, 0), open(remoteAddr, 1),
		}},
		{"busy ones are kept", 2, []step{
			open(remoteAddr, -1), open(remoteAddr, -1), {op: "busy", conn: 0},
			open(remoteAddr, 1), open(remoteAddr, 2), {op: "busy", conn: 3},
			{op: "open", from: remoteAddr, refused: true},
		}},
		{"a closed one frees its place", 1, []step{
			open(remoteAddr, -1), {op: "busy", conn: 0}, {op: "close", conn: 0}, open(remoteAddr, -1),
		}},
		{"loopback health checks past the cap", 1, []step{
			open(loopbackAddr, -1), {op: "busy", conn: 0},
			{op: "open", from: remoteAddr, refused: true},
			{op: "open", from: loopbackAddr, evicts: -1, healthOnly: true},
		}},
		{"the reserve evicts its longest idle", 1, func() []step {
			s := []step{open(loopbackAddr, -1), {op: "busy", conn: 0}}
			for range healthReserve {
				s = append(s, step{op: "open", from: loopbackAddr, evicts: -1, healthOnly: true})
			}
			s = append(s, step{op: "open", from: loopbackAddr, evicts: 1, healthOnly: true})
			for i := 2; i <= healthReserve+1; i++ { // the reserve, all in use
				s = append(s, step{op: "busy", conn: i})
			}
			return append(s, step{op: "open", from: loopbackAddr, refused: true})
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMetrics(prometheus.NewRegistry())
			table := newConnTable(tc.max, m)
			var conns []*fakeConn
			var slots []*connSlot
			clock := time.Unix(1000, 0)
			for i, st := range tc.steps {
				clock = clock.Add(time.Second)
				switch st.op {
				case "open":
					c := &fakeConn{remote: st.from}
					shut := make([]bool, len(conns))
					for j, old := range conns {
						shut[j] = old.readShut
					}
					s := table.admit(c, clock)
					if (s == nil) != st.refused {
						t.Fatalf("step %d: refused %v, want %v", i, s == nil, st.refused)
					}
					if s == nil {
						continue
					}
					if s.healthOnly != st.healthOnly {
						t.Fatalf("step %d: health-only %v, want %v", i, s.healthOnly, st.healthOnly)
					}
					for j, old := range conns {
						if got, want := old.readShut && !shut[j], j == st.evicts; got != want {
							t.Fatalf("step %d: connection %d evicted %v, want %v", i, j, got, want)
						}
					}
					conns, slots = append(conns, c), append(slots, s)
				case "busy":
					if !slots[st.conn].begin() {
						t.Fatalf("step %d: connection %d was evicted", i, st.conn)
					}
				case "idle":
					slots[st.conn].end(clock)
				case "close":
					slots[st.conn].release()
					conns[st.conn].closed = true
				}
			}
			open := 0
			for i, s := range slots {
				if !s.released {
					open++
				} else if !conns[i].closed && !s.isEvicted() {
					t.Errorf("connection %d released but neither closed nor evicted", i)
				}
			}
			if got := int(table.open.Load()); got != open || testutil.ToFloat64(m.conns) != float64(open) {
				t.Errorf("open %d, gauge %v; want %d", got, testutil.ToFloat64(m.conns), open)
			}
		})
	}
}

// A connection in use cannot be evicted, and one evicted cannot be used:
// begin and eviction race for the same idle slot, and exactly one wins.
func TestSlotBeginOrEvict(t *testing.T) {
	for range 200 {
		table := newConnTable(1, NewMetrics(prometheus.NewRegistry()))
		c := &fakeConn{remote: remoteAddr}
		s := table.admit(c, time.Now())
		began := make(chan bool)
		go func() { began <- s.begin() }()
		next := table.admit(&fakeConn{remote: remoteAddr}, time.Now())
		b := <-began
		if ok := (b && next == nil && !c.readShut) || (!b && next != nil && c.readShut); !ok {
			t.Fatalf("began %v, next admitted %v, first evicted %v", b, next != nil, c.readShut)
		}
	}
}

// Idle connections of every kind make room for new ones at the cap, the
// longest idle first: one that sent nothing, a keep-alive one between
// requests on the fast path and on net/http, a websocket without
// subscriptions (closed with 1013). A websocket with a subscription is in
// use and stays.
func TestIdleConnectionsMakeRoom(t *testing.T) { bothPaths(t, testIdleConnectionsMakeRoom) }

func testIdleConnectionsMakeRoom(t *testing.T, netHTTPOnly bool) {
	const max = 5
	srv := NewServer(Options{})
	testSubs(srv, 0)
	ws := srv.WSHandler(WSOptions{})
	defer ws.Close()
	addr, _ := startFast(t, srv, HTTPOptions{MaxConnections: max, Other: ws, DisableFastPath: netHTTPOnly})
	call := post(`{"jsonrpc":"2.0","id":1,"method":"test_echo","params":["hi"]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dialRaw := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}
	dialWS := func() *websocket.Conn {
		c, _, err := websocket.Dial(ctx, "ws://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseNow() })
		return c
	}
	settle := func() { time.Sleep(20 * time.Millisecond) } // distinct idle times

	silent, silentR := dialRaw()
	settle()
	fast, fastR := dialRaw()
	readBody(t, rawExchange(t, fast, fastR, call))
	settle()
	plain, plainR := dialRaw()
	readBody(t, rawExchange(t, plain, plainR, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
	settle()
	idleWS := dialWS()
	settle()
	subWS := dialWS()
	send(t, subWS, `{"jsonrpc":"2.0","id":1,"method":"test_subscribe"}`)
	recv(t, subWS)
	settle()

	closed := func(name string, c net.Conn, br *bufio.Reader) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if b, err := br.ReadByte(); err == nil {
			t.Fatalf("%s: read %q, want the connection closed", name, b)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("%s: still open", name)
		}
	}
	var fresh []net.Conn
	for i, evicted := range []func(){
		func() { closed("silent", silent, silentR) },
		func() { closed("fast-path keep-alive", fast, fastR) },
		func() { closed("net/http keep-alive", plain, plainR) },
		func() {
			_, _, err := idleWS.Read(ctx)
			if st := websocket.CloseStatus(err); st != websocket.StatusTryAgainLater {
				t.Fatalf("idle websocket: %v, want close 1013", err)
			}
		},
		func() { closed("the first new one", fresh[0], bufio.NewReader(fresh[0])) },
	} {
		c, br := dialRaw()
		if b := readBody(t, rawExchange(t, c, br, call)); !strings.Contains(b, `"hi"`) {
			t.Fatalf("new connection %d: %s", i, b)
		}
		fresh = append(fresh, c)
		evicted()
		settle()
	}
	send(t, subWS, `{"jsonrpc":"2.0","id":2,"method":"test_echo","params":["still here"]}`)
	if m := recv(t, subWS); string(m.Result) != `"still here"` {
		t.Fatalf("subscribed websocket: %+v", m)
	}
	if got := testutil.ToFloat64(srv.metrics.evicted); got != 5 {
		t.Fatalf("%v evictions counted, want 5", got)
	}
	subWS.CloseNow() // ws.Close need not wait for its close handshake
}

// When every connection is in use, a new one is answered 503, but a
// loopback health check still gets through (and nothing else on that
// connection); once the requests end, new clients are served again.
func TestBusyConnectionsRefusedButHealthChecked(t *testing.T) {
	bothPaths(t, testBusyConnectionsRefused)
}

func testBusyConnectionsRefused(t *testing.T, netHTTPOnly bool) {
	s := testServer()
	release := make(chan struct{})
	running := make(chan struct{}, 2)
	s.Register("test_block", func(context.Context, Params) (any, error) {
		running <- struct{}{}
		<-release
		return true, nil
	})
	addr, _ := startFast(t, s, HTTPOptions{MaxConnections: 2, DisableFastPath: netHTTPOnly})
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, post(`{"jsonrpc":"2.0","id":1,"method":"test_block"}`))
		<-running
		held = append(held, c)
	}
	ask := func(req string) (int, string) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		io.WriteString(c, req)
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(req))) // HEAD's answer has no body
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), r)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, readBody(t, resp)
	}
	for _, tc := range []struct {
		name, req string
		status    int
	}{
		{"health", "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 200},
		{"health, HEAD", "HEAD /health HTTP/1.1\r\nHost: x\r\n\r\n", 200},
		{"JSON-RPC", post(`{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,1]}`), 503},
		{"another path", "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 503},
		{"health by POST", "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 503},
	} {
		if status, body := ask(tc.req); status != tc.status {
			t.Errorf("%s at the cap: %d %q, want %d", tc.name, status, body, tc.status)
		}
	}
	close(release)
	for _, c := range held {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || readBody(t, resp) != `{"jsonrpc":"2.0","id":1,"result":true}` {
			t.Fatalf("held request: %v", err)
		}
	}
	if status, body := ask(post(`{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,1]}`)); status != 200 {
		t.Fatalf("after the requests ended: %d %s", status, body)
	}
}
