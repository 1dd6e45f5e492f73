package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ethereum/go-ethereum/params"
	"github.com/urfave/cli/v2"

	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/follower"
	"github.com/preconf/preconf/follower/feed"
	"github.com/preconf/preconf/forkrules"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/opstack"
	"github.com/preconf/preconf/remote"
)

// followOwnFlags are the flags only `preconf follow` has.
var followOwnFlags = []cli.Flag{
	&cli.StringFlag{Name: "upstream", Usage: "HTTP JSON-RPC URL of the execution node to follow (op-geth, reth, Base's node, another preconf)", EnvVars: envName("upstream")},
	&cli.StringFlag{Name: "flashblocks", Usage: "websocket URL of the flashblocks feed (JSON text or brotli binary frames)", EnvVars: envName("flashblocks")},
	&cli.StringFlag{Name: "chain", Usage: "an OP-stack chain of op-geth's superchain registry: op, op-sepolia, unichain, unichain-sepolia, ink, … (NAME for mainnet, NAME-NETWORK, or the chain id); other chains: --genesis", EnvVars: envName("chain")},
	&cli.StringFlag{Name: "proofs", Value: "auto", Usage: "verify upstream state reads with eth_getProof against the block's state root: auto (when offered), required, off", EnvVars: envName("proofs")},
	&cli.DurationFlag{Name: "upstream.poll", Value: follower.DefaultPollInterval, Usage: "how often the upstream's head is polled", EnvVars: envName("upstream.poll")},
	&cli.DurationFlag{Name: "upstream.timeout", Value: follower.DefaultUpstreamTimeout, Usage: "time limit of one upstream request", EnvVars: envName("upstream.timeout")},
	&cli.IntFlag{Name: "flashblocks.ahead", Value: feed.DefaultAhead, Usage: "blocks of flashblocks buffered ahead of the upstream's head", EnvVars: envName("flashblocks.ahead")},
	&cli.DurationFlag{Name: "flashblocks.ping", Value: feed.DefaultPingInterval, Usage: "how often the feed is pinged; a feed that answers neither a ping nor with a frame within it is reconnected", EnvVars: envName("flashblocks.ping")},
	&cli.DurationFlag{Name: "flashblocks.backoff", Value: feed.DefaultMaxBackoff, Usage: "longest wait between attempts to reconnect the feed (the first is immediate)", EnvVars: envName("flashblocks.backoff")},
	&cli.DurationFlag{Name: "flashblocks.stall", Value: follower.DefaultStall, Usage: "a feed silent, a head poll unanswered, or an upstream behind the feed for this long makes /health and /readyz answer 503", EnvVars: envName("flashblocks.stall")},
}

func followCommand() *cli.Command {
	return &cli.Command{
		Name:      "follow",
		Usage:     "serve the preconf interface for an existing node's chain by following its flashblocks feed",
		UsageText: "preconf follow --upstream http://node:8545 --flashblocks ws://feed/ws [--chain op | --genesis genesis.json] [options]",
		Flags:     flagsOf(followGroups),
		Action:    runFollow,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return cli.Exit(fmt.Sprintf("preconf follow: %v (see --help)", err), 2)
		},
	}
}

func parseProofs(s string) (remote.Proofs, error) {
	switch s {
	case "auto":
		return remote.ProofsAuto, nil
	case "required":
		return remote.ProofsRequired, nil
	case "off":
		return remote.ProofsOff, nil
	}
	return 0, fmt.Errorf("bad --proofs %q: want auto, required or off", s)
}

// followChain is the chain configuration to execute with: a registry chain
// by name, a genesis file's config, or a built-in dev chain's (the
// OP-stack one at hardfork, or with l1 the plain-Ethereum one). It refuses
// Base, which streams no flashblocks since Denim, and a chain whose active
// fork preconf does not implement, naming it.
func followChain(name, genesis string, l1 bool, hardfork string) (*params.ChainConfig, error) {
	config, err := pickFollowChain(name, genesis, l1, hardfork)
	if err != nil {
		return nil, err
	}
	if err := opstack.CheckNotBase(config.ChainID.Uint64(), true); err != nil {
		return nil, err
	}
	if err := forkrules.Check(config, uint64(time.Now().Unix())); err != nil {
		return nil, err
	}
	return config, nil
}

func pickFollowChain(name, genesis string, l1 bool, hardfork string) (*params.ChainConfig, error) {
	set := 0
	for _, on := range []bool{name != "", genesis != "", l1} {
		if on {
			set++
		}
	}
	switch {
	case set > 1:
		return nil, errors.New("--chain, --genesis and --l1 are exclusive")
	case name != "":
		if err := opstack.CheckNameNotBase(name, true); err != nil {
			return nil, err
		}
		return opstack.ChainConfig(name)
	case genesis != "":
		g, err := chain.LoadGenesis(genesis)
		if err != nil {
			return nil, err
		}
		return g.Config, nil
	case l1:
		return chain.DevGenesis().Config, nil
	}
	g, err := devL2Hardfork(hardfork)
	if err != nil {
		return nil, err
	}
	return g.Config, nil
}

func runFollow(c *cli.Context) error {
	usage := func(format string, args ...any) error {
		return cli.Exit("preconf follow: "+fmt.Sprintf(format, args...), 2)
	}
	if c.NArg() > 0 {
		return usage("unexpected argument %q (see --help)", c.Args().First())
	}
	logger, err := newLogger(c)
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	slog.SetDefault(logger)
	proofs, err := parseProofs(c.String("proofs"))
	if err != nil {
		return usage("%v", err)
	}
	if c.IsSet("hardfork") && (c.String("chain") != "" || c.String("genesis") != "" || c.Bool("l1")) {
		return usage("--hardfork picks the forks of the built-in OP-stack dev chain; with --chain, --genesis or --l1 the chain's own config decides")
	}
	config, err := followChain(c.String("chain"), c.String("genesis"), c.Bool("l1"), c.String("hardfork"))
	switch {
	case errors.As(err, new(*opstack.BaseError)), errors.As(err, new(*forkrules.UnsupportedError)):
		return cli.Exit("preconf follow: "+err.Error(), 1)
	case err != nil:
		return usage("%v", err)
	}
	api.Version = "preconf/v" + version
	cfg, err := sharedConfig(c, logger)
	if err != nil {
		return usage("%v", err)
	}
	fcfg := follower.Config{
		Upstream: c.String("upstream"), Feed: c.String("flashblocks"), Chain: config, Proofs: proofs,
		PollInterval: c.Duration("upstream.poll"), UpstreamTimeout: c.Duration("upstream.timeout"),
		Ahead: c.Int("flashblocks.ahead"), PingInterval: c.Duration("flashblocks.ping"),
		MaxBackoff: c.Duration("flashblocks.backoff"), Stall: c.Duration("flashblocks.stall"),
	}
	if err := fcfg.Validate(); err != nil { // its options are named as these flags
		return usage("%v", flagError(err, sameName))
	}
	cfg.Follow = &fcfg
	n, err := node.New(cfg)
	if err != nil {
		return cli.Exit(fmt.Sprintf("preconf follow: %v", err), 1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM) // before serving, as the node does
	if err := n.Start(nil); err != nil {
		n.Close()
		return cli.Exit(fmt.Sprintf("preconf follow: %v", err), 1)
	}
	logger.Info("following", "upstream", remote.RedactURL(fcfg.Upstream), "flashblocks", remote.RedactURL(fcfg.Feed), "chain", config.ChainID)
	<-sig
	logger.Info("shutting down")
	return n.Close()
}
