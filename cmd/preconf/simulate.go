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

// applySimulateFlags sets cfg.Simulate and cfg.CallDefault from the flags
// (the command line's 0 is simulate's "none"); checkAPIConfig checks them.
func applySimulateFlags(c *cli.Context, cfg *node.Config) error {
	roots, err := simulate.ParseRootMode(c.String("simulate.state-root"))
	if err != nil {
		return fmt.Errorf("--simulate.state-root: %w", err)
	}
	cfg.Simulate = &simulate.Options{
		GasCap:  orNone(c.Uint64("rpc.gascap"), simulate.NoGasCap),
		Timeout: orNone(c.Duration("rpc.evmtimeout"), simulate.NoTimeout),
		Roots:   roots,
	}
	if cfg.CallDefault, err = api.ParseCallDefault(c.String("rpc.call-default")); err != nil {
		return fmt.Errorf("--rpc.call-default: %w", err)
	}
	applyGCFlags(c) // gc.go
	return nil
}

// apiFlags are the flags of api.Config's options (simulate's under
// "simulate."), for its errors.
var apiFlags = map[string]string{
	"call-default":        "rpc.call-default",
	"getlogs-max-results": "rpc.getlogs-max-results",
	"simulate.gas-cap":    "rpc.gascap",
	"simulate.timeout":    "rpc.evmtimeout",
	"simulate.state-root": "simulate.state-root",
}

// checkAPIConfig runs api.Config's Validate on the node's method-handler
// options (eth_call & co., eth_getLogs), naming the flag of a bad one.
func checkAPIConfig(cfg *node.Config) error {
	acfg := cfg.API()
	return flagError(acfg.Validate(), func(field string) string {
		if f, ok := apiFlags[field]; ok {
			return f
		}
		return field
	})
}

// orNone is v, or none when v is zero: the command line spells "none" 0
// where a package's zero is its default.
func orNone[T comparable](v, none T) T {
	var zero T
	if v == zero {
		return none
	}
	return v
}
