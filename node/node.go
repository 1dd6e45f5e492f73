// Package node assembles a running preconf node from its parts: the chain,
// the pending source, the method handlers and the HTTP listener. It holds no
// logic of its own beyond start-up order and shutdown.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ethereum/go-ethereum/core"

	"github.com/preconf/preconf/api"
	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/feed"
	"github.com/preconf/preconf/follower"
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

	HTTPAddr    string // default 127.0.0.1
	HTTPPort    int    // 0 = any free port
	MaxBody     int64
	CORSOrigins []string
	BatchLimit  int

	BlockTime time.Duration // 0: never seal new blocks (no sequencer)

	// Sequencer configures flashblocks and sealing when BlockTime > 0
	// (BlockTime, WALPath and Logger are filled in by New).
	Sequencer sequencer.Config

	// Simulate sets eth_call/eth_estimateGas/eth_createAccessList/
	// eth_simulateV1 limits and the state-root mode; nil = the defaults
	// (50M gas cap, 5 s, zero roots).
	Simulate *simulate.Options

	// Wallet configures the built-in wallet (wallet_addEthereumChain, …);
	// New fills in DataDir, NodeAddr, Logger and Self's chain id.
	Wallet wallet.Config

	Logger *slog.Logger
}

// Node is a running node.
type Node struct {
	cfg     Config
	log     *slog.Logger
	Chain   *chain.Chain
	Pending *pending.Source
	RPC     *rpc.Server
	// Sequencer builds flashblocks and blocks (nil with BlockTime 0).
	Sequencer *sequencer.Sequencer
	Wallet    *wallet.Wallet
	Web       *web.Site // the page on "/" for browsers, /chain.json, /wallet/…
	// Subscriptions serves eth_subscribe over WS (JSON-RPC over websocket
	// on "/" and "/ws"); Feed is the flashblocks feed on "/flashblocks".
	Subscriptions *subscribe.Service
	WS            *rpc.WSHandler
	Feed          *feed.Feed
	// Follower follows an upstream's flashblocks in follow mode (NewFollow).
	Follower *follower.Follower

	listener net.Listener
	http     *http.Server
	mux      *http.ServeMux
	closers  []func() error
}

// New opens the chain, imports blocks and registers the methods. It does not
// listen yet: Start does.
func New(cfg Config) (*Node, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	c, err := chain.Open(chain.Config{Dir: cfg.DataDir, Genesis: cfg.Genesis, Logger: logger})
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: logger, Chain: c, Pending: new(pending.Source)}
	n.closers = append(n.closers, c.Close)
	for _, f := range cfg.Imports {
		res, err := c.ImportFile(f)
		if err != nil {
			n.Close()
			return nil, err
		}
		logger.Info("import done", "file", f, "imported", res.Imported, "skipped", res.Skipped, "head", c.Head().Number)
	}
	n.RPC = rpc.NewServer(rpc.Options{BatchLimit: cfg.BatchLimit, Logger: logger})
	methods := api.New(c, n.Pending)
	if cfg.Simulate != nil {
		methods.SetSimulateOptions(*cfg.Simulate)
	}
	methods.Register(n.RPC)
	if err := n.startWallet(c.Config().ChainID); err != nil {
		n.Close()
		return nil, err
	}
	n.startStreaming()
	if err := n.startSequencer(methods); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

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

// startSequencer starts block production when BlockTime > 0 (after WAL
// recovery, so the pending state is complete before anyone can read it);
// otherwise transaction intake answers that this node does not sequence.
// reads gives the intake methods eth_getTransactionReceipt's receipts and
// eth_estimateGas's estimates.
func (n *Node) startSequencer(reads *api.API) error {
	if n.cfg.BlockTime <= 0 {
		sequencer.RegisterDisabled(n.RPC)
		return nil
	}
	scfg := n.cfg.Sequencer
	scfg.BlockTime, scfg.Logger = n.cfg.BlockTime, n.log
	if n.cfg.DataDir != "" {
		scfg.WALPath = filepath.Join(n.cfg.DataDir, "sequencer", "flashblocks.wal")
	}
	seq, err := sequencer.New(scfg, n.Chain, n.Pending)
	if err != nil {
		return err
	}
	if err := seq.Start(); err != nil {
		return err
	}
	n.Sequencer = seq
	n.OnClose(seq.Stop)
	seq.Register(n.RPC, reads, reads)
	return nil
}

// startStreaming sets up JSON-RPC over websocket with subscriptions and the
// flashblocks feed. Both follow the pending source from before the
// sequencer's first flashblock, so every flashblock is streamed.
func (n *Node) startStreaming() {
	streams := rpc.StreamOptions{Origins: n.cfg.CORSOrigins, Logger: n.log}
	n.Subscriptions = subscribe.New(n.Chain, n.Pending, n.log)
	n.Subscriptions.Register(n.RPC)
	n.Subscriptions.Start()
	n.OnClose(n.Subscriptions.Close)
	n.WS = n.RPC.WSHandler(rpc.WSOptions{StreamOptions: streams, MaxMessage: n.cfg.MaxBody})
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
	httpOpts := rpc.HTTPOptions{MaxBody: n.cfg.MaxBody, CORSOrigins: n.cfg.CORSOrigins, Other: other}
	rpcHandler := n.RPC.HTTPHandler(httpOpts)
	n.mux.Handle("/", rpcHandler)
	n.http = &http.Server{
		Handler:           n.mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	go func() {
		// Plain JSON-RPC POSTs are answered on rpc's fast path; everything
		// else goes to n.http unchanged.
		if err := n.RPC.ServeFast(ln, n.http, httpOpts); err != nil && !errors.Is(err, http.ErrServerClosed) {
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

// Close stops serving and closes everything, newest first.
func (n *Node) Close() error {
	if n.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		n.http.Shutdown(ctx)
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
