package reliability_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Idle connections cannot lock clients out: 2,000 connections held open
// against the default --rpc.max-connections (500) — a third that sent
// nothing, a third idle after a JSON-RPC call (the fast path), a third idle
// after a GET (net/http) — and new clients are still answered, each on a
// fresh connection: 60 health checks and 60 JSON-RPC calls, each after one
// more silent connection, so that every one finds the cap full. Then every
// socket the node held is released. Latencies are reported, not asserted
// (a shared machine); each answer must come within a generous deadline.
// With the fast path and with net/http alone (--http.fastpath=false).
func TestIdleConnectionsDoNotLockOut(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(fmt.Sprintf("fastpath=%v", fast), func(t *testing.T) { testIdleConnections(t, fast) })
	}
}

func testIdleConnections(t *testing.T, fastPath bool) {
	const (
		held     = 2000
		checks   = 60
		deadline = 10 * time.Second // per check, generous: the figure is the point
	)
	raiseNoFile(t, held+512)
	p := startProc(t, nil, "--datadir", t.TempDir(), "--log.level", "warn", fmt.Sprintf("--http.fastpath=%v", fastPath))
	socketsBefore := sockets(t, p)

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	opened := time.Now()
	for i := range held {
		c, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
		var req string
		switch i % 3 {
		case 0: // sends nothing
			continue
		case 1:
			req = rawPost(rpcBody("eth_blockNumber", "[]"))
		case 2:
			req = "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n"
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, req)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			// Closed to make room before its answer was read: only a
			// connection opened long before can be (the node evicts the
			// longest idle), never this one.
			t.Fatalf("connection %d, its first request: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("connection %d, its first request: HTTP %d", i, resp.StatusCode)
		}
	}
	openedIn := time.Since(opened)

	var health, calls []time.Duration
	for i := range 2 * checks {
		req, want := "GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", `"status":"ok"`
		if i%2 == 1 {
			req, want = rawPost(rpcBody("eth_blockNumber", "[]")), `"result":"0x`
		}
		c, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c) // one more silent connection: the cap is full again
		start := time.Now()
		status, body, err := exchangeFresh(p.addr, req, deadline)
		took := time.Since(start)
		if err != nil || status != 200 || !strings.Contains(body, want) {
			t.Fatalf("check %d with %d connections held: HTTP %d %q %v", i, held, status, body, err)
		}
		if i%2 == 0 {
			health = append(health, took)
		} else {
			calls = append(calls, took)
		}
	}
	_, metrics, _ := get(p, "/metrics")
	evicted, _ := strconv.Atoi(metricValue(metrics, "preconf_http_connections_evicted_total"))
	if rejected := metricValue(metrics, "preconf_http_connections_rejected_total"); rejected != "0" {
		t.Errorf("%s connections refused; idle ones should have made room", rejected)
	}
	// Each connection past the 500th while held made room, and so did
	// every check (at the cap once the silent one before it came in).
	if want := held - 500 + 2*checks; evicted < want {
		t.Errorf("%d idle connections evicted, want at least %d (the cap is 500)", evicted, want)
	}

	for _, c := range conns {
		c.Close()
	}
	conns = nil
	client.CloseIdleConnections()
	released := time.Now()
	for {
		n := sockets(t, p)
		if n <= socketsBefore {
			break
		}
		if time.Since(released) > 30*time.Second {
			t.Fatalf("the node holds %d sockets 30 s after every client closed, %d before", n, socketsBefore)
		}
		time.Sleep(50 * time.Millisecond)
	}
	alive(t, p, "the idle connections")
	t.Logf("FIGURE idle connections, --http.fastpath=%v: %d held (opened in %s) against --rpc.max-connections 500: %d evicted, 0 refused; "+
		"on a fresh connection each, %d of %d health checks p50 %s p99 %s, %d of %d eth_blockNumber p50 %s p99 %s; "+
		"sockets back to %d within %s of the clients closing",
		fastPath, held, openedIn.Round(time.Millisecond), evicted, len(health), checks, pct(health, 50), pct(health, 99),
		len(calls), checks, pct(calls, 50), pct(calls, 99), socketsBefore, time.Since(released).Round(10*time.Millisecond))
}

// rawPost is a keep-alive JSON-RPC POST.
func rawPost(body string) string {
	return fmt.Sprintf("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}

// exchangeFresh sends req on a new connection and reads one answer.
func exchangeFresh(addr, req string, within time.Duration) (int, string, error) {
	c, err := net.DialTimeout("tcp", addr, within)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(within))
	if _, err := io.WriteString(c, req); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// pct is the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)].Round(10 * time.Microsecond)
}

// sockets counts the sockets the node's process holds open.
func sockets(t *testing.T, p *proc) int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink(dir + "/" + e.Name()); err == nil && strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n
}

// raiseNoFile makes sure this process may open n descriptors, raising its
// soft limit towards the hard one (Go raises it at start already on Linux;
// a CI runner's hard limit may still be too low, which fails here, clearly).
func raiseNoFile(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		t.Fatalf("this test opens %d sockets; the descriptor limit is %d (ulimit -Hn): raise it", n, lim.Max)
	}
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
}
