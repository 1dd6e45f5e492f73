package rpc

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fuzzPair is a fast-path server and a plain net/http server with the same
// handler and options, started once per fuzzing process.
var fuzzPair struct {
	once       sync.Once
	fast, slow string
}

func startFuzzPair(t *testing.T) (fast, plain string) {
	fuzzPair.once.Do(func() {
		s := testServer()
		opts := HTTPOptions{MaxBody: 1024, CORSOrigins: []string{"https://ok.example"}, Hosts: NewHostAllowList([]string{"x", "localhost"})}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		h := s.HTTPHandler(opts)
		go h.Serve(ln, h.NewServer(h))
		pl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		go h.NewServer(h).Serve(pl)
		fuzzPair.fast, fuzzPair.slow = ln.Addr().String(), pl.Addr().String()
	})
	return fuzzPair.fast, fuzzPair.slow
}

// exchange sends raw bytes and describes every response that arrives
// within a short window (status, body and headers but Date), then whether
// the server closed the connection.
func exchange(t *testing.T, addr string, raw []byte) string {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(raw); err != nil {
		return "write failed"
	}
	var out strings.Builder
	br := bufio.NewReader(conn)
	for {
		conn.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				out.WriteString("(open)")
			} else {
				out.WriteString("(closed)")
			}
			return out.String()
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(&out, "%d %q", resp.StatusCode, body)
		for _, h := range []string{"Content-Type", "Content-Length", "Connection", "Allow", "Access-Control-Allow-Origin", "Vary"} {
			fmt.Fprintf(&out, " %s=%q", h, resp.Header.Values(h))
		}
		out.WriteString("\n")
	}
}

// FuzzServeFast sends arbitrary bytes to the fast path and to net/http
// serving the same handler: the answers (or the silence, or the close) must
// be the same. The fast path either answers exactly as net/http would or
// hands the connection over.
func FuzzServeFast(f *testing.F) {
	valid := `{"jsonrpc":"2.0","id":1,"method":"test_add","params":[1,2]}`
	for _, seed := range []string{
		post(valid),
		post(valid) + post(`[`+valid+`]`),
		post(`{"jsonrpc":"2.0","method":"test_add","params":[1,2]}`),
		post(`{`),
		post(valid, "Origin: https://ok.example"),
		post(valid, "Connection: close"),
		post(valid, "X-Odd: a\x01b"),
		post(strings.Repeat("a", 2000)),
		"POST / HTTP/1.1\r\nHost: evil\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n{}",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
		"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST / HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		"\r\n\r\n",
		"garbage",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, plain := startFuzzPair(t)
		got, want := exchange(t, fast, raw), exchange(t, plain, raw)
		if got != want {
			t.Fatalf("request %q:\nfast path: %s\nnet/http:  %s", raw, got, want)
		}
	})
}

// TestServeFastOddHeads: heads at the edges of what the fast path takes —
// whitespace around values, a bad byte on the last header line (which
// fastPrefix checks since readHead stopped checking lines again), bare LF
// and lone CR, folded lines, bad names — are answered as net/http answers
// them (or handed to it).
func TestServeFastOddHeads(t *testing.T) {
	fast, plain := startFuzzPair(t)
	const (
		start = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
		body  = "{}"
	)
	for _, head := range []string{
		start + "\r\n",
		start + "X-A:\t b \t\r\n\r\n",
		start + "X-A:\r\n\r\n",
		start + "X-A: a\x01b\r\n\r\n",
		start + "X-A: a\x7fb\r\n\r\n",
		start + "X-A: a\rb\r\n\r\n",
		start + "X-A: a\r\r\n\r\n",
		start + "X-A: a\nX-B: b\r\n\r\n",
		start + "X-A: a\r\n folded\r\n\r\n",
		start + "Bad Name: a\r\n\r\n",
		start + ": a\r\n\r\n",
		start + "X-Ü: a\r\n\r\n",
		start + "NoColon\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length:  2 \r\n\r\n",
		"POST / HTTP/1.1\r\nHost:\tx\r\ncontent-type: application/json\r\nCONTENT-LENGTH: 2\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nX-Last: \x00\r\n\r\n",
	} {
		raw := []byte(head + body)
		if got, want := exchange(t, fast, raw), exchange(t, plain, raw); got != want {
			t.Errorf("head %q:\nfast path: %s\nnet/http:  %s", head, got, want)
		}
	}
}
