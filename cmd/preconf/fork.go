package main

import (
	"errors"
	"net/url"

	"github.com/urfave/cli/v2"

	"github.com/preconf/preconf/fork"
	"github.com/preconf/preconf/node"
)

// forkFlags start the dev chain on top of another chain's state (fork mode).
var forkFlags = []cli.Flag{
	&cli.StringFlag{Name: "fork-url", Usage: "fork the chain of this JSON-RPC endpoint (HTTP): its state is read when first needed, proven against the fork block's state root and kept in the datadir", EnvVars: envName("fork-url")},
	&cli.Uint64Flag{Name: "fork-block-number", Usage: "the block to fork (default: the upstream's head when the datadir is created; a restart keeps the block it forked)", EnvVars: envName("fork-block-number")},
	&cli.Uint64Flag{Name: "chain-id", Usage: "the chain id a fork runs as (default: the upstream's), or a built-in dev chain (default 1337; e.g. 10 to look like OP Mainnet to a wallet)", EnvVars: envName("chain-id")},
}

// applyForkFlags sets cfg.Fork from the flags (--genesis, read by the
// caller, gives a fork its chain rules).
func applyForkFlags(c *cli.Context, cfg *node.Config) error {
	u := c.String("fork-url")
	if u == "" {
		if c.IsSet("fork-block-number") {
			return errors.New("--fork-block-number needs --fork-url")
		}
		return nil // --chain-id of a built-in dev chain: devChainID
	}
	if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return errors.New("--fork-url must be an http:// or https:// URL")
	}
	if len(cfg.Imports) > 0 {
		return errors.New("--import adds blocks to a local chain, not to a fork")
	}
	if c.IsSet("l1.block-time") {
		return errors.New("--l1.block-time sets the OP-stack dev chain's simulated L1; a fork simulates none (its local blocks carry no L1-attributes deposit)")
	}
	fc := &fork.Config{URL: u}
	if c.IsSet("fork-block-number") {
		n := c.Uint64("fork-block-number")
		fc.Block = &n
	}
	if c.IsSet("chain-id") {
		id := c.Uint64("chain-id")
		if id == 0 {
			return errors.New("--chain-id must not be 0")
		}
		fc.ChainID = &id
	}
	cfg.Fork = fc
	return nil
}
