package shape

import (
	"net"
	"testing"
	"time"

	"github.com/preconf/preconf/bench/internal/load"
)

// TestShapeConn checks that the -shape server answers each keep-alive
// request (bodies of any length, header names in any case) in turn.
func TestShapeConn(t *testing.T) {
	srv, cli := net.Pipe()
	answer := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	go shapeConn(srv, answer, time.Microsecond)
	defer cli.Close()
	c := load.NewClient(cli)
	for _, req := range []string{
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
		"POST / HTTP/1.1\r\ncontent-length: 0\r\n\r\n",
		"POST / HTTP/1.1\r\nCONTENT-LENGTH: 3\r\nX: y\r\n\r\nabc",
	} {
		body, err := c.Do([]byte(req))
		if err != nil || string(body) != "ok" {
			t.Fatalf("request %q: body %q, %v", req, body, err)
		}
	}
}
