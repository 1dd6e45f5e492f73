// Package followload is a follower at a live chain's load (go run ./bench
// follow-defi): a sequencing preconf (2 s blocks, 200 ms flashblocks)
// receives DeFi-shaped transactions (defi.go: ~32 storage slots across four
// contracts each, a quarter of them new) open-loop at rising gas rates,
// and `preconf follow` of it reaches the sequencer (its upstream and its
// feed) through a proxy that delays every byte by half of -followdefi-rtt
// each way (harness.DelayProxy: this machine's kernel has no netem). Each
// step measures what an operator needs to know: the follower's received →
// visible, whether it published every flashblock the sequencer did, and
// how many upstream requests a flashblock cost it.
package followload

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/params"

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
)

// The chains' highest gas rate: the gas limit per block time of the chains
// in docs/chains.md, from op-geth's superchain registry (the genesis system
// configs; a chain's SystemConfig on L1 may have raised it since): World
// Chain 100,000,000 per 2 s block, 50 Mgas/s; Soneium 60M per 2 s, 30;
// Unichain and Ink 30M per 1 s, 30; OP Mainnet 30M per 2 s, 15.
const chainsHighestMgas = 50

const (
	portFollower = 48551 // as follow's: the two never run at once
	gasLimit     = 1_000_000_000
	// visibleGoal is issue 34's bound on the follower's received → visible
	// p99 (a bucket bound of its Histogram).
	visibleGoal = 50 * time.Millisecond
)

// Options are the experiment's own flags.
type Options struct {
	// Rates are the offered gas rates, Mgas/s, in order.
	Rates []float64 `json:"rates_mgas"`
	rates string
	Step  time.Duration `json:"step_ns"`
	// Warmup is an unmeasured step at the first rate before the others:
	// a follower in service has the contracts' accounts, code and filled
	// slots cached, one just started has not.
	Warmup   time.Duration `json:"warmup_ns"`
	RTT      time.Duration `json:"rtt_ns"`
	Senders  int           `json:"senders"`
	SendConn int           `json:"send_conns"`
	// Proofs is the follower's --proofs: auto (eth_getProof, each value
	// checked against the state root) or off (plain reads of a trusted
	// upstream).
	Proofs string `json:"proofs"`
	// FollowerLog is the follower's --log.level; at info its log (a line
	// per flashblock slower than 50 ms, with its phases) is kept in -out.
	FollowerLog string `json:"follower_log"`
}

// AddFlags registers the experiment's flags.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.rates, "followdefi-rates", "2,5,10,25,50,100", "offered gas rates in Mgas/s, one step each, rising (100 is twice the chains' highest, 50 Mgas/s)")
	fs.DurationVar(&o.Step, "followdefi-step", 10*time.Second, "length of one step")
	fs.DurationVar(&o.Warmup, "followdefi-warmup", 3*time.Second, "an unmeasured step at the first rate before the others (0: none), so that the follower starts warm")
	fs.DurationVar(&o.RTT, "followdefi-rtt", time.Millisecond, "round-trip time between the follower and the sequencer (its upstream and feed)")
	fs.IntVar(&o.Senders, "followdefi-senders", 256, "funded senders (a multiple of -followdefi-conns)")
	fs.IntVar(&o.SendConn, "followdefi-conns", 32, "connections sending the transactions")
	fs.StringVar(&o.FollowerLog, "followdefi-follower-log", "warn", "the follower's --log.level; below warn its log (info: each flashblock slower than 50 ms with its phase times) is kept in -out as follow-defi-follower.log")
	fs.StringVar(&o.Proofs, "followdefi-proofs", "auto", "the follower's --proofs: auto (eth_getProof, checked against the state root) or off (plain reads of a trusted upstream); run once with each to compare")
}

func (o *Options) finish() error {
	o.Rates = o.Rates[:0]
	for _, f := range strings.Split(o.rates, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || r <= 0 {
			return fmt.Errorf("-followdefi-rates: %q is not a positive rate", f)
		}
		o.Rates = append(o.Rates, r)
	}
	if o.Proofs != "auto" && o.Proofs != "off" {
		return fmt.Errorf("-followdefi-proofs: %q is not auto or off", o.Proofs)
	}
	if len(o.Rates) == 0 || o.Step <= 0 || o.Warmup < 0 || o.RTT < 0 || o.Senders <= 0 || o.SendConn <= 0 || o.Senders%o.SendConn != 0 {
		return errors.New("-followdefi-rates, -followdefi-step, -followdefi-senders and -followdefi-conns must be positive, the senders a multiple of the connections")
	}
	return nil
}

// Report is every step of one run.
type Report struct {
	Started time.Time      `json:"started"`
	Host    map[string]any `json:"host"`
	Options Options        `json:"options"`
	Version string         `json:"version"`
	// GasPerTx is a transaction's gas used (its receipt); SlotsPerTx the
	// storage slots it touches, FreshPerTx of them new.
	GasPerTx   uint64 `json:"gas_per_tx"`
	SlotsPerTx int    `json:"slots_per_tx"`
	FreshPerTx int    `json:"fresh_slots_per_tx"`
	ChainsMgas int    `json:"chains_highest_mgas_s"`
	Steps      []Step `json:"steps"`
	// Highest is the highest offered rate (Mgas/s) the follower sustained
	// (0: none).
	Highest float64 `json:"highest_sustained_mgas_s"`
	// Stopped says why the steps ended before the last rate, if they did.
	Stopped string  `json:"stopped,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Run builds the chain and its follower and runs the steps.
func Run(h harness.Options, o Options, log io.Writer) (*Report, error) {
	if err := o.finish(); err != nil {
		return nil, err
	}
	start := time.Now()
	s := harness.NewSigners("preconf bench followload sender", o.Senders)
	e, bin, seq, stop, err := harness.SequencingNodeWith(h, log, "preconf-followdefi-", genesis(s))
	if err != nil {
		return nil, err
	}
	defer stop()
	proxy, err := harness.NewDelayProxy(seq.Addr, o.RTT)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()
	kind := harness.Kind{Name: "preconf-follow", Port: portFollower, Args: func(e *harness.Env, dir string) []string {
		return []string{"follow", "--upstream", "http://" + proxy.Addr, "--flashblocks", "ws://" + proxy.Addr + "/flashblocks",
			"--genesis", e.Genesis, "--datadir", dir, "--http.addr", "127.0.0.1", "--http.port", strconv.Itoa(portFollower), "--log.level", o.FollowerLog, "--proofs", o.Proofs}
	}}
	fol, err := harness.StartNode(e, kind, bin, 0)
	if err != nil {
		return nil, err
	}
	defer fol.Stop()
	if o.FollowerLog != "warn" && h.Out != "" {
		defer keepLog(filepath.Join(e.Work, kind.Name+"-0.log"), filepath.Join(h.Out, "follow-defi-follower.log"), log)
	}
	rep := &Report{Started: time.Now().UTC(), Host: harness.HostInfo(), Options: o, Version: seq.Version(),
		SlotsPerTx: slotsPerTx, FreshPerTx: contracts * freshSlots, ChainsMgas: chainsHighestMgas}
	r := &runner{o: o, s: s, seq: seq, fol: fol}
	if rep.GasPerTx, err = r.measureGas(); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "follow-defi: %d gas, %d slots (%d new) per transaction; follower %s from the sequencer\n", rep.GasPerTx, rep.SlotsPerTx, rep.FreshPerTx, o.RTT)
	seqFeed, folFeed, stopFeeds, err := harness.WatchFeeds(seq.Addr, fol.Addr)
	if err != nil {
		return nil, err
	}
	defer stopFeeds()
	r.seqFeed, r.folFeed = seqFeed, folFeed
	if o.Warmup > 0 {
		if err := r.warm(o.Rates[0], rep.GasPerTx); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		fmt.Fprintf(log, "  warmed up: %s at %.0f Mgas/s, not measured\n", o.Warmup, o.Rates[0])
	}
	for _, rate := range o.Rates {
		// A step starts with the sequencer's pool empty and the follower
		// caught up; a backlog left by the step before ends the run there.
		if err := r.settle(); err != nil {
			rep.Stopped = fmt.Sprintf("before %.0f Mgas/s: %v", rate, err)
			fmt.Fprintf(log, "  stopped %s\n", rep.Stopped)
			break
		}
		st, err := r.step(rate, rep.GasPerTx)
		if err != nil {
			return nil, fmt.Errorf("%.0f Mgas/s: %w", rate, err)
		}
		fmt.Fprintf(log, "  %s\n", st.summary())
		rep.Steps = append(rep.Steps, st)
		if st.Sustained && rate > rep.Highest {
			rep.Highest = rate
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// keepLog copies the follower's log out of the run's scratch directory.
func keepLog(from, to string, log io.Writer) {
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(to), 0o755)
	}
	if err == nil {
		err = os.WriteFile(to, b, 0o644)
	}
	if err != nil {
		fmt.Fprintf(log, "follow-defi: keeping the follower's log: %v\n", err)
		return
	}
	fmt.Fprintf(log, "follow-defi: the follower's log: %s\n", to)
}

// genesis is the shared bench genesis plus the DeFi contracts and the
// senders, 1000 ETH each, with room for the highest rate.
func genesis(s *harness.Signers) func(path string) error {
	return func(path string) error {
		g := harness.BenchGenesis()
		g.GasLimit = gasLimit
		AddContracts(g.Alloc)
		for _, a := range s.Addrs {
			g.Alloc[a] = types.Account{Balance: new(big.Int).Mul(big.NewInt(1000), big.NewInt(params.Ether))}
		}
		return harness.WriteGenesisFile(path, g)
	}
}

// runner holds what the steps share.
type runner struct {
	o                Options
	s                *harness.Signers
	seq, fol         *harness.Node
	seqFeed, folFeed *harness.FeedWatcher
	next             int // the next transaction's k (its seed)
}

// defiTx is transaction k: a call of the router with seed k.
func (r *runner) defiTx(base int) func(k int) types.DynamicFeeTx {
	return func(k int) types.DynamicFeeTx {
		return types.DynamicFeeTx{Gas: 1_000_000, To: &Router, Value: new(big.Int), Data: Seed(base + k).Bytes()}
	}
}

// measureGas sends one transaction and reads its receipt's gas used.
func (r *runner) measureGas() (uint64, error) {
	reqs, err := r.s.Sign(r.seq.Addr, 1, r.defiTx(r.next))
	if err != nil {
		return 0, err
	}
	r.next++
	raw, err := harness.Post(r.seq.Addr, bodyOf(reqs[0]))
	if err != nil {
		return 0, err
	}
	var sent struct {
		Result common.Hash
		Error  *struct{ Message string }
	}
	if err := json.Unmarshal(raw, &sent); err != nil || sent.Error != nil {
		return 0, fmt.Errorf("send: %s %v", raw, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		rc, err := harness.RPCCall(r.seq.Addr, "eth_getTransactionReceipt", sent.Result)
		if err != nil {
			return 0, err
		}
		var receipt struct {
			Status  hexutil.Uint64
			GasUsed hexutil.Uint64
		}
		if string(rc) != "null" && json.Unmarshal(rc, &receipt) == nil {
			if receipt.Status != 1 {
				return 0, fmt.Errorf("the DeFi transaction failed: %s", rc)
			}
			return uint64(receipt.GasUsed), nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, errors.New("no receipt for the DeFi transaction after 10 s")
}

// bodyOf is the body of an HTTP request made by load.HTTPRequest.
func bodyOf(req []byte) []byte {
	if i := strings.Index(string(req), "\r\n\r\n"); i >= 0 {
		return req[i+4:]
	}
	return req
}

// send sends reqs open-loop at rate per second from start, transaction k
// on connection k%C (sender k%K is then always on one connection, so its
// nonces go out in order); it returns the largest lag behind schedule.
func (r *runner) send(reqs [][]byte, rate float64, start time.Time) (time.Duration, error) {
	C := r.o.SendConn
	lags := make([]time.Duration, C)
	errs := make([]error, C)
	var wg sync.WaitGroup
	for c := range C {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := load.Dial(r.seq.Addr)
			if err != nil {
				errs[c] = err
				return
			}
			defer cl.Close()
			for k := c; k < len(reqs); k += C {
				due := start.Add(time.Duration(float64(k) / rate * float64(time.Second)))
				if w := time.Until(due); w > 0 {
					time.Sleep(w)
				} else {
					lags[c] = max(lags[c], -w)
				}
				cl.Conn.SetDeadline(time.Now().Add(10 * time.Second))
				if err := harness.SendOK(cl, reqs[k]); err != nil {
					errs[c] = fmt.Errorf("transaction %d: %w", k, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return slices.Max(lags), errors.Join(errs...)
}
