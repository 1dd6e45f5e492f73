package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A cap full of connections in use (websocket subscribers): new clients
// are answered 503 and closed, health checks from loopback still get
// through, the node keeps sealing, and once the subscribers leave everyone
// is served again.
func TestConnectionFlood(t *testing.T) {
	const limit, flood = 64, 200
	p := startProc(t, nil, "--datadir", t.TempDir(), "--rpc.max-connections", fmt.Sprint(limit), "--log.level", "warn")
	client.CloseIdleConnections() // the cap is for the subscribers alone
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var subs []*websocket.Conn
	defer func() {
		for _, c := range subs {
			c.CloseNow()
		}
	}()
	for i := range limit {
		c, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/", nil)
		if err != nil {
			t.Fatalf("subscriber %d: %v", i, err)
		}
		subs = append(subs, c)
		c.Write(ctx, websocket.MessageText, []byte(rpcBody("eth_subscribe", `["newHeads"]`)))
		if _, msg, err := c.Read(ctx); err != nil || !strings.Contains(string(msg), `"result":"0x`) {
			t.Fatalf("subscriber %d: %s %v", i, msg, err)
		}
		go func() { // keep reading: a subscriber, not a slow consumer
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
			}
		}()
	}
	rejected, healthy := 0, 0
	for i := range flood {
		req, want := rawPost(rpcBody("eth_blockNumber", "[]")), 503
		if i%4 == 0 {
			req, want = "GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n", 200
		}
		status, body, err := exchangeFresh(p.addr, req, 10*time.Second)
		if err != nil || status != want {
			t.Fatalf("connection %d past a cap full of subscribers: HTTP %d %q %v, want %d", i, status, body, err, want)
		}
		if want == 503 {
			rejected++
		} else {
			healthy++
		}
	}
	for _, c := range subs {
		c.Close(websocket.StatusNormalClosure, "")
	}
	subs = nil
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _, err := post(p, []byte(rpcBody("eth_blockNumber", "[]"))); err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not serving after the subscribers left")
		}
		time.Sleep(50 * time.Millisecond)
	}
	alive(t, p, "the flood")
	t.Logf("FIGURE connection flood: %d subscribers filling --rpc.max-connections %d, %d more connections: %d JSON-RPC answered 503, %d health checks 200; service back when they left",
		limit, limit, flood, rejected, healthy)
}

// Running out of file descriptors (a node under a 96-descriptor limit
// facing 200 connections) slows accepting down but never stops it.
func TestDescriptorExhaustion(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatal("prlimit (util-linux) is needed for this test")
	}
	p := startProc(t, []string{prlimit, "--nofile=96:96", "--"}, "--datadir", t.TempDir(), "--rpc.max-connections", "1000", "--log.level", "warn")
	var held []net.Conn
	for i := 0; i < 200; i++ {
		c, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
		if err != nil {
			break // the kernel's backlog is full: enough
		}
		held = append(held, c)
	}
	time.Sleep(500 * time.Millisecond) // accepts fail with EMFILE meanwhile
	for _, c := range held {
		c.Close()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if code, _, err := post(p, []byte(rpcBody("eth_blockNumber", "[]"))); err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("HTTP service did not come back after descriptor exhaustion:\n%s", p.tail(3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	alive(t, p, "descriptor exhaustion")
	_, metrics, _ := get(p, "/metrics")
	errs := metricValue(metrics, "preconf_http_accept_errors_total")
	if errs == "" || errs == "0" {
		t.Fatalf("no accept error counted with %d connections against 96 descriptors", len(held))
	}
	t.Logf("FIGURE descriptor exhaustion: %d connections under a 96-descriptor limit, %s accept errors counted, service back after", len(held), errs)
}

// Slow-loris heads and trickled bodies are cut off by the read-header
// (10 s) and read (30 s) timeouts, on the fast path and on net/http, while
// other clients are served meanwhile.
func TestSlowClients(t *testing.T) {
	t.Parallel() // mostly waiting for the timeouts
	p := startProc(t, nil, "--datadir", t.TempDir(), "--log.level", "warn")
	partial := map[string]string{
		"slow head":             "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Ty",
		"slow body":             "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"",
		"slow chunked body":     "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"jsonrpc\":\"2.0\"\r\n",
		"slow body, conn close": "POST / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{",
	}
	const each = 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	worst := map[string]time.Duration{}
	for name, head := range partial {
		for range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := net.Dial("tcp", p.addr)
				if err != nil {
					t.Error(err)
					return
				}
				defer c.Close()
				start := time.Now()
				io.WriteString(c, head)
				// Trickle a byte every 2 s: never completes, keeps the
				// connection busy.
				stop := make(chan struct{})
				go func() {
					for {
						select {
						case <-stop:
							return
						case <-time.After(2 * time.Second):
							c.Write([]byte(" "))
						}
					}
				}()
				c.SetReadDeadline(time.Now().Add(60 * time.Second))
				_, err = io.Copy(io.Discard, c) // until the node closes
				close(stop)
				d := time.Since(start)
				// A reset is the node's close too: a trickled byte that
				// arrived after its last read (the 2 s trickle meets the 10 s
				// head timeout) makes the kernel answer the close with RST.
				if err != nil && !errors.Is(err, syscall.ECONNRESET) {
					t.Errorf("%s: not closed within 60 s: %v", name, err)
				}
				mu.Lock()
				worst[name] = max(worst[name], d)
				mu.Unlock()
			}()
		}
	}
	// Meanwhile, others are served.
	for range 20 {
		alive(t, p, "slow clients connected")
		time.Sleep(500 * time.Millisecond)
	}
	wg.Wait()
	for name, d := range worst {
		t.Logf("FIGURE slow clients: %d × %s cut off after at most %s", each, name, d.Round(100*time.Millisecond))
	}
}

// A websocket subscriber that stops reading is closed with 1008, and the
// others keep receiving.
func TestSlowSubscriber(t *testing.T) {
	t.Parallel()
	p := startProc(t, nil, "--datadir", t.TempDir(), "--flashblock-interval", "50ms", "--block-time", "200ms", "--log.level", "warn")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	subscribe := func() *websocket.Conn {
		c, _, err := websocket.Dial(ctx, "ws://"+p.addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadLimit(64 << 20)
		c.Write(ctx, websocket.MessageText, []byte(rpcBody("eth_subscribe", `["newFlashblocks"]`)))
		if _, _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
		return c
	}
	slow, good := subscribe(), subscribe()
	defer slow.CloseNow()
	defer good.CloseNow()
	// Flood the node with notifications: many subscriptions on the slow
	// connection, which reads nothing.
	for range 200 {
		slow.Write(ctx, websocket.MessageText, []byte(rpcBody("eth_subscribe", `["newFlashblocks"]`)))
	}
	got := 0
	var slowErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(5 * time.Second) // slow, not dead: its queue (4096 messages) fills meanwhile
		for {
			if _, _, slowErr = slow.Read(ctx); slowErr != nil {
				return
			}
		}
	}()
	for start := time.Now(); time.Since(start) < 10*time.Second; got++ {
		if _, _, err := good.Read(ctx); err != nil {
			t.Fatalf("a reading subscriber was dropped: %v", err)
		}
	}
	<-done
	if websocket.CloseStatus(slowErr) != websocket.StatusPolicyViolation {
		t.Fatalf("slow subscriber ended with %v, want close 1008", slowErr)
	}
	t.Logf("FIGURE slow subscriber: closed with 1008; a reading one got %d notifications meanwhile", got)
}

func get(p *proc, path string) (int, string, error) {
	resp, err := client.Get(p.url() + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// metricValue is the value of an unlabelled sample in an exposition.
func metricValue(exposition, name string) string {
	for _, line := range strings.Split(exposition, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
