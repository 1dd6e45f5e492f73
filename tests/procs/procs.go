// Package procs runs preconf nodes as child processes for tests: the binary
// is built once per test binary, each node listens on a free loopback
// port, and a test can wait for it, stop it, kill it as a crash does, and
// start it again on the same port; Call makes a JSON-RPC call to one.
package procs

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
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var build struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Binary builds cmd/preconf once and returns its path.
func Binary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		build.dir, build.err = os.MkdirTemp("", "preconf-procs-")
		if build.err != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		build.path = filepath.Join(build.dir, "preconf")
		cmd := exec.Command("go", "build", "-o", build.path, "./cmd/preconf")
		cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// Cleanup removes the built binary (call from TestMain after the tests).
func Cleanup() {
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
}

// FreePort is a loopback port nothing listens on (at the time of asking).
func FreePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// Proc is one preconf process.
type Proc struct {
	t      testing.TB
	Name   string
	Addr   string // 127.0.0.1:port
	args   []string
	ready  string // the path answering 200 once the node is ready
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	logs   bytes.Buffer
}

// Start runs preconf with args on a free port (--http.port is added) and
// waits until ready (a path such as /readyz) answers 200. The process is
// stopped when the test ends.
func Start(t testing.TB, name, ready string, args ...string) *Proc {
	t.Helper()
	port := FreePort(t)
	p := &Proc{t: t, Name: name, Addr: "127.0.0.1:" + port, args: append(args, "--http.port", port), ready: ready}
	p.start()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s log tail:\n%s", name, p.Tail(3000))
		}
	})
	return p
}

// URL is the node's HTTP address.
func (p *Proc) URL() string { return "http://" + p.Addr }

func (p *Proc) start() {
	p.t.Helper()
	cmd := exec.Command(Binary(p.t), p.args...)
	w := writerFunc(func(b []byte) (int, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.logs.Len() > 1<<20 { // keep the last MiB or so
			keep := p.logs.Bytes()[p.logs.Len()-(512<<10):]
			p.logs = *bytes.NewBuffer(append([]byte(nil), keep...))
		}
		return p.logs.Write(b)
	})
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-exited:
			p.t.Fatalf("%s exited at start:\n%s", p.Name, p.Tail(3000))
		default:
		}
		if resp, err := http.Get(p.URL() + p.ready); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s not ready in 90 s:\n%s", p.Name, p.Tail(3000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// Stop ends the process with SIGTERM (SIGKILL after 30 s).
func (p *Proc) Stop() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	select {
	case <-exited:
		return
	default:
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

// Kill ends the process at once, as a crash does.
func (p *Proc) Kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// Restart starts the process again with the same arguments and port.
func (p *Proc) Restart() { p.start() }

// Pid is the running process's id.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Tail is the end of the process's output.
func (p *Proc) Tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.logs.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// Metric is the value of the first sample of a /metrics series whose line
// starts with name (a metric name, with labels if any).
func (p *Proc) Metric(name string) (float64, error) {
	resp, err := http.Get(p.URL() + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, name); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "{")) {
			f := strings.Fields(line)
			return strconv.ParseFloat(f[len(f)-1], 64)
		}
	}
	return 0, fmt.Errorf("%s: no metric %s", p.Name, name)
}

// client bounds every call a test makes.
var client = &http.Client{Timeout: 30 * time.Second}

// Call makes one JSON-RPC call over HTTP; an HTTP status other than 200
// and a JSON-RPC error are errors.
func Call(url, method string, params ...any) (json.RawMessage, error) {
	if params == nil {
		params = []any{}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, raw)
	}
	var w struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("%v: %.200s", err, raw)
	}
	if w.Error != nil {
		return nil, fmt.Errorf("%d: %s", w.Error.Code, w.Error.Message)
	}
	return w.Result, nil
}

// CallInto makes one JSON-RPC call and decodes its result into out.
func CallInto(url string, out any, method string, params ...any) error {
	raw, err := Call(url, method, params...)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}
