package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/urfave/cli/v2"
)

// The profiling listener: Go's net/http/pprof on its own address (never on
// the JSON-RPC port), off unless --pprof is given.
var pprofFlags = []cli.Flag{
	&cli.BoolFlag{Name: "pprof", Usage: "serve Go's /debug/pprof/ profiles on --pprof.addr (off by default)", EnvVars: envName("pprof")},
	&cli.StringFlag{Name: "pprof.addr", Value: "127.0.0.1:6060", Usage: "listening address of the pprof server", EnvVars: envName("pprof.addr")},
}

// startPprof starts the pprof listener when --pprof is set. The returned
// function stops it (a no-op when it is off).
func startPprof(c *cli.Context, logger *slog.Logger) (stop func(), err error) {
	if !c.Bool("pprof") {
		return func() {}, nil
	}
	addr := c.String("pprof.addr")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("pprof server", "err", err)
		}
	}()
	logger.Info("serving pprof", "url", "http://"+ln.Addr().String()+"/debug/pprof/")
	return func() { srv.Close() }, nil
}
