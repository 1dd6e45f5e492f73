// Package reliability_test is the node's reliability battery, run against
// a built preconf binary on loopback only: bad input over HTTP and
// websocket, connection floods and slow clients, descriptor exhaustion,
// kill -9 while transactions stream, a soak with RSS sampling, and
// promtool on /metrics. Every load it makes is bounded in count and time.
// The figures it logs (lines starting "FIGURE") are the ones quoted in
// docs/reliability.md. PRECONF_RELIABILITY_KILLS and
// PRECONF_RELIABILITY_SOAK lengthen the kill loop and the soak.
package reliability_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/preconf/preconf/tests/procs"
)

func TestMain(m *testing.M) {
	code := m.Run()
	procs.Cleanup()
	os.Exit(code)
}

// proc is one preconf process on a loopback port.
type proc struct {
	t      *testing.T
	args   []string
	prefix []string // a command the node runs under (prlimit)
	addr   string
	cmd    *exec.Cmd
	exited chan struct{}
	logs   *bytes.Buffer
	mu     sync.Mutex
}

// startProc runs preconf with args (a fresh port is added) and waits for
// /readyz.
func startProc(t *testing.T, prefix []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, args: append(args, "--http.port", procs.FreePort(t)), prefix: prefix}
	p.start()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("node log tail:\n%s", p.tail(4000))
		}
	})
	return p
}

func (p *proc) start() {
	p.t.Helper()
	argv := append(append(append([]string{}, p.prefix...), procs.Binary(p.t)), p.args...)
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.logs = new(bytes.Buffer)
	w := &lockedWriter{mu: &p.mu, w: p.logs}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { cmd.Wait(); close(exited) }(p.cmd, p.exited)
	for i, a := range p.args {
		if a == "--http.port" {
			p.addr = "127.0.0.1:" + p.args[i+1]
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-p.exited:
			p.t.Fatalf("preconf exited at start:\n%s", p.tail(4000))
		default:
		}
		if resp, err := http.Get(p.url() + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("preconf not ready in 60 s:\n%s", p.tail(4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *proc) tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.logs.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func (p *proc) url() string { return "http://" + p.addr }

// stop ends the process with SIGTERM (SIGKILL after 30 s).
func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// kill9 ends the process at once, as a crash does.
func (p *proc) kill9() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// rssKiB is the process's resident set (VmRSS).
func (p *proc) rssKiB() int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			v, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return v
		}
	}
	return 0
}

var client = &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}

// answer is a decoded JSON-RPC answer.
type answer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// post sends body and returns the HTTP status and body.
func post(p *proc, body []byte) (int, []byte, error) {
	resp, err := client.Post(p.url(), "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// call makes one call and decodes its result into out (nil: ignore).
func call(p *proc, out any, method string, params ...any) error {
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	status, b, err := post(p, body)
	if err != nil {
		return err
	}
	var a answer
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("HTTP %d: %s", status, b)
	}
	if a.Error != nil {
		return fmt.Errorf("%d %s", a.Error.Code, a.Error.Message)
	}
	if out != nil {
		return json.Unmarshal(a.Result, out)
	}
	return nil
}

// alive checks that the node answers a plain call on a fresh connection.
func alive(t *testing.T, p *proc, after string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", p.addr, 10*time.Second)
	if err != nil {
		t.Fatalf("after %s: cannot connect: %v", after, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	body := `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("after %s: no answer: %v", after, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(b, []byte(`"result":"0x`)) {
		t.Fatalf("after %s: %d %s", after, resp.StatusCode, b)
	}
}

// envInt reads a positive integer knob, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
