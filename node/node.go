// Package node assembles a running preconf node from its parts: the chain,
// the pending source, the method handlers and the HTTP listener. It holds no
// logic of its own beyond start-up order and shutdown.
package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/params"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/ethjson"
	"github.com/preconf/preconf/feed"
	"github.com/preconf/preconf/follower"
	"github.com/preconf/preconf/fork"
	"github.com/preconf/preconf/internal/option"
	"github.com/preconf/preconf/pending"
	"github.com/preconf/preconf/rpc"
	"github.com/preconf/preconf/sequencer"
	"github.com/preconf/preconf/simulate"
	"github.com/preconf/preconf/subscribe"
	"github.com/preconf/preconf/wallet"
	"github.com/preconf/preconf/web"
)

// Config is everything a node needs to start.
type Config struct {
	DataDir string        // "" = in memory
	Genesis *core.Genesis // nil = stored genesis, or the dev genesis for a new datadir
	Imports []string      // RLP block files imported before serving

	// Fork, when set, forks an upstream chain instead (fork mode): the
	// node's chain is fork.Open(*Fork) with DataDir and Logger filled in;
	// Genesis (its config only: the chain rules) goes to Fork.Genesis.
	Fork *fork.Config

	// Follow, when set, follows a live chain instead (follow mode): no
	// local chain, no sequencer; the follower's Logger and Metrics are
	// filled in by New.
	Follow *follower.Config

	HTTPAddr    string // default 127.0.0.1
	HTTPPort    int    // 0 = any free port
	MaxBody     int64
	CORSOrigins []string
	BatchLimit  int

	// Limits (docs/reliability.md); zero values take the defaults, negative
	// ones are refused (ValidateLimits).
	RPCTimeout      time.Duration // request deadline (rpc.DefaultTimeout; rpc.NoTimeout: none)
	MaxResponseSize int           // one answer's bytes (rpc.DefaultMaxResponseSize; rpc.NoResponseCap: none)
	MaxConnections  int           // open connections (rpc.DefaultMaxConnections)
	MaxTracing      int           // concurrent debug_trace*/eth_simulateV1 calls (DefaultMaxTracing)
	MaxSubs         int           // subscriptions per websocket (rpc.DefaultMaxSubscriptions)
	// DisableFastPath serves every HTTP request through net/http
	// (--http.fastpath=false) instead of answering plain JSON-RPC POSTs on
	// rpc's fast path.
	DisableFastPath bool
	LogLimits       *api.LogLimits // eth_getLogs caps (nil: api's defaults)
	// VHosts are the Host names served (nil: rpc.DefaultVHosts; "*": any).
	VHosts []string
	// APIs are the namespaces served (nil: every registered one when
	// listening on loopback, PublicAPIs otherwise; see exposedAPIs).
	APIs []string
	// ShutdownTimeout bounds the wait for requests in flight at Close
	// (DefaultShutdownTimeout when zero).
	ShutdownTimeout time.Duration

	// Sequencer, when set, builds flashblocks and blocks on the chain (its
	// mining mode, times and pool; WALPath, Fork and Logger are filled in
	// by New). Nil: no sequencer, the chain is served as imported and
	// transactions are refused.
	Sequencer *sequencer.Config

	// Simulate sets eth_call/eth_estimateGas/eth_createAccessList/
	// eth_simulateV1 limits and the state-root mode; nil = the defaults
	// (50M gas cap, 5 s, zero roots).
	Simulate *simulate.Options

	// CallDefault is eth_call's block when a request omits it: "latest"
	// (also the zero value) or "pending" (api.ParseCallDefault).
	// eth_estimateGas and eth_createAccessList always default to pending
	// (api/defaults.go).
	CallDefault ethjson.BlockRef

	// Wallet configures the built-in wallet (wallet_addEthereumChain, …);
	// New fills in DataDir, NodeAddr, Logger and Self's chain id.
	Wallet wallet.Config

	Logger *slog.Logger
}

// Node is a running node.
type Node struct {
	cfg Config
	log *slog.Logger
	// Chain is the local chain; Fork the forked one (fork mode): one is nil.
	Chain   *chain.Chain
	Fork    *fork.Chain
	Pending *pending.Source
	RPC     *rpc.Server
	// Sequencer builds flashblocks and blocks (nil without one).
	Sequencer *sequencer.Sequencer
	Wallet    *wallet.Wallet
	Web       *web.Site // the page on "/" for browsers, /chain.json, /wallet/…
	// Subscriptions serves eth_subscribe over WS (JSON-RPC over websocket
	// on "/" and "/ws"); Feed is the flashblocks feed on "/flashblocks".
	Subscriptions *subscribe.Service
	WS            *rpc.WSHandler
	Feed          *feed.Feed
	// Follower follows an upstream's flashblocks in follow mode (Config.Follow).
	Follower *follower.Follower

	// Metrics is the node's Prometheus registry, served on /metrics.
	Metrics *prometheus.Registry

	below  sequencer.Chain       // Chain or Fork, as the sequencer uses it
	events subscribe.ChainEvents // Chain's or Fork's new heads

	listener   net.Listener
	http       *http.Server
	mux        *http.ServeMux
	closers    []func() error
	rpcMetrics *rpc.Metrics
	snaps      *snapshotWatch
	draining   atomic.Bool
}

// DefaultMaxTracing is how many debug_trace* and eth_simulateV1 calls run
// at once, as reth's --rpc.max-tracing-requests: the cores less two, at
// least two.
var DefaultMaxTracing = max(runtime.NumCPU()-2, 2)

// DefaultShutdownTimeout is how long Close waits for requests in flight.
const DefaultShutdownTimeout = 10 * time.Second

// throttled are the methods whose memory and CPU per call are large.
var throttled = []string{"debug_traceCall", "debug_traceTransaction", "debug_traceBlockByNumber", "debug_traceBlockByHash", "eth_simulateV1"}

// newRPC makes a JSON-RPC server with the configured limits and the node's
// request metrics (metrics nil: a server that is not the public one).
func (n *Node) newRPC(metrics *rpc.Metrics) (*rpc.Server, error) {
	var ns []string
	if metrics != nil { // an inner server (follow mode's local methods): the public one filters
		var err error
		if ns, err = n.cfg.exposedAPIs(); err != nil {
			return nil, err
		}
	}
	return rpc.NewServer(rpc.Options{
		BatchLimit: n.cfg.BatchLimit, MaxResponseSize: n.cfg.MaxResponseSize, Timeout: n.cfg.RPCTimeout,
		Namespaces: ns, Throttled: throttled, MaxThrottled: cmp.Or(n.cfg.MaxTracing, DefaultMaxTracing),
		Metrics: metrics, Logger: n.log,
	}), nil
}

// apiConfig configures the method handlers over the pending source.
func (n *Node) apiConfig() api.Config {
	a := n.cfg.API()
	a.Pending = n.Pending
	return a
}

// API is the method handlers' configuration this one holds (Pending and
// PoolNonces are the node's to fill in).
func (c *Config) API() api.Config {
	return api.Config{Simulate: c.Simulate, CallDefault: c.CallDefault, LogLimits: c.LogLimits}
}

// New assembles a node: with Follow set, a follower of a live chain
// (follow.go); otherwise a local chain, forked or not, with a sequencer
// when Sequencer is set (local.go). It does not listen yet: Start does.
func New(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	n := &Node{cfg: cfg, log: logger, Pending: new(pending.Source)}
	if cfg.DataDir != "" { // the chain (a follower's: none) and the wallet registry
		unlock, err := lockDataDir(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		n.OnClose(unlock) // released last: closers run newest first
	}
	n.Metrics, n.rpcMetrics = newRegistry()
	build := n.buildLocal
	if cfg.Follow != nil {
		build = n.buildFollower
	}
	if err := build(); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// Validate checks the parts of the configuration against each other; each
// part's own Validate checks its fields.
func (c *Config) Validate() error {
	if err := c.ValidateLimits(); err != nil {
		return err
	}
	if err := c.Wallet.Validate(); err != nil {
		return fmt.Errorf("wallet: %w", err)
	}
	apiCfg := c.API()
	if err := apiCfg.Validate(); err != nil {
		return fmt.Errorf("api: %w", err)
	}
	if c.Follow != nil {
		if err := c.Follow.Validate(); err != nil {
			return fmt.Errorf("follower: %w", err)
		}
	}
	switch {
	case c.Follow != nil && (c.Fork != nil || c.Genesis != nil || len(c.Imports) > 0 || c.Sequencer != nil):
		return errors.New("a follower runs its upstream's chain: no fork, genesis, import or sequencer")
	case c.Fork != nil && len(c.Imports) > 0:
		return errors.New("--import adds blocks to a local chain, not to a fork")
	case c.Sequencer != nil:
		return c.Sequencer.Validate()
	}
	return nil
}

// ValidateLimits checks the per-request limits and the shutdown wait: zero
// is the default and none may be negative. Errors are option.FieldErrors
// named as the command line's flags.
func (c *Config) ValidateLimits() error {
	for _, l := range []struct {
		field string
		v     int64
	}{
		{"rpc.batch-limit", int64(c.BatchLimit)},
		{"rpc.timeout", int64(c.RPCTimeout)},
		{"rpc.max-response-size", int64(c.MaxResponseSize)},
		{"rpc.max-connections", int64(c.MaxConnections)},
		{"rpc.max-tracing-requests", int64(c.MaxTracing)},
		{"ws.max-subscriptions", int64(c.MaxSubs)},
		{"shutdown-timeout", int64(c.ShutdownTimeout)},
	} {
		if l.v < 0 {
			return option.Errorf(l.field, "must not be negative")
		}
	}
	return nil
}

// watchSnapshots follows the pending source for health and metrics.
func (n *Node) watchSnapshots() {
	n.snaps = newSnapshotWatch(n.Metrics, n.Sequencer != nil)
	var st stats
	if n.Sequencer != nil {
		st = seqStats{n.Sequencer.Stats()}
		pool := n.Sequencer.Pool()
		n.Metrics.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "preconf_txpool_transactions",
			Help: "Transactions waiting in the pool."}, func() float64 { return float64(pool.Len()) }))
	}
	if s := n.Pending.Current(); s != nil { // published during recovery, before this watch
		n.snaps.observe(s.NewTxs, s.Index, nil)
	}
	ch, stop := n.Pending.Subscribe(64)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case s := <-ch:
				if s != nil {
					n.snaps.observe(s.NewTxs, s.Index, st)
				}
			}
		}
	}()
	n.OnClose(func() error {
		stop()
		close(quit)
		<-done
		return nil
	})
}

// seqStats reads the sequencer's last phase times.
type seqStats struct{ s *sequencer.Stats }

func (a seqStats) phases() (build, wal, publish, seal int64) {
	return a.s.LastBuild.Load(), a.s.LastWALSync.Load(), a.s.LastPublish.Load(), a.s.LastSeal.Load()
}

func (a seqStats) readable() int64 { return a.s.LastReadable.Load() }

// startWallet opens the wallet for the chain with id chainID and mounts the
// web page (both kinds of node have them).
func (n *Node) startWallet(chainID *big.Int) error {
	n.mux = http.NewServeMux()
	wcfg := n.cfg.Wallet
	wcfg.DataDir, wcfg.NodeAddr, wcfg.Logger = n.cfg.DataDir, n.cfg.HTTPAddr, n.log
	wcfg.Self = wallet.SelfChain(chainID, wcfg.Self)
	w, err := wallet.Open(wcfg)
	if err != nil {
		return err
	}
	n.Wallet = w
	n.OnClose(n.Wallet.Close)
	n.Wallet.Register(n.RPC)
	n.Web = web.New(n.Wallet, n.log)
	n.Web.Mount(n.Handle)
	return nil
}

// startSubscriptions serves eth_subscribe on srv: newHeads and logs from
// events (the local chain's, or a follower's upstream's heads), and the
// pending ones from the pending source, which it follows from before the
// first flashblock, so every flashblock is streamed.
func (n *Node) startSubscriptions(config *params.ChainConfig, events subscribe.ChainEvents, srv *rpc.Server) {
	n.Subscriptions = subscribe.NewWithEvents(config, events, n.Pending, n.log)
	n.Subscriptions.Register(srv)
	n.Subscriptions.Start()
	n.OnClose(n.Subscriptions.Close)
}

// startStreams serves JSON-RPC over websocket on "/ws" (and on "/", by
// Start) and the flashblocks feed on "/flashblocks", so that followers can
// be chained.
func (n *Node) startStreams() {
	streams := rpc.StreamOptions{Origins: n.cfg.CORSOrigins, Logger: n.log, Metrics: n.rpcMetrics}
	n.WS = n.RPC.WSHandler(rpc.WSOptions{StreamOptions: streams, MaxMessage: n.cfg.MaxBody, MaxSubscriptions: n.cfg.MaxSubs})
	n.OnClose(n.WS.Close)
	n.Handle("/ws", n.WS)
	n.Feed = feed.New(n.Pending, streams)
	n.Feed.Start()
	n.OnClose(n.Feed.Close)
	n.Handle("/flashblocks", n.Feed)
}

// withWebSocket sends websocket upgrades on "/" to JSON-RPC over websocket
// and everything else to other.
func (n *Node) withWebSocket(other http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rpc.IsWebSocketUpgrade(r) {
			n.WS.ServeHTTP(w, r)
			return
		}
		other.ServeHTTP(w, r)
	})
}

// Handle adds an HTTP handler on a path other than "/" (e.g. a websocket feed).
func (n *Node) Handle(pattern string, h http.Handler) { n.mux.Handle(pattern, h) }

// OnClose registers a function run at Close, in reverse order.
func (n *Node) OnClose(f func() error) { n.closers = append(n.closers, f) }

// Start listens on the configured address and serves in the background.
// other answers non-POST requests on "/" (nil: the web page, n.Web).
func (n *Node) Start(other http.Handler) error {
	if other == nil {
		other = n.Web
	}
	other = n.withWebSocket(other)
	addr := n.cfg.HTTPAddr
	if addr == "" {
		addr = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(n.cfg.HTTPPort)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	n.listener = ln
	if err := n.Wallet.SetSelfRPCURL("http://" + ln.Addr().String()); err != nil {
		n.log.Warn("wallet registry", "err", err)
	}
	vhosts := n.cfg.VHosts
	if vhosts == nil {
		vhosts = rpc.DefaultVHosts
	}
	transport := n.RPC.HTTPHandler(rpc.HTTPOptions{MaxBody: n.cfg.MaxBody, CORSOrigins: n.cfg.CORSOrigins, Other: other,
		Hosts: rpc.NewHostAllowList(vhosts), MaxConnections: n.cfg.MaxConnections, HealthPaths: []string{"/health", "/readyz"},
		DisableFastPath: n.cfg.DisableFastPath})
	n.mux.Handle("/", transport)
	n.mux.Handle("/health", statusHandler(n.Health, "ok", "unhealthy"))
	n.mux.Handle("/readyz", statusHandler(n.Ready, "ready", "not ready"))
	n.mux.Handle("/metrics", metricsHandler(n.Metrics))
	// One request policy (rpc's) for every endpoint: the Host check applies
	// to JSON-RPC on either path, websockets, the feed, the page, /wallet/*,
	// /metrics.
	n.http = transport.NewServer(n.mux)
	go func() {
		// Plain JSON-RPC POSTs are answered on rpc's fast path (unless
		// DisableFastPath); everything else goes to n.http unchanged.
		if err := transport.Serve(ln, n.http); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("http server", "err", err)
		}
	}()
	n.log.Info("serving JSON-RPC", "url", "http://"+ln.Addr().String())
	return nil
}

// Addr is the listening address (after Start).
func (n *Node) Addr() string { return n.listener.Addr().String() }

// URL is the node's HTTP URL (after Start).
func (n *Node) URL() string { return "http://" + n.Addr() }

// Close drains and closes the node: it stops accepting connections (and
// /readyz answers 503), waits for the requests in flight to be answered
// (at most ShutdownTimeout; then they are cancelled), then closes
// everything newest first: websockets (close 1001 after their queued
// answers), the feed, the sequencer, and the chain last.
func (n *Node) Close() error {
	n.draining.Store(true)
	if n.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(n.cfg.ShutdownTimeout, DefaultShutdownTimeout))
		if err := n.http.Shutdown(ctx); err != nil {
			n.log.Warn("shutdown: HTTP connections still busy", "err", err)
		}
		if err := n.RPC.Drain(ctx); err != nil {
			n.log.Warn("shutdown: requests cancelled", "err", err)
		}
		n.http.Close()
		cancel()
	}
	var errs []error
	for i := len(n.closers) - 1; i >= 0; i-- {
		if err := n.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	n.closers = nil
	return errors.Join(errs...)
}
