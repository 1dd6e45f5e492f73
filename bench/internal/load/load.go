package load

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The load generator: N goroutines, each with its own keep-alive HTTP/1.1
// connection, send pre-encoded POST requests back to back (closed loop, like
// wrk) for a fixed duration or until a request budget is spent. It is written
// on a bare net.Conn so that the client costs little CPU: the node under test
// shares the machine with it.

// Config is one load run.
type Config struct {
	Addr        string        // host:port
	Conns       int           // concurrent connections
	Duration    time.Duration // measuring time
	MaxRequests int64         // request budget over all connections (0: no bound)
	Bodies      [][]byte      // JSON-RPC bodies, cycled through by each connection
	Check       func([]byte) error
	// Think is a pause after each answer before the connection's next
	// request (0: back to back). It is wrk's Lua delay(): the offered rate
	// is about Conns/(Think+latency), so two nodes whose latencies are well
	// under Think get nearly the same rate, and their tails compare without
	// the faster one loading the shared CPUs more.
	Think time.Duration
	// Pacing is how the pauses are drawn (pace.go); "" is PaceFixed.
	Pacing Pacing
}

// Result is what one run measured.
type Result struct {
	Requests   int64         `json:"requests"`
	Errors     int64         `json:"errors"`
	FirstError string        `json:"first_error,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	RPS        float64       `json:"rps"`
	P50        time.Duration `json:"p50_ns"`
	P90        time.Duration `json:"p90_ns"`
	P99        time.Duration `json:"p99_ns"`
	Max        time.Duration `json:"max_ns"`
	// SockP50 and SockP99 are the node's part of the latency: from the
	// request's send to its answer's arrival in the client's socket (the
	// kernel's receive time, sock_linux.go), without the time the
	// generator took to read it. Measured on one connection in
	// SockSample: the connections are alike in a closed loop, and recvmsg
	// with its timestamp cost the generator 0.3–0.5 µs a read (go run
	// ./bench, 2 × 3 rounds each way), which on every connection would
	// change the instrument. A paced run (Think > 0) stamps every
	// connection: its p99 then rests on 8 times the answers (a 3 s window
	// at 32 connections and 10 ms holds ~9,000), and half a microsecond
	// beside each pause costs nothing. Zero when not measured.
	SockP50 time.Duration `json:"sock_p50_ns,omitempty"`
	SockP99 time.Duration `json:"sock_p99_ns,omitempty"`
	// SockN is how many answers SockP50 and SockP99 are taken over.
	SockN int `json:"sock_n,omitempty"`
	// CrowdP50 and CrowdP90: of each request, how many others were sent
	// within ±250 µs of it (pace.go's crowd), median and p90; paced runs
	// only. 32 connections in step send in crowds of up to 31.
	CrowdP50 float64 `json:"crowd_p50,omitempty"`
	CrowdP90 float64 `json:"crowd_p90,omitempty"`
	// ServerCPU is the node's CPU time per answered request (0: unknown).
	ServerCPU time.Duration `json:"server_cpu_per_request_ns"`
	// ClientCPU is the load generator's own CPU time (this process, every
	// thread, user + system) per answered request over the window (0:
	// unknown). On loopback each side's system time includes the kernel's
	// delivery of what it sends into the other's socket.
	ClientCPU time.Duration `json:"client_cpu_per_request_ns"`
	// Runtime is the node's Go runtime figures (preconf only; runtime.go).
	Runtime *RuntimeStats `json:"runtime,omitempty"`
}

// Run runs one closed-loop load test.
func Run(cfg Config) (Result, error) {
	if cfg.Conns <= 0 || cfg.Duration <= 0 || len(cfg.Bodies) == 0 {
		return Result{}, errors.New("load: need connections, a duration and at least one body")
	}
	reqs := make([][]byte, len(cfg.Bodies))
	for i, b := range cfg.Bodies {
		reqs[i] = HTTPRequest(cfg.Addr, b)
	}
	conns := make([]*Client, cfg.Conns)
	for i := range conns {
		c, err := dialSampled(cfg.Addr, i%SockSample == 0 || cfg.Think > 0)
		if err != nil {
			for _, c := range conns[:i] {
				c.Close()
			}
			return Result{}, err
		}
		conns[i] = c
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if conns[0].sock != nil { // connection 0 is always sampled
		waitStamping(time.Second) // if it never comes, Result has no in-socket figures
	}

	var (
		issued   atomic.Int64
		errCount atomic.Int64
		errOnce  sync.Once
		firstErr string
		wg       sync.WaitGroup
		ready    sync.WaitGroup // workers with their buffers allocated
		start    = make(chan struct{})
		lats     = make([][]time.Duration, cfg.Conns)
		socks    = make([][]time.Duration, cfg.Conns) // answer in socket − send
		sends    = make([][]int64, cfg.Conns)         // paced: send times, unix ns
		answered = make([]int, cfg.Conns)             // answers read through a sockReader
	)
	budget := cfg.MaxRequests
	if budget <= 0 {
		budget = 1 << 62
	}
	perConn := int(min(budget/int64(cfg.Conns)+1, 1<<20))
	var end time.Time
	for w := range conns {
		wg.Add(1)
		ready.Add(1)
		go func(w int) {
			defer wg.Done()
			c := conns[w]
			mine := make([]time.Duration, 0, perConn)
			pace := newPacer(cfg.Think, cfg.Pacing, w)
			var sent []int64
			var sock []time.Duration
			if c.sock != nil {
				sock = make([]time.Duration, 0, perConn)
			}
			ready.Done()
			<-start
			c.Conn.SetDeadline(end.Add(10 * time.Second))
			for i := w; ; i++ {
				if d := pace.next(); d > 0 {
					time.Sleep(d)
				}
				now := time.Now()
				if !now.Before(end) || issued.Add(1) > budget {
					break
				}
				if cfg.Think > 0 {
					sent = append(sent, now.UnixNano())
				}
				body, err := c.Do(reqs[i%len(reqs)])
				lat := time.Since(now)
				if err == nil && cfg.Check != nil {
					err = cfg.Check(body)
				}
				if err != nil {
					errCount.Add(1)
					errOnce.Do(func() { firstErr = err.Error() })
				} else {
					mine = append(mine, lat)
					if c.sock != nil {
						answered[w]++
						if c.sock.stamp != 0 {
							sock = append(sock, time.Duration(c.sock.stamp-now.UnixNano()))
						}
					}
				}
				if c.broken { // an I/O error or "Connection: close"
					if c.Redial(cfg.Addr) != nil {
						break
					}
					c.Conn.SetDeadline(end.Add(10 * time.Second))
				}
			}
			lats[w], socks[w], sends[w] = mine, sock, sent
		}(w)
	}
	// The clock starts once every worker holds its buffers: up to 16 MiB
	// each, whose zeroing (slow under -race on a loaded machine) took longer
	// than a 200 ms run in TestRunLoadStopsAtDuration, which then issued
	// nothing.
	ready.Wait()
	cpu0, cpuErr := SelfCPU()
	t0 := time.Now()
	end = t0.Add(cfg.Duration)
	close(start)
	wg.Wait()
	elapsed := time.Since(t0)
	cpu1, cpuErr1 := SelfCPU()

	var all, sock []time.Duration
	var sent []int64
	sampled := 0
	for w, l := range lats {
		all = append(all, l...)
		sock = append(sock, socks[w]...)
		sent = append(sent, sends[w]...)
		sampled += answered[w]
	}
	slices.Sort(all)
	slices.Sort(sock)
	res := Result{
		Requests:   int64(len(all)),
		Errors:     errCount.Load(),
		FirstError: firstErr,
		Elapsed:    elapsed,
		P50:        Percentile(all, 0.50),
		P90:        Percentile(all, 0.90),
		P99:        Percentile(all, 0.99),
	}
	if len(all) > 0 {
		res.Max = all[len(all)-1]
	}
	res.CrowdP50, res.CrowdP90 = crowdQuantiles(sent)
	if len(sock) > 0 && len(sock) >= sampled*99/100 { // a stamp on (nearly) every sampled answer
		res.SockP50, res.SockP99, res.SockN = Percentile(sock, 0.50), Percentile(sock, 0.99), len(sock)
	}
	if elapsed > 0 {
		res.RPS = float64(res.Requests) / elapsed.Seconds()
	}
	if cpuErr == nil && cpuErr1 == nil && res.Requests > 0 {
		res.ClientCPU = (cpu1 - cpu0) / time.Duration(res.Requests)
	}
	return res, nil
}

// SelfCPU is this process's CPU time so far (user + system, all threads).
func SelfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// Percentile is the nearest-rank percentile of sorted durations.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// HTTPRequest encodes a keep-alive JSON POST to "/".
func HTTPRequest(addr string, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, len(body))
	b.Write(body)
	return b.Bytes()
}

// Client is one keep-alive HTTP/1.1 connection.
type Client struct {
	Conn   net.Conn
	sock   *sockReader // nil: reads go to conn, answers carry no receive time
	r      *bufio.Reader
	body   []byte
	broken bool // the connection must be redialled
}

// SockSample: one connection in SockSample reads through a sockReader.
const SockSample = 8

func Dial(addr string) (*Client, error) { return dialSampled(addr, false) }

// dialSampled connects; stamped connections read through a sockReader.
func dialSampled(addr string, stamped bool) (*Client, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("load: dial %s: %w", addr, err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
		// Close with a reset: no TIME_WAIT sockets pile up on ephemeral
		// ports, which on this machine's range include the nodes' ports.
		tc.SetLinger(0)
	}
	c := &Client{Conn: conn}
	var src io.Reader = conn
	if stamped {
		if s := newSockReader(conn); s != nil {
			c.sock, src = s, s
		}
	}
	c.r = bufio.NewReaderSize(src, 64<<10)
	return c, nil
}

// Redial replaces a broken connection with a new one, read the same way.
func (c *Client) Redial(addr string) error {
	c.Close()
	nc, err := dialSampled(addr, c.sock != nil)
	if err != nil {
		return err
	}
	*c = *nc
	return nil
}

func (c *Client) Close() { c.Conn.Close() }

// Do sends one request and reads the response body (valid until the next call).
func (c *Client) Do(req []byte) ([]byte, error) {
	if c.sock != nil {
		c.sock.mark()
	}
	if _, err := c.Conn.Write(req); err != nil {
		c.broken = true
		return nil, err
	}
	body, status, err := c.readResponse()
	if err != nil {
		c.broken = true
		return nil, err
	}
	if status != 200 {
		return nil, fmt.Errorf("HTTP status %d: %.200s", status, body)
	}
	return body, nil
}

// readResponse parses a status line, headers and a Content-Length or chunked body.
func (c *Client) readResponse() (body []byte, status int, err error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return nil, 0, fmt.Errorf("read status: %w", err)
	}
	// "HTTP/1.1 200 OK"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return nil, 0, fmt.Errorf("bad status line %q", line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return nil, 0, fmt.Errorf("bad status line %q", line)
	}
	length, chunked, closing := -1, false, false
	for {
		line, err = c.r.ReadSlice('\n')
		if err != nil {
			return nil, 0, fmt.Errorf("read header: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		switch {
		case ASCIIEqualFold(k, "content-length"):
			if length, err = strconv.Atoi(string(v)); err != nil {
				return nil, 0, fmt.Errorf("bad content-length %q", v)
			}
		case ASCIIEqualFold(k, "transfer-encoding"):
			chunked = ASCIIEqualFold(v, "chunked")
		case ASCIIEqualFold(k, "connection"):
			closing = ASCIIEqualFold(v, "close")
		}
	}
	c.body = c.body[:0]
	switch {
	case chunked:
		for {
			line, err = c.r.ReadSlice('\n')
			if err != nil {
				return nil, 0, fmt.Errorf("read chunk size: %w", err)
			}
			sz, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
			n, err := strconv.ParseInt(string(sz), 16, 64)
			if err != nil || n < 0 || n > 64<<20 {
				return nil, 0, fmt.Errorf("bad chunk size %q", line)
			}
			if err := c.readN(int(n)); err != nil {
				return nil, 0, err
			}
			if _, err := c.r.Discard(2); err != nil { // CRLF after the chunk
				return nil, 0, err
			}
			if n == 0 {
				break
			}
		}
	case length >= 0:
		if length > 64<<20 {
			return nil, 0, fmt.Errorf("response too large: %d bytes", length)
		}
		if err := c.readN(length); err != nil {
			return nil, 0, err
		}
	default:
		return nil, 0, errors.New("response without length (not keep-alive)")
	}
	if closing {
		c.broken = true
	}
	return c.body, status, nil
}

func (c *Client) readN(n int) error {
	off := len(c.body)
	c.body = slices.Grow(c.body, n)[:off+n]
	_, err := io.ReadFull(c.r, c.body[off:])
	return err
}

// ASCIIEqualFold reports whether b equals s, ignoring ASCII case.
func ASCIIEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// NewClient reads and writes requests on an open connection.
func NewClient(conn net.Conn) *Client {
	return &Client{Conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
}
