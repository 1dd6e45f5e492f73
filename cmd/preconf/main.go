// Command preconf runs a JSON-RPC node serving an Ethereum-compatible chain's
// pre-confirmed state. It only parses flags and wires packages together.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/node"
	"github.com/preconf/preconf/sequencer"
)

// version is set with -ldflags "-X main.version=…" by release builds.
var version = "0.1.0-dev"

// envName maps a flag name to its environment variable: --http.addr → PRECONF_HTTP_ADDR.
func envName(flag string) []string {
	r := strings.NewReplacer(".", "_", "-", "_")
	return []string{"PRECONF_" + strings.ToUpper(r.Replace(flag))}
}

func defaultDataDir() string {
	if d, err := os.UserHomeDir(); err == nil && d != "" {
		return filepath.Join(d, ".preconf")
	}
	return ".preconf"
}

// httpFlags say where a node keeps its data and how it serves JSON-RPC.
var httpFlags = []cli.Flag{
	&cli.StringFlag{Name: "datadir", Value: defaultDataDir(), Usage: "data directory (chain database, wallet registry)", EnvVars: envName("datadir")},
	&cli.StringFlag{Name: "http.addr", Value: "127.0.0.1", Usage: "HTTP JSON-RPC listening address", EnvVars: envName("http.addr")},
	&cli.IntFlag{Name: "http.port", Value: 8545, Usage: "HTTP JSON-RPC listening port", EnvVars: envName("http.port")},
	&cli.StringSliceFlag{Name: "http.corsdomain", Usage: "browser origins allowed to call the node (comma separated, * for any); CORS is off by default", EnvVars: envName("http.corsdomain")},
	&cli.Int64Flag{Name: "http.maxbody", Value: 5 << 20, Usage: "request body limit in bytes (413 above it)", EnvVars: envName("http.maxbody")},
	&cli.IntFlag{Name: "rpc.batch-limit", Value: 1000, Usage: "maximum requests in one JSON-RPC batch", EnvVars: envName("rpc.batch-limit")},
}

// chainFlags pick the chain a node runs or follows.
var chainFlags = []cli.Flag{
	&cli.StringFlag{Name: "genesis", Usage: "go-ethereum genesis JSON file (default: the built-in OP-stack dev chain, id 1337); with --fork-url, its config gives the fork's chain rules", EnvVars: envName("genesis")},
	&cli.StringFlag{Name: "hardfork", Value: chain.DevL2Hardfork.String(), Usage: "the newest OP Stack fork the built-in OP-stack dev chain runs, every one before it active too: isthmus, jovian or karst (the chains that pre-confirm run karst; world chain jovian)", EnvVars: envName("hardfork")},
	&cli.BoolFlag{Name: "l1", Usage: "the built-in plain-Ethereum dev chain (every fork through Osaka, no L1 fees or deposits) instead of the OP-stack one (follow: the chain the upstream runs)", EnvVars: envName("l1")},
}

// devChainFlags shape the local chain (`preconf` only).
var devChainFlags = []cli.Flag{
	&cli.StringSliceFlag{Name: "import", Usage: "RLP block file to import before serving (repeatable; known blocks are skipped)", EnvVars: envName("import")},
	&cli.DurationFlag{Name: "block-time", Value: sequencer.DefaultBlockTime, Usage: "seal a block this often; 0: manual mining, transactions are pooled (and pre-confirmed every --flashblock-interval unless 0) and blocks are sealed only by evm_mine / anvil_mine", EnvVars: envName("block-time")},
	&cli.BoolFlag{Name: "no-sequencer", Aliases: []string{"readonly"}, Usage: "no sequencer: serve the chain as imported, refuse transactions; pending is latest", EnvVars: envName("no-sequencer")},
}

// logFlags set the process's logger.
var logFlags = []cli.Flag{
	&cli.StringFlag{Name: "log.level", Value: "info", Usage: "log level: debug, info, warn, error", EnvVars: envName("log.level")},
	&cli.StringFlag{Name: "log.format", Value: "text", Usage: "log format: text (key=value) or json (one object a line)", EnvVars: envName("log.format")},
}

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "preconf:", err)
		os.Exit(1)
	}
}

// newApp is the command line: `preconf` runs a node with a local chain,
// its sub-commands follow a live chain or talk to a running node.
func newApp() *cli.App {
	return &cli.App{
		Name:    "preconf",
		Usage:   "a JSON-RPC node serving pre-confirmed (flashblock) state",
		Version: version,
		Flags:   flagsOf(nodeGroups),
		Action:  runNode,
		// Bad flags are a usage error: say so and exit non-zero.
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return cli.Exit(fmt.Sprintf("preconf: %v (see --help)", err), 2)
		},
		Commands: []*cli.Command{followCommand(), walletCommand},
	}
}

// newLogger is the process's logger on stderr: --log.level and
// --log.format (text, or json for log shippers).
func newLogger(c *cli.Context) (*slog.Logger, error) {
	return makeLogger(os.Stderr, c.String("log.level"), c.String("log.format"))
}

func makeLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("bad --log.level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("bad --log.format %q: want text or json", format)
}

// sharedConfig is the node configuration of the groups both commands take
// (sharedGroups): where the node serves, its limits, its wallet and its
// eth_call options. It also sets the process's GC and scheduling.
func sharedConfig(c *cli.Context, logger *slog.Logger) (node.Config, error) {
	cfg := node.Config{
		DataDir:     c.String("datadir"),
		HTTPAddr:    c.String("http.addr"),
		HTTPPort:    c.Int("http.port"),
		MaxBody:     c.Int64("http.maxbody"),
		CORSOrigins: c.StringSlice("http.corsdomain"),
		BatchLimit:  c.Int("rpc.batch-limit"),
		Logger:      logger,
	}
	if err := applyWalletFlags(c, &cfg); err != nil {
		return cfg, err
	}
	if err := applySimulateFlags(c, &cfg); err != nil {
		return cfg, err
	}
	applySchedFlags(c, logger) // sched.go
	if err := applyLimitFlags(c, &cfg); err != nil {
		return cfg, err
	}
	return cfg, checkAPIConfig(&cfg)
}

func runNode(c *cli.Context) error {
	if c.NArg() > 0 {
		return cli.Exit(fmt.Sprintf("preconf: unexpected argument %q (see --help)", c.Args().First()), 2)
	}
	logger, err := newLogger(c)
	if err != nil {
		return cli.Exit(err.Error(), 2)
	}
	slog.SetDefault(logger)
	stopPprof, err := startPprof(c, logger)
	if err != nil {
		return cli.Exit(fmt.Sprintf("preconf: %v", err), 1)
	}
	defer stopPprof()
	api.Version = "preconf/v" + version
	cfg, err := sharedConfig(c, logger)
	if err != nil {
		return cli.Exit(fmt.Sprintf("preconf: %v", err), 2)
	}
	cfg.Imports = c.StringSlice("import")
	if err := applySequencerFlags(c, &cfg); err != nil {
		return cli.Exit(fmt.Sprintf("preconf: %v", err), 2)
	}
	if err := applyForkFlags(c, &cfg); err != nil {
		return cli.Exit(fmt.Sprintf("preconf: %v", err), 2)
	}
	if g := c.String("genesis"); g != "" {
		if c.Bool("l1") {
			return cli.Exit("preconf: --l1 and --genesis are exclusive (--l1 picks the built-in plain-Ethereum dev chain)", 2)
		}
		if cfg.Genesis, err = chain.LoadGenesis(g); err != nil {
			return cli.Exit(fmt.Sprintf("preconf: %v", err), 1)
		}
	}
	if c.Bool("l1") {
		if cfg.Fork != nil {
			return cli.Exit("preconf: --l1 picks the built-in plain-Ethereum dev chain; a fork runs the upstream's chain (--genesis gives its rules)", 2)
		}
		cfg.Genesis = chain.DevGenesis()
	}
	if c.IsSet("hardfork") {
		if cfg.Genesis != nil || cfg.Fork != nil {
			return cli.Exit("preconf: --hardfork picks the forks of the built-in OP-stack dev chain; with --genesis, --l1 or --fork-url the chain's own config decides", 2)
		}
		g, err := devL2Hardfork(c.String("hardfork"))
		if err != nil {
			return cli.Exit(fmt.Sprintf("preconf: %v", err), 2)
		}
		cfg.Genesis = g
	}
	if err := devChainID(c, &cfg); err != nil {
		return cli.Exit(fmt.Sprintf("preconf: %v", err), 2)
	}
	files, err := stateFileFlags(c)
	if err != nil {
		return cli.Exit(fmt.Sprintf("preconf: %v", err), 2)
	}
	n, err := node.New(cfg)
	if err != nil {
		return cli.Exit(fmt.Sprintf("preconf: %v", err), 1)
	}
	// Loaded before serving: the first answer already has the state.
	if err := files.loadInto(n); err != nil {
		n.Close()
		return cli.Exit(fmt.Sprintf("preconf: %v", err), 1)
	}
	// Catch SIGTERM before serving: a client that sees the node answer may
	// stop it at once.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	if err := n.Start(nil); err != nil {
		n.Close()
		return cli.Exit(fmt.Sprintf("preconf: %v", err), 1)
	}
	if isDevChain(c.String("genesis"), c.Bool("l1"), n) {
		if err := devBanner(os.Stdout, cfg, n); err != nil {
			logger.Warn("start-up banner", "err", err)
		}
	}
	<-sig
	logger.Info("shutting down")
	if err := files.dumpFrom(n); err != nil {
		logger.Error("state not dumped", "err", err)
	}
	return n.Close()
}
