package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/simulate"
)

// simulateFlags configure eth_call, eth_estimateGas, eth_createAccessList and
// eth_simulateV1: limits, eth_call's default block, state roots.
var simulateFlags = []cli.Flag{
	&cli.Uint64Flag{Name: "rpc.gascap", Value: simulate.DefaultGasCap, Usage: "gas cap of eth_call/eth_estimateGas and gas budget of one eth_simulateV1 request (0 = unlimited)", EnvVars: envName("rpc.gascap")},
	&cli.DurationFlag{Name: "rpc.evmtimeout", Value: simulate.DefaultTimeout, Usage: "time limit of one eth_call/eth_estimateGas/eth_createAccessList/eth_simulateV1 (0 = none; error -32016)", EnvVars: envName("rpc.evmtimeout")},
	&cli.StringFlag{Name: "rpc.call-default", Value: "latest", Usage: "block of an eth_call that names none: latest (the spec's default) or pending (the pre-confirmed state); eth_estimateGas and eth_createAccessList always default to pending", EnvVars: envName("rpc.call-default")},
	&cli.StringFlag{Name: "simulate.state-root", Value: "zero", Usage: "stateRoot of eth_simulateV1 blocks: zero (fast, not hashed) or compute (exactly go-ethereum's)", EnvVars: envName("simulate.state-root")},
}

// applySimulateFlags sets cfg.Simulate from the flags.
func applySimulateFlags(c *cli.Context, cfg *node.Config) error {
	roots, err := simulate.ParseRootMode(c.String("simulate.state-root"))
	if err != nil {
		return fmt.Errorf("--simulate.state-root: %w", err)
	}
	timeout := c.Duration("rpc.evmtimeout")
	if timeout < 0 {
		return fmt.Errorf("--rpc.evmtimeout must not be negative")
	}
	cfg.Simulate = &simulate.Options{GasCap: c.Uint64("rpc.gascap"), Timeout: timeout, Roots: roots}
	if cfg.CallDefault, err = api.ParseCallDefault(c.String("rpc.call-default")); err != nil {
		return fmt.Errorf("--rpc.call-default: %w", err)
	}
	applyGCFlags(c) // gc.go
	return nil
}
