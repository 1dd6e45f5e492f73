package main

// -shape: the latency shape of Go's scheduler alone. A minimal HTTP/1.1
// server (one goroutine per keep-alive connection, a fixed answer after a
// busy loop of -shape-work) runs as a child process of this binary and is
// loaded like a node, so that preconf's p99-to-mean ratio can be compared
// with what the runtime gives any Go server (docs/bench.md, "Go's netpoll
// order"). With -pin it runs on the nodes' CPUs.

import (
	"bufio"
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"
)

var shapeOpts struct {
	Enabled bool
	Server  string // internal: serve on this address (the child process)
	Work    time.Duration
}

func addShapeFlags(fs *flag.FlagSet) {
	fs.BoolVar(&shapeOpts.Enabled, "shape", false, "load a minimal Go server (goroutine per connection, -shape-work of busy work a request) instead of the nodes, and print its latency shape")
	fs.DurationVar(&shapeOpts.Work, "shape-work", 50*time.Microsecond, "-shape: busy work per request")
	fs.StringVar(&shapeOpts.Server, "shape-server", "", "internal: run the -shape server on this address")
}

// runShape is -shape; the result is the exit code.
func runShape(o options, stdout, log io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(log, "bench:", err)
		return 1
	}
	e := &env{log: log}
	var layout string
	restore, err := pinIf(o.Pin, e, &layout)
	if err != nil {
		fmt.Fprintln(log, "bench:", err)
		return 1
	}
	defer restore()
	addr := fmt.Sprintf("127.0.0.1:%d", portPreconf)
	cmd := pinnedCommand(e.nodeCPUs, exe, []string{"-shape-server", addr, "-shape-work", shapeOpts.Work.String()})
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(log, "bench:", err)
		return 1
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if i == 100 {
			fmt.Fprintln(log, "bench: -shape server did not listen:", err)
			return 1
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(stdout, "-shape: %s of work a request, %d connections, layout: %s\n", shapeOpts.Work, o.Conns, cmp.Or(layout, "shared"))
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`)
	for r := 0; r < o.Rounds; r++ {
		res, err := runLoad(loadConfig{Addr: addr, Conns: o.Conns, Duration: o.Duration, MaxRequests: o.MaxRequests, Bodies: [][]byte{body}})
		if err != nil || res.Requests == 0 {
			fmt.Fprintln(log, "bench: -shape:", err, res.FirstError)
			return 1
		}
		mean := time.Duration(float64(o.Conns) / res.RPS * float64(time.Second))
		fmt.Fprintf(stdout, "  round %d: %.0f req/s, mean %s (connections ÷ req/s), p50 %s, p90 %s, p99 %s (%.2f × mean), max %s\n",
			r+1, res.RPS, fmtDur(mean), fmtDur(res.P50), fmtDur(res.P90), fmtDur(res.P99), float64(res.P99)/float64(mean), fmtDur(res.Max))
	}
	return 0
}

// shapeServe is the child: it answers every request with the same body
// after busy-waiting work, until killed.
func shapeServe(addr string, work time.Duration) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shape server:", err)
		return 1
	}
	body := `{"jsonrpc":"2.0","id":1,"result":"0x0"}`
	answer := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	for {
		c, err := ln.Accept()
		if err != nil {
			continue
		}
		go shapeConn(c, answer, work)
	}
}

func shapeConn(c net.Conn, answer []byte, work time.Duration) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		length := 0
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(bytes.TrimSpace(line)) == 0 {
				break
			}
			if k, v, ok := bytes.Cut(line, []byte(":")); ok && asciiEqualFold(bytes.TrimSpace(k), "content-length") {
				length, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
			}
		}
		if _, err := r.Discard(length); err != nil {
			return
		}
		for start := time.Now(); time.Since(start) < work; {
		}
		if _, err := c.Write(answer); err != nil {
			return
		}
	}
}
