package shape

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

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
	"github.com/preconf/preconf/bench/internal/report"
)

// Options are the shape experiment's own flags.
type Options struct {
	Server string // internal: serve on this address (the child process)
	Work   time.Duration
}

// AddFlags registers the experiment's own flags.
func (so *Options) AddFlags(fs *flag.FlagSet) {
	fs.DurationVar(&so.Work, "shape-work", 50*time.Microsecond, "-shape: busy work per request")
	fs.StringVar(&so.Server, "shape-server", "", "internal: run the -shape server on this address")
}

// Run loads the shape server and prints its latency shape; the result is
// the exit code. With so.Server set it is the server itself.
func Run(o harness.Options, so Options, stdout, log io.Writer) int {
	if so.Server != "" {
		return serve(so.Server, so.Work)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(log, "bench:", err)
		return 1
	}
	e := &harness.Env{Log: log}
	var layout string
	restore, err := harness.PinIf(o.Pin, e, &layout)
	if err != nil {
		fmt.Fprintln(log, "bench:", err)
		return 1
	}
	defer restore()
	addr := fmt.Sprintf("127.0.0.1:%d", harness.PortPreconf)
	cmd := harness.PinnedCommand(e.NodeCPUs, exe, []string{"shape", "-shape-server", addr, "-shape-work", so.Work.String()})
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
	fmt.Fprintf(stdout, "-shape: %s of work a request, %d connections, layout: %s\n", so.Work, o.Conns, cmp.Or(layout, "shared"))
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`)
	for r := 0; r < o.Rounds; r++ {
		res, err := load.Run(load.Config{Addr: addr, Conns: o.Conns, Duration: o.Duration, MaxRequests: o.MaxRequests, Bodies: [][]byte{body}})
		if err != nil || res.Requests == 0 {
			fmt.Fprintln(log, "bench: -shape:", err, res.FirstError)
			return 1
		}
		mean := time.Duration(float64(o.Conns) / res.RPS * float64(time.Second))
		fmt.Fprintf(stdout, "  round %d: %.0f req/s, mean %s (connections ÷ req/s), p50 %s, p90 %s, p99 %s (%.2f × mean), max %s\n",
			r+1, res.RPS, report.FmtDur(mean), report.FmtDur(res.P50), report.FmtDur(res.P90), report.FmtDur(res.P99), float64(res.P99)/float64(mean), report.FmtDur(res.Max))
	}
	return 0
}

// serve is the child: it answers every request with the same body
// after busy-waiting work, until killed.
func serve(addr string, work time.Duration) int {
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
			if k, v, ok := bytes.Cut(line, []byte(":")); ok && load.ASCIIEqualFold(bytes.TrimSpace(k), "content-length") {
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
