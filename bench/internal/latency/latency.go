package latency

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
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum/common"

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
	"github.com/preconf/preconf/bench/internal/report"
	"github.com/preconf/preconf/bench/internal/workload"
	"github.com/preconf/preconf/chain"
)

// Options are the -preconf-latency flags.
type Options struct {
	Txs      int           `json:"txs"`
	Rate     float64       `json:"rate_per_s"`
	Duration time.Duration `json:"sustained_ns"`
	Window   int           `json:"window_per_sender"`
	// Chain is the sequencer's genesis: "l1" (the bench genesis, a
	// plain-Ethereum dev chain) or "op" (the OP-stack dev chain, the node's
	// default).
	Chain string `json:"chain"`
}

// AddFlags registers the experiment's own flags.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.Txs, "latency-txs", 500, "(a) transactions measured")
	fs.Float64Var(&o.Rate, "latency-rate", 50, "(a) send rate, transactions per second")
	fs.DurationVar(&o.Duration, "latency-duration", 10*time.Second, "(b) measuring time")
	fs.StringVar(&o.Chain, "latency-chain", "l1", "the sequencer's chain: l1 (the bench genesis, plain Ethereum) or op (the OP-stack dev chain, preconf's default)")
	fs.IntVar(&o.Window, "latency-window", 256, "(b) transactions each of the ten senders keeps in flight (enough to fill 30M-gas blocks with transfers)")
}

// Report is what -preconf-latency measured.
type Report struct {
	Started time.Time      `json:"started"`
	Host    map[string]any `json:"host"`
	Options Options        `json:"options"`
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
	Preconfirmed int         `json:"preconfirmed"`
	TPS          float64     `json:"preconfirmed_per_s"`
	Reads        load.Result `json:"reads"`
}

func Run(o harness.Options, lo Options, log io.Writer) (*Report, error) {
	if lo.Txs <= 0 || lo.Rate <= 0 || lo.Duration <= 0 || lo.Window <= 0 {
		return nil, errors.New("-latency-txs, -latency-rate, -latency-duration and -latency-window must be positive")
	}
	gen := harness.WriteGenesis
	switch lo.Chain {
	case "l1":
	case "op":
		gen = func(path string) error {
			g, err := chain.DevL2Genesis()
			if err != nil {
				return err
			}
			return harness.WriteGenesisFile(path, g)
		}
	default:
		return nil, fmt.Errorf("-latency-chain %q: want l1 or op", lo.Chain)
	}
	_, _, n, stop, err := harness.SequencingNodeWith(o, log, "preconf-latency-", gen)
	if err != nil {
		return nil, err
	}
	defer stop()
	rep := &Report{Started: time.Now().UTC(), Host: harness.HostInfo(), Options: lo, Version: n.Version()}

	w, err := watchPreconfirmations(n.Addr)
	if err != nil {
		return nil, err
	}
	defer w.close()
	s, err := harness.NewSenders(n.Addr)
	if err != nil {
		return nil, err
	}

	fmt.Fprintf(log, "(a) %d transfers at %.0f/s: send → newFlashblockTransactions, send → receipt readable\n", lo.Txs, lo.Rate)
	if err := latencyRun(rep, n.Addr, s, w, lo); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "(b) %s of transfers (window %d per sender) under an eth_getStorageAt pending read load (%d conns)\n", lo.Duration, lo.Window, o.Conns)
	if err := sustainedRun(rep, n.Addr, s, w, lo, o.Conns); err != nil {
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

// latencyRun is workload (a).
func latencyRun(rep *Report, addr string, s *harness.Senders, w *watcher, lo Options) error {
	hashes := make([]common.Hash, lo.Txs)
	reqs := make([][]byte, lo.Txs)
	for i := range lo.Txs {
		h, req, err := s.Next(i%s.Len(), addr)
		if err != nil {
			return err
		}
		hashes[i], reqs[i] = h, req
	}
	sentAt := make([]atomic.Int64, lo.Txs) // unix nanos, 0 = not yet
	visible := make([]time.Time, lo.Txs)
	sendErr := make(chan error, 1)
	go func() {
		c, err := load.Dial(addr)
		if err != nil {
			sendErr <- err
			return
		}
		defer c.Close()
		interval := time.Duration(float64(time.Second) / lo.Rate)
		start := time.Now()
		for i := range lo.Txs {
			time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
			sentAt[i].Store(time.Now().UnixNano())
			if err := harness.SendOK(c, reqs[i]); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- nil
	}()
	// Poll receipts in send order: a transaction is visible when its
	// receipt is readable; later ones of the same flashblock follow at once.
	pc, err := load.Dial(addr)
	if err != nil {
		return err
	}
	defer pc.Close()
	deadline := time.Now().Add(time.Duration(float64(lo.Txs)/lo.Rate*float64(time.Second)) + 60*time.Second)
	for i := 0; i < lo.Txs; {
		if time.Now().After(deadline) {
			return fmt.Errorf("(a) only %d of %d transactions became visible", i, lo.Txs)
		}
		if sentAt[i].Load() == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		body, err := pc.Do(load.HTTPRequest(addr, load.Encode(load.NewCall(1, "eth_getTransactionReceipt", hashes[i]))))
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
	rep.NotifyP50, rep.NotifyP99, rep.NotifyMax = load.Percentile(notify, 0.50), load.Percentile(notify, 0.99), notify[len(notify)-1]
	rep.VisibleP50, rep.VisibleP99, rep.VisibleMax = load.Percentile(vis, 0.50), load.Percentile(vis, 0.99), vis[len(vis)-1]
	return nil
}

// sustainedRun is workload (b).
func sustainedRun(rep *Report, addr string, s *harness.Senders, w *watcher, lo Options, conns int) error {
	var (
		stop    atomic.Bool
		wg      sync.WaitGroup
		mu      sync.Mutex
		sent    []common.Hash
		firstEr error
	)
	start := time.Now()
	end := start.Add(lo.Duration)
	for i := range s.Len() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := load.Dial(addr)
			if err != nil {
				mu.Lock()
				firstEr = harness.CmpErr(firstEr, err)
				mu.Unlock()
				return
			}
			defer c.Close()
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
				h, req, err := s.Next(i, addr)
				if err == nil {
					err = harness.SendOK(c, req)
				}
				if err != nil {
					mu.Lock()
					firstEr = harness.CmpErr(firstEr, err)
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
	reads, err := load.Run(load.Config{Addr: addr, Conns: conns, Duration: lo.Duration, MaxRequests: 5_000_000,
		Bodies: workload.Storage("pending").Bodies, Check: load.CheckCalls(1)})
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

func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## preconf pre-confirmation latency (%s, %s)\n\n", r.Version, r.Started.Format(time.RFC3339))
	chainName := "the bench genesis, a plain-Ethereum dev chain"
	if r.Options.Chain == "op" {
		chainName = "the OP-stack dev chain"
	}
	fmt.Fprintf(&b, "(a) %d transfers sent at %.0f/s with eth_sendRawTransaction (%s; 200 ms flashblocks, 2 s blocks):\n\n", r.Sent, r.Options.Rate, chainName)
	b.WriteString("| send → | p50 | p99 | max |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| newFlashblockTransactions notification | %s | %s | %s |\n", report.FmtDur(r.NotifyP50), report.FmtDur(r.NotifyP99), report.FmtDur(r.NotifyMax))
	fmt.Fprintf(&b, "| eth_getTransactionReceipt returns it (1 ms polling) | %s | %s | %s |\n\n", report.FmtDur(r.VisibleP50), report.FmtDur(r.VisibleP99), report.FmtDur(r.VisibleMax))
	fmt.Fprintf(&b, "(b) %s of transfers from 10 senders (window %d each) while eth_getStorageAt(…, \"pending\") runs closed-loop:\n\n", r.Options.Duration, r.Options.Window)
	b.WriteString("| transfers pre-confirmed | per second | reads/s | read p50 | read p99 |\n|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| %d | %.0f | %.0f | %s | %s |\n", r.Preconfirmed, r.TPS, r.Reads.RPS, report.FmtDur(r.Reads.P50), report.FmtDur(r.Reads.P99))
	return b.String()
}
