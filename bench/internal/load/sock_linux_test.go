//go:build linux

package load

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The receive time of an answer is when the server wrote it, not when the
// generator read it: a server that answers 3 ms after the request, read
// 20 ms later, gives a time between the two.
func TestSockReaderStamp(t *testing.T) {
	srv, cli := loopbackPair(t)
	s := newSockReader(cli)
	if s == nil {
		t.Fatal("no timestamps on a TCP socket")
	}
	if !waitStamping(time.Second) { // the kernel turns stamping on later (sock_linux.go)
		t.Fatal("the kernel stamped no packet within a second")
	}
	sent := time.Now()
	s.mark()
	time.Sleep(3 * time.Millisecond)
	wrote := time.Now()
	srv.Write([]byte("answer"))
	time.Sleep(20 * time.Millisecond)
	buf := make([]byte, 64)
	n, err := s.Read(buf)
	if err != nil || string(buf[:n]) != "answer" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	got := time.Unix(0, s.stamp)
	if got.Before(wrote.Add(-time.Millisecond)) || got.After(wrote.Add(10*time.Millisecond)) || got.Sub(sent) < 3*time.Millisecond {
		t.Fatalf("stamp %v after the send, the write at %v", got.Sub(sent), wrote.Sub(sent))
	}
	srv.Close()
	if _, err := s.Read(buf); err != io.EOF {
		t.Fatalf("after close: %v, want EOF", err)
	}
}

// TestRunLoadSockLatency reports the node's part on its sampled connections.
func TestRunLoadSockLatency(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(2 * time.Millisecond)
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x1"}`))
	}))
	t.Cleanup(srv.Close)
	res, err := Run(Config{Addr: strings.TrimPrefix(srv.URL, "http://"), Conns: 2 * SockSample, Duration: 10 * time.Second,
		MaxRequests: 160, Bodies: [][]byte{[]byte(`{}`)}, Check: CheckCalls(1)})
	if err != nil || res.Errors != 0 {
		t.Fatalf("%v, %+v", err, res)
	}
	if res.SockP50 < 2*time.Millisecond || res.SockP99 < res.SockP50 || res.SockP50 > res.Max {
		t.Fatalf("in socket p50 %v p99 %v (total p50 %v max %v)", res.SockP50, res.SockP99, res.P50, res.Max)
	}
}

// loopbackPair returns a connected TCP pair (server side, client side).
func loopbackPair(t *testing.T) (srv, cli net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if cli, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	if srv, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close(); srv.Close() })
	return srv, cli
}

// A paced run stamps every connection; back to back, one in SockSample.
func TestRunLoadSockSampling(t *testing.T) {
	srv, _ := echoServer(t, "length", `{"jsonrpc":"2.0","id":1,"result":"0x1"}`)
	for _, tc := range []struct {
		think   time.Duration
		allConn bool
	}{
		{0, false},
		{time.Millisecond, true},
	} {
		res, err := Run(Config{Addr: strings.TrimPrefix(srv.URL, "http://"), Conns: 2 * SockSample, Duration: 10 * time.Second,
			MaxRequests: 160, Bodies: [][]byte{[]byte(`{}`)}, Check: CheckCalls(1), Think: tc.think})
		if err != nil || res.Errors != 0 {
			t.Fatalf("think %v: %v, %+v", tc.think, err, res)
		}
		if all := res.SockN == int(res.Requests); all != tc.allConn || res.SockN == 0 {
			t.Errorf("think %v: %d of %d answers stamped, want all %v", tc.think, res.SockN, res.Requests, tc.allConn)
		}
	}
}
