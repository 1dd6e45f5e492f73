package main

// Pre-confirmation workloads (go run ./bench -preconf-latency): preconf alone,
// with its sequencer (2 s blocks, 200 ms flashblocks), on loopback.
//
//   (a) send → visible at pending: N signed transfers sent open-loop at a
//       fixed rate with eth_sendRawTransaction; for each, the time until its
//       hash arrives on eth_subscribe("newFlashblockTransactions") and the
//       time until eth_getTransactionReceipt (polled every millisecond)
//       returns it. p50/p99/max over N (default 500).
//   (b) sustained pre-confirmations under read load: the ten dev accounts
//       send transfers as fast as the node pre-confirms them (each keeps a
//       bounded window in flight) while a closed-loop eth_getStorageAt
//       "pending" read load runs; transfers pre-confirmed per second, and
//       the reads' rate and p50/p99.

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
)

// latencyOptions are the -preconf-latency flags.
type latencyOptions struct {
	Enabled  bool          `json:"-"`
	Txs      int           `json:"txs"`
	Rate     float64       `json:"rate_per_s"`
	Duration time.Duration `json:"sustained_ns"`
	Window   int           `json:"window_per_sender"`
	// Chain is the sequencer's genesis: "l1" (the bench genesis, a
	// plain-Ethereum dev chain) or "op" (the OP-stack dev chain, the node's
	// default).
	Chain string `json:"chain"`
}

var latencyOpts latencyOptions

// addLatencyFlags registers the -preconf-latency flags on the harness's set.
func addLatencyFlags(fs *flag.FlagSet) {
	fs.BoolVar(&latencyOpts.Enabled, "preconf-latency", false, "run the pre-confirmation workloads instead: (a) send → visible at pending p50/p99, (b) sustained transfers/s pre-confirmed under a read load")
	fs.IntVar(&latencyOpts.Txs, "latency-txs", 500, "(a) transactions measured")
	fs.Float64Var(&latencyOpts.Rate, "latency-rate", 50, "(a) send rate, transactions per second")
	fs.DurationVar(&latencyOpts.Duration, "latency-duration", 10*time.Second, "(b) measuring time")
	fs.StringVar(&latencyOpts.Chain, "latency-chain", "l1", "the sequencer's chain: l1 (the bench genesis, plain Ethereum) or op (the OP-stack dev chain, preconf's default)")
	fs.IntVar(&latencyOpts.Window, "latency-window", 256, "(b) transactions each of the ten senders keeps in flight (enough to fill 30M-gas blocks with transfers)")
}

// latencyReport is what -preconf-latency measured.
type latencyReport struct {
	Started time.Time      `json:"started"`
	Host    map[string]any `json:"host"`
	Options latencyOptions `json:"options"`
	Version string         `json:"version"`
	// (a)
	Sent       int           `json:"sent"`
	NotifyP50  time.Duration `json:"notify_p50_ns"`
	NotifyP99  time.Duration `json:"notify_p99_ns"`
	NotifyMax  time.Duration `json:"notify_max_ns"`
	VisibleP50 time.Duration `json:"visible_p50_ns"`
	VisibleP99 time.Duration `json:"visible_p99_ns"`
	VisibleMax time.Duration `json:"visible_max_ns"`
	// (b)
	Preconfirmed int        `json:"preconfirmed"`
	TPS          float64    `json:"preconfirmed_per_s"`
	Reads        loadResult `json:"reads"`
}

// runLatency is -preconf-latency; the result is the exit code.
func runLatency(o options, stdout, log io.Writer) int {
	rep, err := measureLatency(o, log)
	if err != nil {
		fmt.Fprintln(log, "bench:", err)
		return 1
	}
	writeSideReport(o, stdout, log, "preconf-latency", rep, rep.markdown())
	return 0
}

func measureLatency(o options, log io.Writer) (*latencyReport, error) {
	lo := latencyOpts
	if lo.Txs <= 0 || lo.Rate <= 0 || lo.Duration <= 0 || lo.Window <= 0 {
		return nil, errors.New("-latency-txs, -latency-rate, -latency-duration and -latency-window must be positive")
	}
	gen := writeGenesis
	switch lo.Chain {
	case "l1":
	case "op":
		gen = func(path string) error {
			g, err := chain.DevL2Genesis()
			if err != nil {
				return err
			}
			return writeGenesisFile(path, g)
		}
	default:
		return nil, fmt.Errorf("-latency-chain %q: want l1 or op", lo.Chain)
	}
	_, _, n, stop, err := sequencingNodeWith(o, log, "preconf-latency-", gen)
	if err != nil {
		return nil, err
	}
	defer stop()
	rep := &latencyReport{Started: time.Now().UTC(), Host: hostInfo(), Options: lo, Version: n.version()}

	w, err := watchPreconfirmations(n.addr)
	if err != nil {
		return nil, err
	}
	defer w.close()
	s, err := newSenders(n.addr)
	if err != nil {
		return nil, err
	}

	fmt.Fprintf(log, "(a) %d transfers at %.0f/s: send → newFlashblockTransactions, send → receipt readable\n", lo.Txs, lo.Rate)
	if err := latencyRun(rep, n.addr, s, w, lo); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "(b) %s of transfers (window %d per sender) under an eth_getStorageAt pending read load (%d conns)\n", lo.Duration, lo.Window, o.Conns)
	if err := sustainedRun(rep, n.addr, s, w, lo, o.Conns); err != nil {
		return nil, err
	}
	return rep, nil
}

// watcher records when each transaction hash is pre-confirmed, from a
// newFlashblockTransactions subscription.
type watcher struct {
	conn   *websocket.Conn
	mu     sync.Mutex
	seen   map[common.Hash]time.Time
	notify chan struct{} // pulsed on each arrival
	count  atomic.Int64
	done   chan struct{}
	err    error
}

func watchPreconfirmations(addr string) (*watcher, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/", nil)
	if err != nil {
		return nil, fmt.Errorf("websocket: %w", err)
	}
	c.SetReadLimit(16 << 20)
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newFlashblockTransactions"]}`)); err != nil {
		c.CloseNow()
		return nil, err
	}
	_, data, err := c.Read(ctx)
	var resp struct {
		Result string `json:"result"`
	}
	if err != nil || json.Unmarshal(data, &resp) != nil || resp.Result == "" {
		c.CloseNow()
		return nil, fmt.Errorf("eth_subscribe newFlashblockTransactions: %v %.200s", err, data)
	}
	w := &watcher{conn: c, seen: make(map[common.Hash]time.Time), notify: make(chan struct{}, 1), done: make(chan struct{})}
	go w.loop()
	return w, nil
}

func (w *watcher) loop() {
	defer close(w.done)
	for {
		_, data, err := w.conn.Read(context.Background())
		now := time.Now()
		if err != nil {
			w.err = err
			return
		}
		var m struct {
			Params struct {
				Result common.Hash `json:"result"`
			} `json:"params"`
		}
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		w.mu.Lock()
		w.seen[m.Params.Result] = now
		w.mu.Unlock()
		w.count.Add(1)
		select {
		case w.notify <- struct{}{}:
		default:
		}
	}
}

func (w *watcher) at(h common.Hash) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.seen[h]
	return t, ok
}

func (w *watcher) close() { w.conn.CloseNow(); <-w.done }

// senders signs transfers for the ten dev accounts with local nonces.
type senders struct {
	keys   []*signerKey
	signer types.Signer
	chain  *big.Int
}

type signerKey struct {
	key   *ecdsa.PrivateKey
	from  common.Address
	nonce uint64
}

func newSenders(addr string) (*senders, error) {
	s := &senders{chain: big.NewInt(chain.DevChainID)}
	s.signer = types.LatestSignerForChainID(s.chain)
	for _, hexKey := range chain.DevKeys {
		k, err := crypto.HexToECDSA(hexKey)
		if err != nil {
			return nil, err
		}
		from := crypto.PubkeyToAddress(k.PublicKey)
		raw, err := rpcCall(addr, "eth_getTransactionCount", from, "pending")
		if err != nil {
			return nil, err
		}
		var nonce hexutil.Uint64
		if err := json.Unmarshal(raw, &nonce); err != nil {
			return nil, err
		}
		s.keys = append(s.keys, &signerKey{key: k, from: from, nonce: uint64(nonce)})
	}
	return s, nil
}

var sink = common.HexToAddress("0x000000000000000000000000000000000000b0b0")

// next signs sender i's next transfer as an eth_sendRawTransaction request.
func (s *senders) next(i int, addr string) (common.Hash, []byte, error) {
	k := s.keys[i]
	tx, err := types.SignNewTx(k.key, s.signer, &types.DynamicFeeTx{
		ChainID: s.chain, Nonce: k.nonce, GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(200e9),
		Gas: 21000, To: &sink, Value: big.NewInt(1),
	})
	if err != nil {
		return common.Hash{}, nil, err
	}
	k.nonce++
	raw, _ := tx.MarshalBinary()
	return tx.Hash(), httpRequest(addr, encode(newCall(1, "eth_sendRawTransaction", hexutil.Encode(raw)))), nil
}

func sendOK(c *client, req []byte) error {
	body, err := c.do(req)
	if err != nil {
		return err
	}
	if !strings.Contains(string(body), `"result"`) {
		return fmt.Errorf("eth_sendRawTransaction: %.200s", body)
	}
	return nil
}

// latencyRun is workload (a).
func latencyRun(rep *latencyReport, addr string, s *senders, w *watcher, lo latencyOptions) error {
	hashes := make([]common.Hash, lo.Txs)
	reqs := make([][]byte, lo.Txs)
	for i := range lo.Txs {
		h, req, err := s.next(i%len(s.keys), addr)
		if err != nil {
			return err
		}
		hashes[i], reqs[i] = h, req
	}
	sentAt := make([]atomic.Int64, lo.Txs) // unix nanos, 0 = not yet
	visible := make([]time.Time, lo.Txs)
	sendErr := make(chan error, 1)
	go func() {
		c, err := dial(addr)
		if err != nil {
			sendErr <- err
			return
		}
		defer c.close()
		interval := time.Duration(float64(time.Second) / lo.Rate)
		start := time.Now()
		for i := range lo.Txs {
			time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
			sentAt[i].Store(time.Now().UnixNano())
			if err := sendOK(c, reqs[i]); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- nil
	}()
	// Poll receipts in send order: a transaction is visible when its
	// receipt is readable; later ones of the same flashblock follow at once.
	pc, err := dial(addr)
	if err != nil {
		return err
	}
	defer pc.close()
	deadline := time.Now().Add(time.Duration(float64(lo.Txs)/lo.Rate*float64(time.Second)) + 60*time.Second)
	for i := 0; i < lo.Txs; {
		if time.Now().After(deadline) {
			return fmt.Errorf("(a) only %d of %d transactions became visible", i, lo.Txs)
		}
		if sentAt[i].Load() == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		body, err := pc.do(httpRequest(addr, encode(newCall(1, "eth_getTransactionReceipt", hashes[i]))))
		if err != nil {
			return err
		}
		if !strings.Contains(string(body), `"result":null`) {
			visible[i] = time.Now()
			i++
			continue
		}
		time.Sleep(time.Millisecond)
	}
	if err := <-sendErr; err != nil {
		return err
	}
	var notify, vis []time.Duration
	for i, h := range hashes {
		at, ok := w.at(h)
		for !ok && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
			at, ok = w.at(h)
		}
		if !ok {
			return fmt.Errorf("(a) %s never arrived on newFlashblockTransactions", h)
		}
		sent := time.Unix(0, sentAt[i].Load())
		notify = append(notify, at.Sub(sent))
		vis = append(vis, visible[i].Sub(sent))
	}
	slices.Sort(notify)
	slices.Sort(vis)
	rep.Sent = lo.Txs
	rep.NotifyP50, rep.NotifyP99, rep.NotifyMax = percentile(notify, 0.50), percentile(notify, 0.99), notify[len(notify)-1]
	rep.VisibleP50, rep.VisibleP99, rep.VisibleMax = percentile(vis, 0.50), percentile(vis, 0.99), vis[len(vis)-1]
	return nil
}

// sustainedRun is workload (b).
func sustainedRun(rep *latencyReport, addr string, s *senders, w *watcher, lo latencyOptions, conns int) error {
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		mu      sync.Mutex
		sent    []common.Hash
		firstEr error
	)
	start := time.Now()
	end := start.Add(lo.Duration)
	for i := range s.keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(addr)
			if err != nil {
				mu.Lock()
				firstEr = cmpErr(firstEr, err)
				mu.Unlock()
				return
			}
			defer c.close()
			var mine []common.Hash
			done := 0 // how many of mine are pre-confirmed
			for !stop.Load() {
				for done < len(mine) {
					if _, ok := w.at(mine[done]); !ok {
						break
					}
					done++
				}
				if len(mine)-done >= lo.Window {
					select {
					case <-w.notify:
					case <-time.After(10 * time.Millisecond):
					}
					continue
				}
				h, req, err := s.next(i, addr)
				if err == nil {
					err = sendOK(c, req)
				}
				if err != nil {
					mu.Lock()
					firstEr = cmpErr(firstEr, err)
					mu.Unlock()
					return
				}
				mine = append(mine, h)
			}
			mu.Lock()
			sent = append(sent, mine...)
			mu.Unlock()
		}()
	}
	reads, err := runLoad(loadConfig{Addr: addr, Conns: conns, Duration: lo.Duration, MaxRequests: 5_000_000,
		Bodies: storage("pending").Bodies, Check: checkCalls(1)})
	time.Sleep(time.Until(end))
	stop.Store(true)
	wg.Wait()
	if err != nil {
		return err
	}
	if firstEr != nil {
		return fmt.Errorf("(b) sending: %w", firstEr)
	}
	count := 0
	for _, h := range sent {
		if at, ok := w.at(h); ok && !at.After(end) {
			count++
		}
	}
	rep.Preconfirmed = count
	rep.TPS = float64(count) / lo.Duration.Seconds()
	rep.Reads = reads
	if reads.Errors > 0 {
		return fmt.Errorf("(b) %d failed reads, first: %s", reads.Errors, reads.FirstError)
	}
	return nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func (r *latencyReport) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## preconf pre-confirmation latency (%s, %s)\n\n", r.Version, r.Started.Format(time.RFC3339))
	chainName := "the bench genesis, a plain-Ethereum dev chain"
	if r.Options.Chain == "op" {
		chainName = "the OP-stack dev chain"
	}
	fmt.Fprintf(&b, "(a) %d transfers sent at %.0f/s with eth_sendRawTransaction (%s; 200 ms flashblocks, 2 s blocks):\n\n", r.Sent, r.Options.Rate, chainName)
	b.WriteString("| send → | p50 | p99 | max |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| newFlashblockTransactions notification | %s | %s | %s |\n", fmtDur(r.NotifyP50), fmtDur(r.NotifyP99), fmtDur(r.NotifyMax))
	fmt.Fprintf(&b, "| eth_getTransactionReceipt returns it (1 ms polling) | %s | %s | %s |\n\n", fmtDur(r.VisibleP50), fmtDur(r.VisibleP99), fmtDur(r.VisibleMax))
	fmt.Fprintf(&b, "(b) %s of transfers from 10 senders (window %d each) while eth_getStorageAt(…, \"pending\") runs closed-loop:\n\n", r.Options.Duration, r.Options.Window)
	b.WriteString("| transfers pre-confirmed | per second | reads/s | read p50 | read p99 |\n|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| %d | %.0f | %.0f | %s | %s |\n", r.Preconfirmed, r.TPS, r.Reads.RPS, fmtDur(r.Reads.P50), fmtDur(r.Reads.P99))
	return b.String()
}
