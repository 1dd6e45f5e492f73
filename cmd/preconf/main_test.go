package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/preconf/preconf/conformance"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "preconf-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "preconf")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func fixtures(t *testing.T) string {
	t.Helper()
	return conformance.Fixtures(t)
}

// run executes the binary to completion (for commands that must exit).
func run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	// A home of its own: a command that falls back to the default datadir
	// (~/.preconf) must not meet a node the user (or another test run) has
	// running there.
	cmd.Env = append(cleanEnv(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("preconf %v did not exit: %s", args, out)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// cleanEnv drops PRECONF_ variables that could change flag defaults.
func cleanEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PRECONF_") || strings.HasPrefix(e, "PRECONF_CONFORMANCE_DIR=") {
			env = append(env, e)
		}
	}
	return env
}

func TestExitsOnBadInput(t *testing.T) {
	dir := fixtures(t)
	tmp := t.TempDir()
	badGenesis := filepath.Join(tmp, "bad-genesis.json")
	os.WriteFile(badGenesis, []byte(`{"config": {"chainId": `), 0o600)
	noConfig := filepath.Join(tmp, "noconfig.json")
	os.WriteFile(noConfig, []byte(`{"alloc": {}}`), 0o600)
	corrupt := filepath.Join(tmp, "corrupt.rlp")
	os.WriteFile(corrupt, []byte("definitely not rlp"), 0o600)

	// A datadir initialised with the dev genesis.
	devDir := filepath.Join(tmp, "dev")
	port := freePort(t)
	p := start(t, "--datadir", devDir, "--http.port", port, "--block-time", "0")
	p.stop(t)
	// One of the plain-Ethereum dev chain (--l1), the default before.
	l1Dir := filepath.Join(tmp, "l1")
	p = start(t, "--datadir", l1Dir, "--http.port", freePort(t), "--block-time", "0", "--l1")
	p.stop(t)

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--no-such-flag"}, "flag provided but not defined"},
		{"bad duration", []string{"--block-time", "soon"}, "invalid value"},
		{"bad port", []string{"--http.port", "x"}, "invalid value"},
		{"stray argument", []string{"--datadir", filepath.Join(tmp, "x"), "extra"}, "unexpected argument"},
		{"missing genesis file", []string{"--datadir", filepath.Join(tmp, "a"), "--genesis", filepath.Join(tmp, "none.json")}, "genesis"},
		{"invalid genesis json", []string{"--datadir", filepath.Join(tmp, "b"), "--genesis", badGenesis}, "genesis"},
		{"genesis without config", []string{"--datadir", filepath.Join(tmp, "c"), "--genesis", noConfig}, "config"},
		{"corrupt rlp", []string{"--datadir", filepath.Join(tmp, "d"), "--genesis", filepath.Join(dir, "genesis.json"), "--import", corrupt, "--block-time", "0", "--http.port", freePort(t)}, "decode block"},
		{"missing rlp", []string{"--datadir", filepath.Join(tmp, "e"), "--import", filepath.Join(tmp, "none.rlp"), "--block-time", "0", "--http.port", freePort(t)}, "import"},
		{"genesis mismatch", []string{"--datadir", devDir, "--genesis", filepath.Join(dir, "genesis.json"), "--block-time", "0", "--http.port", freePort(t)}, "different genesis"},
		{"bad log level", []string{"--log.level", "loud"}, "log.level"},
		{"l1 with genesis", []string{"--l1", "--genesis", filepath.Join(dir, "genesis.json")}, "--l1 and --genesis are exclusive"},
		{"l1 block time in ms", []string{"--l1.block-time", "1500ms"}, "whole number of seconds"},
		{"l1 block time on the l1 chain", []string{"--l1", "--l1.block-time", "6s"}, "with --l1 there is none"},
		{"old default datadir", []string{"--datadir", l1Dir, "--block-time", "0", "--http.port", freePort(t)}, "start with --l1 to use it"},
		{"l1 on a fork", []string{"--l1", "--fork-url", "http://127.0.0.1:1"}, "a fork runs the upstream's chain"},
		{"l1 block time on a fork", []string{"--l1.block-time", "6s", "--fork-url", "http://127.0.0.1:1"}, "a fork simulates none"},
		{"l1 on the op-stack datadir", []string{"--datadir", devDir, "--l1", "--block-time", "0", "--http.port", freePort(t)}, "start without --l1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, code := run(t, tt.args...)
			if code == 0 {
				t.Fatalf("exit 0, want failure; output:\n%s", out)
			}
			if !strings.Contains(out, tt.want) {
				t.Fatalf("output does not mention %q:\n%s", tt.want, out)
			}
		})
	}
}

func TestVersionAndHelp(t *testing.T) {
	out, code := run(t, "--version")
	if code != 0 || !strings.Contains(out, version) {
		t.Fatalf("--version: exit %d, %q", code, out)
	}
	out, code = run(t, "--help")
	if code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, flag := range []string{"--datadir", "--http.addr", "--http.port", "--genesis", "--l1", "--l1.block-time", "--import", "--block-time", "PRECONF_HTTP_PORT"} {
		if !strings.Contains(out, flag) {
			t.Errorf("--help does not document %s", flag)
		}
	}
}

// TestRestartServesSameAnswers imports the execution-apis chain, records
// answers, restarts on the same datadir with and without --import, and
// compares.
func TestRestartServesSameAnswers(t *testing.T) {
	dir := fixtures(t)
	datadir := t.TempDir()
	base := []string{"--datadir", datadir, "--genesis", filepath.Join(dir, "genesis.json"), "--block-time", "0"}
	queries := []string{
		`{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`,
		`{"jsonrpc":"2.0","id":2,"method":"eth_getBalance","params":["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df","0x10"]}`,
		`{"jsonrpc":"2.0","id":3,"method":"eth_getStorageAt","params":["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df","0x0","latest"]}`,
		`{"jsonrpc":"2.0","id":4,"method":"eth_getBalance","params":["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df","finalized"]}`,
		`{"jsonrpc":"2.0","id":5,"method":"eth_getCode","params":["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df","safe"]}`,
	}
	answers := func(url string) []string {
		var out []string
		for _, q := range queries {
			out = append(out, post(t, url, q))
		}
		return out
	}
	port := freePort(t)
	p := start(t, append(base, "--http.port", port, "--import", filepath.Join(dir, "chain.rlp"))...)
	first := answers(p.url)
	p.stop(t)
	if !strings.Contains(first[0], `"0x36"`) {
		t.Fatalf("head after import: %s", first[0])
	}
	for _, extra := range [][]string{{"--import", filepath.Join(dir, "chain.rlp")}, nil} {
		p := start(t, append(append(base, "--http.port", freePort(t)), extra...)...)
		again := answers(p.url)
		p.stop(t)
		for i := range first {
			if first[i] != again[i] {
				t.Errorf("restart %v: query %d answered %s, before %s", extra, i, again[i], first[i])
			}
		}
	}
}

type proc struct {
	cmd *exec.Cmd
	url string
	out *bytes.Buffer
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	port := ""
	for i, a := range args {
		if a == "--http.port" && i+1 < len(args) {
			port = args[i+1]
		}
	}
	if port == "" {
		port = freePort(t)
		args = append(args, "--http.port", port)
	}
	var out bytes.Buffer
	cmd := exec.Command(binary, args...)
	cmd.Env = cleanEnv()
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, url: "http://127.0.0.1:" + port, out: &out}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(p.url + "/health")
		if err == nil {
			resp.Body.Close()
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatalf("node did not come up: %s", out.String())
	return nil
}

func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("node exited with %v: %s", err, p.out.String())
		}
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("node did not stop on SIGTERM: %s", p.out.String())
	}
}

// post posts body and returns the result; an error answer fails the test.
func post(t *testing.T, url, body string) string {
	t.Helper()
	b := []byte(postRaw(t, url, body))
	var v map[string]json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil || v["error"] != nil {
		t.Fatalf("%s → %s", body, b)
	}
	return string(v["result"])
}

// postRaw posts body and returns the whole answer (result or error).
func postRaw(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}
