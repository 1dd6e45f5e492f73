package main

import (
	"github.com/urfave/cli/v2"

	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/rpc"
)

// limitFlags are the per-request limits and exposure controls, shared by
// both kinds of node (docs/reliability.md lists them with their reasons).
var limitFlags = []cli.Flag{
	&cli.DurationFlag{Name: "rpc.timeout", Value: rpc.DefaultTimeout, Usage: "deadline of one request (a batch shares one); past it the answer is -32002 \"request timed out\" (0 = none)", EnvVars: envName("rpc.timeout")},
	&cli.IntFlag{Name: "rpc.max-response-size", Value: rpc.DefaultMaxResponseSize, Usage: "bytes of one answer, single call or batch (-32005 above it; 0 = no cap)", EnvVars: envName("rpc.max-response-size")},
	&cli.Uint64Flag{Name: "rpc.getlogs-max-range", Value: api.DefaultLogMaxRange, Usage: "blocks one eth_getLogs range may span (-32005 above it; 0 = no cap)", EnvVars: envName("rpc.getlogs-max-range")},
	&cli.IntFlag{Name: "rpc.getlogs-max-results", Value: api.DefaultLogMaxResults, Usage: "logs one eth_getLogs answer may hold (-32005 with a range that fits; 0 = no cap)", EnvVars: envName("rpc.getlogs-max-results")},
	&cli.IntFlag{Name: "rpc.max-connections", Value: rpc.DefaultMaxConnections, Usage: "open HTTP and websocket connections; at the cap a new one replaces the longest-idle, and is answered 503 only when none is idle", EnvVars: envName("rpc.max-connections")},
	&cli.IntFlag{Name: "rpc.max-tracing-requests", Value: node.DefaultMaxTracing, Usage: "debug_trace* and eth_simulateV1 calls run at once (others wait within their deadline)", EnvVars: envName("rpc.max-tracing-requests")},
	&cli.IntFlag{Name: "ws.max-subscriptions", Value: rpc.DefaultMaxSubscriptions, Usage: "live subscriptions per websocket connection (-32005 above it)", EnvVars: envName("ws.max-subscriptions")},
	&cli.BoolFlag{Name: "http.fastpath", Value: true, Usage: "answer plain JSON-RPC POSTs on the node's own HTTP path; false: net/http serves every request (slower, for comparison or if the fast path misbehaves)", EnvVars: envName("http.fastpath")},
	&cli.StringSliceFlag{Name: "http.vhosts", Value: cli.NewStringSlice(rpc.DefaultVHosts...), Usage: "Host header names served on every endpoint, against DNS rebinding (IP addresses always pass; * = any)", EnvVars: envName("http.vhosts")},
	&cli.StringSliceFlag{Name: "http.api", Usage: "API namespaces served, of those the node has (eth, net, web3, debug, txpool, wallet, anvil/evm/hardhat, testing, personal; follower in follow mode); * = all (default: all on a loopback address, eth,net,web3 elsewhere)", EnvVars: envName("http.api")},
	&cli.DurationFlag{Name: "shutdown-timeout", Value: node.DefaultShutdownTimeout, Usage: "on SIGINT/SIGTERM, how long requests in flight may take to finish", EnvVars: envName("shutdown-timeout")},
}

// applyLimitFlags sets cfg's limits from the flags; node.Config's
// ValidateLimits checks them, and its errors name these flags. On the
// command line 0 is "none" for the timeout and the response cap, as geth's
// flags spell it.
func applyLimitFlags(c *cli.Context, cfg *node.Config) error {
	cfg.RPCTimeout = orNone(c.Duration("rpc.timeout"), rpc.NoTimeout)
	cfg.MaxResponseSize = orNone(c.Int("rpc.max-response-size"), rpc.NoResponseCap)
	cfg.LogLimits = &api.LogLimits{ // checked by checkAPIConfig
		MaxRange:   orNone(c.Uint64("rpc.getlogs-max-range"), api.NoLogMaxRange),
		MaxResults: orNone(c.Int("rpc.getlogs-max-results"), api.NoLogMaxResults),
	}
	cfg.MaxConnections = c.Int("rpc.max-connections")
	cfg.MaxTracing = c.Int("rpc.max-tracing-requests")
	cfg.MaxSubs = c.Int("ws.max-subscriptions")
	cfg.VHosts = c.StringSlice("http.vhosts")
	cfg.DisableFastPath = !c.Bool("http.fastpath")
	if c.IsSet("http.api") { // checked against the namespaces the node registers (node.New)
		cfg.APIs = c.StringSlice("http.api")
	}
	cfg.ShutdownTimeout = c.Duration("shutdown-timeout")
	return flagError(cfg.ValidateLimits(), sameName)
}
