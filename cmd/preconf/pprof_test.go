package main

import (
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

func pprofContext(t *testing.T, args ...string) *cli.Context {
	t.Helper()
	set := flag.NewFlagSet("preconf", flag.ContinueOnError)
	for _, f := range pprofFlags {
		if err := f.Apply(set); err != nil {
			t.Fatal(err)
		}
	}
	if err := set.Parse(args); err != nil {
		t.Fatal(err)
	}
	return cli.NewContext(&cli.App{}, set, nil)
}

// --pprof serves /debug/pprof/ on --pprof.addr; without it nothing listens.
func TestPprofListener(t *testing.T) {
	addr := "127.0.0.1:" + freePort(t) // a fixed port could be any test's client socket
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	stop, err := startPprof(pprofContext(t, "--pprof.addr", addr), logger)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("pprof listening without --pprof")
	}

	stop, err = startPprof(pprofContext(t, "--pprof", "--pprof.addr", addr), logger)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Get("http://" + addr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Fatalf("GET /debug/pprof/: %d %.200s", resp.StatusCode, body)
	}
	// A second listener on the same address fails cleanly.
	if _, err := startPprof(pprofContext(t, "--pprof", "--pprof.addr", addr), logger); err == nil {
		t.Fatal("second pprof listener on a busy address started")
	}
}
