package main

// Follow-mode workloads (go run ./bench -follow): a sequencing preconf
// (2 s blocks, 200 ms flashblocks) and `preconf follow` of it, on loopback.
//
//   (a) flashblock → visible on the follower: -follow-flashblocks batches of
//       -follow-txs transfers, one batch per flashblock interval. Both nodes'
//       /flashblocks feeds are watched; for each flashblock carrying at least
//       90% of a batch, the time from the sequencer's message to the
//       follower's message for the same (payload, index) — the follower
//       receives, re-executes, publishes and re-encodes it in between — and
//       the follower's own received → published quantiles (follower_status).
//   (b) pending reads: closed-loop eth_getBalance and eth_getStorageAt at
//       "pending" against the sequencer, then the follower (-duration,
//       -conns): requests/s and the follower/sequencer ratio.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/preconf/preconf/follower/feed"
)

const portFollower = 48551

type followOptions struct {
	Enabled     bool `json:"-"`
	Flashblocks int  `json:"flashblocks"`
	Txs         int  `json:"txs_per_flashblock"`
}

var followOpts followOptions

// addFollowFlags registers the -follow flags on the harness's set.
func addFollowFlags(fs *flag.FlagSet) {
	fs.BoolVar(&followOpts.Enabled, "follow", false, "run the follow-mode workloads instead: (a) flashblock → visible on a follower, (b) follower vs sequencer pending reads/s")
	fs.IntVar(&followOpts.Flashblocks, "follow-flashblocks", 50, "(a) flashblocks measured")
	fs.IntVar(&followOpts.Txs, "follow-txs", 100, "(a) transfers per flashblock")
}

type followReport struct {
	Started  time.Time      `json:"started"`
	Host     map[string]any `json:"host"`
	Options  followOptions  `json:"options"`
	Version  string         `json:"version"`
	Measured int            `json:"flashblocks_measured"`
	// (a) sequencer feed message → follower feed message
	FeedP50 time.Duration `json:"feed_to_feed_p50_ns"`
	FeedP99 time.Duration `json:"feed_to_feed_p99_ns"`
	FeedMax time.Duration `json:"feed_to_feed_max_ns"`
	// (a) the follower's received → published (follower_status)
	InternalMs map[string]float64 `json:"internal_ms"`
	Counters   map[string]uint64  `json:"counters"`
	// (b)
	Sequencer map[string]loadResult `json:"sequencer"`
	Follower  map[string]loadResult `json:"follower"`
}

func runFollowBench(o options, stdout, log io.Writer) int {
	rep, err := measureFollow(o, log)
	if err != nil {
		fmt.Fprintln(log, "bench:", err)
		return 1
	}
	writeSideReport(o, stdout, log, "follow", rep, rep.markdown())
	return 0
}

func measureFollow(o options, log io.Writer) (*followReport, error) {
	fo := followOpts
	if fo.Flashblocks <= 0 || fo.Txs <= 0 {
		return nil, fmt.Errorf("-follow-flashblocks and -follow-txs must be positive")
	}
	e, bin, seq, stop, err := sequencingNode(o, log, "preconf-follow-")
	if err != nil {
		return nil, err
	}
	defer stop()
	followKind := nodeKind{Name: "preconf-follow", Port: portFollower, args: func(e *env, dir string) []string {
		return []string{"follow", "--upstream", "http://" + seq.addr, "--flashblocks", "ws://" + seq.addr + "/flashblocks",
			"--genesis", e.genesis, "--datadir", dir, "--http.addr", "127.0.0.1", "--http.port", strconv.Itoa(portFollower), "--log.level", "warn"}
	}}
	fol, err := startNode(e, followKind, bin, 0)
	if err != nil {
		return nil, err
	}
	defer fol.stop()
	rep := &followReport{Started: time.Now().UTC(), Host: hostInfo(), Options: fo, Version: seq.version(),
		Sequencer: map[string]loadResult{}, Follower: map[string]loadResult{}}

	seqFeed, err := watchFeed(seq.addr)
	if err != nil {
		return nil, err
	}
	defer seqFeed.close()
	folFeed, err := watchFeed(fol.addr)
	if err != nil {
		return nil, err
	}
	defer folFeed.close()
	s, err := newSenders(seq.addr)
	if err != nil {
		return nil, err
	}
	c, err := dial(seq.addr)
	if err != nil {
		return nil, err
	}
	defer c.close()

	fmt.Fprintf(log, "(a) %d flashblocks of %d transfers: sequencer feed → follower feed\n", fo.Flashblocks, fo.Txs)
	tick := time.NewTicker(200 * time.Millisecond)
	for i := range fo.Flashblocks {
		<-tick.C
		for j := range fo.Txs {
			_, req, err := s.next((i*fo.Txs+j)%len(s.keys), seq.addr)
			if err != nil {
				tick.Stop()
				return nil, err
			}
			if err := sendOK(c, req); err != nil {
				tick.Stop()
				return nil, err
			}
		}
	}
	tick.Stop()
	time.Sleep(2 * time.Second)
	var lats []time.Duration
	for k, m := range seqFeed.snapshot() {
		if m.txs*10 < fo.Txs*9 {
			continue
		}
		if f, ok := folFeed.snapshot()[k]; ok {
			lats = append(lats, f.at.Sub(m.at))
		}
	}
	slices.Sort(lats)
	rep.Measured = len(lats)
	rep.FeedP50, rep.FeedP99 = percentile(lats, 0.50), percentile(lats, 0.99)
	if len(lats) > 0 {
		rep.FeedMax = lats[len(lats)-1]
	}
	raw, err := rpcCall(fol.addr, "follower_status")
	if err != nil {
		return nil, err
	}
	var st struct {
		LatencyMs map[string]float64 `json:"latencyMs"`
		Counters  map[string]uint64  `json:"counters"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	rep.InternalMs, rep.Counters = st.LatencyMs, st.Counters

	fmt.Fprintf(log, "(b) pending reads, %s each, %d conns\n", o.Duration, o.Conns)
	for _, w := range []workload{balance("pending"), storage("pending")} {
		for _, n := range []struct {
			name string
			addr string
			into map[string]loadResult
		}{{"sequencer", seq.addr, rep.Sequencer}, {"follower", fol.addr, rep.Follower}} {
			cfg := loadConfig{Addr: n.addr, Conns: o.Conns, Duration: o.Warmup, MaxRequests: o.MaxRequests, Bodies: w.Bodies, Check: checkCalls(1)}
			if o.Warmup > 0 {
				if _, err := runLoad(cfg); err != nil {
					return nil, err
				}
			}
			cfg.Duration = o.Duration
			res, err := runLoad(cfg)
			if err != nil {
				return nil, err
			}
			if res.Errors > 0 {
				return nil, fmt.Errorf("%s %s: %d errors, first: %s", n.name, w.Name, res.Errors, res.FirstError)
			}
			n.into[w.Name] = res
			fmt.Fprintf(log, "  %-9s %-26s %9.0f req/s  p50 %6s  p99 %6s\n", n.name, w.Name, res.RPS, fmtDur(res.P50), fmtDur(res.P99))
		}
	}
	return rep, nil
}

// sequencingNode builds preconf and starts it with its sequencer (2 s
// blocks, 200 ms flashblocks) in a fresh scratch dir named by prefix; stop
// ends the node and removes the dir.
func sequencingNode(o options, log io.Writer, prefix string) (e *env, bin string, n *runningNode, stop func(), err error) {
	return sequencingNodeWith(o, log, prefix, writeGenesis)
}

// sequencingNodeWith is sequencingNode with the genesis file written by gen.
func sequencingNodeWith(o options, log io.Writer, prefix string, gen func(path string) error) (e *env, bin string, n *runningNode, stop func(), err error) {
	repo, err := repoRoot()
	if err != nil {
		return nil, "", nil, nil, err
	}
	work, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, "", nil, nil, err
	}
	fail := func(err error) (*env, string, *runningNode, func(), error) {
		os.RemoveAll(work)
		return nil, "", nil, nil, err
	}
	e = &env{repo: repo, cache: o.Cache, work: work, genesis: filepath.Join(work, "genesis.json"), sequencer: true, log: log}
	if err := gen(e.genesis); err != nil {
		return fail(err)
	}
	kind := nodeKinds["preconf"]
	if bin, err = kind.install(e); err != nil {
		return fail(err)
	}
	if n, err = startNode(e, kind, bin, 0); err != nil {
		return fail(err)
	}
	return e, bin, n, func() { n.stop(); os.RemoveAll(work) }, nil
}

// feedWatcher records when each flashblock arrives on a /flashblocks feed.
type feedWatcher struct {
	conn *websocket.Conn
	mu   sync.Mutex
	seen map[string]feedMsg
	done chan struct{}
}

type feedMsg struct {
	at  time.Time
	txs int
}

func watchFeed(addr string) (*feedWatcher, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws://"+addr+"/flashblocks", nil)
	if err != nil {
		return nil, fmt.Errorf("feed of %s: %w", addr, err)
	}
	conn.SetReadLimit(64 << 20)
	w := &feedWatcher{conn: conn, seen: make(map[string]feedMsg), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			at := time.Now()
			fb, err := feed.Decode(data)
			if err != nil {
				continue
			}
			w.mu.Lock()
			w.seen[fb.PayloadID.String()+"/"+strconv.FormatUint(fb.Index, 10)] = feedMsg{at: at, txs: len(fb.Diff.Transactions)}
			w.mu.Unlock()
		}
	}()
	return w, nil
}

func (w *feedWatcher) snapshot() map[string]feedMsg {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]feedMsg, len(w.seen))
	for k, v := range w.seen {
		out[k] = v
	}
	return out
}

func (w *feedWatcher) close() { w.conn.CloseNow(); <-w.done }

func (r *followReport) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## preconf follow mode (%s, %s)\n\n", r.Version, r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "(a) %d flashblocks of %d transfers to one address, 200 ms apart; %d measured (≥ 90%% of a batch, seen on both feeds):\n\n", r.Options.Flashblocks, r.Options.Txs, r.Measured)
	b.WriteString("| flashblock | p50 | p99 | max |\n|---|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| sequencer feed message → follower feed message | %s | %s | %s |\n", fmtDur(r.FeedP50), fmtDur(r.FeedP99), fmtDur(r.FeedMax))
	fmt.Fprintf(&b, "| follower: frame received → snapshot published (all flashblocks) | %.1f ms | %.1f ms | %.1f ms |\n\n", r.InternalMs["p50"], r.InternalMs["p99"], r.InternalMs["max"])
	b.WriteString("(b) pending reads, closed loop:\n\n| workload | sequencer req/s | follower req/s | follower/sequencer |\n|---|---:|---:|---:|\n")
	for _, name := range []string{"eth_getBalance/pending", "eth_getStorageAt/pending"} {
		s, f := r.Sequencer[name], r.Follower[name]
		ratio := 0.0
		if s.RPS > 0 {
			ratio = f.RPS / s.RPS
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.2f× |\n", name, s.RPS, f.RPS, ratio)
	}
	return b.String()
}

// writeSideReport prints a single-node measurement's Markdown and keeps it,
// with its JSON, as <name>.md/.json in the output directory.
func writeSideReport(o options, stdout, log io.Writer, name string, rep any, md string) {
	fmt.Fprint(stdout, md)
	raw, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.MkdirAll(o.Out, 0o755); err == nil {
		os.WriteFile(filepath.Join(o.Out, name+".json"), raw, 0o644)
		os.WriteFile(filepath.Join(o.Out, name+".md"), []byte(md), 0o644)
		fmt.Fprintf(log, "results: %s/%s.json, %s/%s.md\n", o.Out, name, o.Out, name)
	}
}
