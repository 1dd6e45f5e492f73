package bigstate

// A million accounts (go run ./bench -bigstate): a state of -bigstate-accounts
// funded accounts and -bigstate-slots storage slots (spread over contracts of
// -bigstate-slots-per-contract slots each, the first accounts) is generated
// into a preconf datadir by chain.CreateBulk — stack tries streamed into
// Pebble, the flat state snapshot marked complete — and the same store is
// given to geth: its schema is go-ethereum's (hash-scheme trie nodes, rawdb
// keys), so geth opens a copy of it (`--state.scheme hash`, the SST files
// hard-linked) instead of `geth init` of a genesis file, which holds the
// whole alloc in memory (see docs/bench.md for the measured cost). Both
// datadirs are kept under -bigstate-dir and reused by later runs
// (-bigstate-regen makes them again).
//
// Each round starts each node on its datadir (start-up: process start →
// first answer), runs random-key eth_getBalance and eth_getStorageAt at
// latest and pending (-duration each, -conns connections; keys drawn
// uniformly from the whole state, so the read caches mostly miss), then
// reads the node's RSS and stops it. Disk sizes are the datadirs' files.

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/holiman/uint256"

	"github.com/preconf/preconf/bench/internal/harness"
	"github.com/preconf/preconf/bench/internal/load"
	"github.com/preconf/preconf/bench/internal/report"
	"github.com/preconf/preconf/bench/internal/workload"
	"github.com/preconf/preconf/chain"
)

type Options struct {
	Accounts         int    `json:"accounts"`
	Slots            int    `json:"slots"`
	SlotsPerContract int    `json:"slots_per_contract"`
	Dir              string `json:"-"`
	Regen            bool   `json:"-"`
	Keys             int    `json:"keys_per_workload"`
	GenerateOnly     bool   `json:"-"`
}

// AddFlags registers the experiment's own flags.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.Accounts, "bigstate-accounts", 1_000_000, "funded accounts")
	fs.IntVar(&o.Slots, "bigstate-slots", 10_000_000, "storage slots (a multiple of -bigstate-slots-per-contract)")
	fs.IntVar(&o.SlotsPerContract, "bigstate-slots-per-contract", 10_000, "slots per contract")
	fs.StringVar(&o.Dir, "bigstate-dir", "", "where the generated datadirs are kept (default: <cache>/bigstate-<accounts>-<slots>)")
	fs.BoolVar(&o.Regen, "bigstate-regen", false, "generate the datadirs again even if they exist")
	fs.BoolVar(&o.GenerateOnly, "bigstate-generate-only", false, "only generate the datadirs (when missing or with -bigstate-regen), so that a later -bigstate or -all reuses them")
	fs.IntVar(&o.Keys, "bigstate-keys", 100_000, "random keys per workload (request bodies cycled through)")
}

// bigState is the generated state's shape: account i has address
// bigAddr(i) and balance 1 ETH + i wei; accounts 0 … contracts-1 also hold
// contractCode and slots 0 … perContract-1 with values c·perContract + j + 1.
type bigState struct {
	accounts, contracts, perContract int
}

func (s bigState) addr(i int) common.Address {
	var a common.Address
	a[0], a[1] = 0xb1, 0x65
	binary.BigEndian.PutUint64(a[12:], uint64(i))
	return a
}

func (s bigState) balance(i int) *big.Int {
	return new(big.Int).Add(big.NewInt(1e18), big.NewInt(int64(i)))
}

func (s bigState) slotValue(c, j int) common.Hash {
	return common.BigToHash(big.NewInt(int64(c*s.perContract + j + 1)))
}

// stream yields the accounts in ascending order of their address hashes.
func (s bigState) stream() iter.Seq[chain.BulkAccount] {
	type entry struct {
		hash common.Hash
		i    int
	}
	order := make([]entry, s.accounts)
	for i := range order {
		a := s.addr(i)
		order[i] = entry{crypto.Keccak256Hash(a[:]), i}
	}
	slices.SortFunc(order, func(a, b entry) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	slots := make([]entry, s.perContract)
	for j := range slots {
		k := harness.SlotKey(j)
		slots[j] = entry{crypto.Keccak256Hash(k[:]), j}
	}
	slices.SortFunc(slots, func(a, b entry) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	return func(yield func(chain.BulkAccount) bool) {
		for _, e := range order {
			acc := chain.BulkAccount{Hash: e.hash, Balance: uint256.MustFromBig(s.balance(e.i))}
			if c := e.i; c < s.contracts {
				acc.Code, acc.Nonce = harness.ContractCode, 1
				acc.Storage = func(yield func(common.Hash, common.Hash) bool) {
					for _, sl := range slots {
						if !yield(sl.hash, s.slotValue(c, sl.i)) {
							return
						}
					}
				}
			}
			if !yield(acc) {
				return
			}
		}
	}
}

// bigstateMeta is kept beside the datadirs.
type bigstateMeta struct {
	Accounts       int     `json:"accounts"`
	Slots          int     `json:"slots"`
	PerContract    int     `json:"slots_per_contract"`
	Genesis        string  `json:"genesis"`
	GenerateSecond float64 `json:"generate_seconds"`
	CompactSeconds float64 `json:"compact_seconds"` // part of GenerateSeconds
	CopySeconds    float64 `json:"geth_copy_seconds"`
}

type bigstateNode struct {
	Startup []time.Duration `json:"startup_ns"`
	// Ready is process start → the node's Ready path answering 200 (the
	// start-up where it has none); reads are measured after it.
	Ready []time.Duration `json:"ready_ns"`
	RSS   []int64         `json:"rss_bytes"` // after each round's reads
	Disk  int64           `json:"disk_bytes"`
	// Warm is the time each round took to read the datadir before the
	// node started (pagecache.go).
	Warm    []time.Duration        `json:"warm_ns"`
	Results map[string]load.Result `json:"results"` // the median round's, by workload
	rounds  map[string][]load.Result
}

type Report struct {
	Started time.Time                `json:"started"`
	Host    map[string]any           `json:"host"`
	Options Options                  `json:"options"`
	Meta    bigstateMeta             `json:"state"`
	Rounds  int                      `json:"rounds"`
	Nodes   map[string]*bigstateNode `json:"nodes"`
	Errors  []string                 `json:"errors,omitempty"`
	Seconds float64                  `json:"seconds"`
	// Layout is where the generator and the nodes ran (-pin; empty: shared).
	Layout string `json:"layout,omitempty"`
}

func (bo Options) state() (bigState, error) {
	if bo.Accounts <= 0 || bo.SlotsPerContract <= 0 || bo.Slots < 0 || bo.Slots%bo.SlotsPerContract != 0 || bo.Slots/bo.SlotsPerContract > bo.Accounts || bo.Keys <= 0 {
		return bigState{}, errors.New("-bigstate-accounts and -bigstate-keys must be positive, -bigstate-slots a multiple of -bigstate-slots-per-contract with no more contracts than accounts")
	}
	return bigState{accounts: bo.Accounts, contracts: bo.Slots / bo.SlotsPerContract, perContract: bo.SlotsPerContract}, nil
}

func Run(o harness.Options, bo Options, log io.Writer) (*Report, error) {
	st, err := bo.state()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	repo, err := harness.RepoRoot()
	if err != nil {
		return nil, err
	}
	if bo.Dir == "" {
		bo.Dir = filepath.Join(o.Cache, fmt.Sprintf("bigstate-%d-%d", bo.Accounts, bo.Slots))
	}
	work, err := os.MkdirTemp("", "preconf-bigstate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	e := &harness.Env{Repo: repo, Cache: o.Cache, Work: work, Install: !o.NoInstall, Sequencer: true, Log: log}
	rep := &Report{Started: time.Now().UTC(), Host: harness.HostInfo(), Options: bo, Rounds: o.Rounds, Nodes: map[string]*bigstateNode{}}

	bins := map[string]string{}
	var nodes []string
	for _, name := range o.Nodes {
		bin, err := harness.Kinds[name].Install(e)
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if name != "preconf" && name != "geth" {
			fmt.Fprintf(log, "bigstate: %s cannot open the generated datadir; skipped\n", name)
			continue
		}
		bins[name], nodes = bin, append(nodes, name)
	}
	if bins["preconf"] == "" {
		return rep, errors.New("preconf could not be built")
	}
	if rep.Meta, err = prepareBigstate(bo, st, slices.Contains(nodes, "geth"), log); err != nil {
		return nil, err
	}
	if bo.GenerateOnly {
		rep.Seconds = time.Since(start).Seconds()
		return rep, nil
	}
	kinds := bigstateKinds(bo.Dir)
	for _, name := range nodes {
		bn := &bigstateNode{Results: map[string]load.Result{}, rounds: map[string][]load.Result{}}
		bn.Disk = dirSize(kinds[name].Dir)
		rep.Nodes[name] = bn
	}
	wls := st.workloads(bo.Keys)
	restore, err := harness.PinIf(o.Pin, e, &rep.Layout)
	if err != nil {
		return rep, err
	}
	defer restore()
	for round := range o.Rounds {
		order := harness.Rotate(nodes, round)
		fmt.Fprintf(log, "round %d/%d: %s\n", round+1, o.Rounds, strings.Join(order, " "))
		for _, name := range order {
			if err := bigstateRound(e, o, kinds[name], bins[name], round, wls, rep.Nodes[name]); err != nil {
				rep.Errors = append(rep.Errors, fmt.Sprintf("%s round %d: %v", name, round+1, err))
				fmt.Fprintf(log, "  %s: %v\n", name, err)
			}
		}
	}
	for _, bn := range rep.Nodes {
		for w, rs := range bn.rounds {
			slices.SortFunc(rs, func(a, b load.Result) int { return cmp.Compare(a.RPS, b.RPS) })
			bn.Results[w] = rs[len(rs)/2]
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// bigstateKinds are preconf (with its sequencer, on the generated datadir,
// no --genesis: the store holds it) and geth on its copy.
func bigstateKinds(dir string) map[string]harness.Kind {
	p, g := harness.Kinds["preconf"], harness.Kinds["geth"]
	p.Dir, g.Dir = filepath.Join(dir, "preconf"), filepath.Join(dir, "geth")
	// The datadir is reused: after a run that did not stop the node
	// cleanly its state snapshot is generated again in the background, and
	// reads meanwhile go to the trie (2-3x the CPU per read). Measure after.
	p.Ready = "/readyz"
	p.Args = func(e *harness.Env, dir string) []string {
		return []string{"--datadir", dir, "--http.addr", "127.0.0.1", "--http.port", strconv.Itoa(harness.PortPreconf), "--log.level", "warn"}
	}
	g.Prepare = nil
	gethArgs := g.Args
	g.Args = func(e *harness.Env, dir string) []string {
		a := gethArgs(e, dir)
		for i := range a {
			if a[i] == "path" && a[i-1] == "--state.scheme" {
				a[i] = "hash"
			}
		}
		return a
	}
	return map[string]harness.Kind{"preconf": p, "geth": g}
}

// prepareBigstate generates the datadirs unless they exist.
func prepareBigstate(bo Options, st bigState, geth bool, log io.Writer) (bigstateMeta, error) {
	metaPath := filepath.Join(bo.Dir, "meta.json")
	var meta bigstateMeta
	if raw, err := os.ReadFile(metaPath); err == nil && !bo.Regen && json.Unmarshal(raw, &meta) == nil {
		fmt.Fprintf(log, "bigstate: reusing %s (generated in %.1f s; -bigstate-regen makes it again)\n", bo.Dir, meta.GenerateSecond)
		return meta, nil
	}
	if err := os.RemoveAll(bo.Dir); err != nil {
		return meta, err
	}
	meta = bigstateMeta{Accounts: st.accounts, Slots: st.contracts * st.perContract, PerContract: st.perContract}
	fmt.Fprintf(log, "bigstate: generating %d accounts and %d slots into %s\n", st.accounts, meta.Slots, bo.Dir)
	t := time.Now()
	res, err := chain.CreateBulk(filepath.Join(bo.Dir, "preconf"), harness.BenchGenesis(), st.stream())
	if err != nil {
		return meta, err
	}
	meta.GenerateSecond, meta.CompactSeconds = time.Since(t).Seconds(), res.Compaction.Seconds()
	meta.Genesis = res.Block.Hash().Hex()
	fmt.Fprintf(log, "bigstate: %d accounts, %d slots, genesis %s, state root %s in %.1f s (compaction %.1f s)\n", res.Accounts, res.Slots, res.Block.Hash(), res.Block.Root(), meta.GenerateSecond, meta.CompactSeconds)
	if geth {
		t = time.Now()
		if err := linkTree(filepath.Join(bo.Dir, "preconf", "chaindata"), filepath.Join(bo.Dir, "geth", "geth", "chaindata")); err != nil {
			return meta, err
		}
		meta.CopySeconds = time.Since(t).Seconds()
	}
	raw, _ := json.MarshalIndent(meta, "", "  ")
	return meta, os.WriteFile(metaPath, raw, 0o644)
}

// linkTree copies the Pebble store at src to dst, hard-linking the SST
// files (Pebble never changes one in place).
func linkTree(src, dst string) error {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, ent := range ents {
		if ent.IsDir() || ent.Name() == "LOCK" {
			continue
		}
		from, to := filepath.Join(src, ent.Name()), filepath.Join(dst, ent.Name())
		if strings.HasSuffix(ent.Name(), ".sst") && os.Link(from, to) == nil {
			continue
		}
		raw, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, raw, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// dirSize is the size of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// bigWorkload is a workload with the exact answers of its first bodies.
type bigWorkload struct {
	workload.Workload
	want []string
}

// checked is how many answers of each workload are checked exactly before
// the load.
const checked = 64

// workloads are random-key reads of the big state at latest and pending.
func (s bigState) workloads(keys int) []bigWorkload {
	rng := rand.New(rand.NewPCG(15, 1))
	var out []bigWorkload
	for _, tag := range []string{"latest", "pending"} {
		bal := bigWorkload{Workload: workload.Workload{Name: "eth_getBalance/random/" + tag, Calls: 1}}
		sto := bigWorkload{Workload: workload.Workload{Name: "eth_getStorageAt/random/" + tag, Calls: 1}}
		for k := range keys {
			i := rng.IntN(s.accounts)
			if k < checked {
				bal.want = append(bal.want, `"`+hexutil.EncodeBig(s.balance(i))+`"`)
			}
			bal.Bodies = append(bal.Bodies, load.Encode(load.NewCall(k+1, "eth_getBalance", s.addr(i), tag)))
			if s.contracts > 0 {
				c, j := rng.IntN(s.contracts), rng.IntN(s.perContract)
				if k < checked {
					sto.want = append(sto.want, `"`+s.slotValue(c, j).Hex()+`"`)
				}
				sto.Bodies = append(sto.Bodies, load.Encode(load.NewCall(k+1, "eth_getStorageAt", s.addr(c), hexutil.EncodeBig(big.NewInt(int64(j))), tag)))
			}
		}
		out = append(out, bal)
		if s.contracts > 0 {
			out = append(out, sto)
		}
	}
	return out
}

// verify checks the first answers exactly.
func (w bigWorkload) verify(addr string) error {
	for i, want := range w.want {
		w.Expect = workload.ExpectJSON(want)
		raw, err := harness.Post(addr, w.Bodies[i])
		if err == nil {
			err = w.Workload.Verify(raw)
		}
		if err != nil {
			return fmt.Errorf("%s, body %d: %w", w.Name, i, err)
		}
	}
	return nil
}

// bigstateRound starts one node, checks a sample of answers, measures every
// workload, reads its RSS and stops it.
func bigstateRound(e *harness.Env, o harness.Options, kind harness.Kind, bin string, round int, wls []bigWorkload, bn *bigstateNode) error {
	size, took, err := harness.WarmDir(kind.Dir) // pagecache.go
	if err != nil {
		return err
	}
	fmt.Fprintf(e.Log, "  %-8s read its datadir into the page cache: %.2f GiB in %s\n", kind.Name, float64(size)/(1<<30), report.FmtDur(took))
	bn.Warm = append(bn.Warm, took)
	n, err := harness.StartNode(e, kind, bin, round)
	if err != nil {
		return err
	}
	defer n.Stop()
	bn.Startup, bn.Ready = append(bn.Startup, n.Startup), append(bn.Ready, n.UntilReady)
	fmt.Fprintf(e.Log, "  %-8s start-up %s%s\n", kind.Name, report.FmtDur(n.Startup), readyNote(n.Startup, n.UntilReady))
	// The workload order rotates with the round: the first one after a
	// start meets cold caches.
	for k := range wls {
		w := wls[(k+round)%len(wls)]
		if err := w.verify(n.Addr); err != nil {
			return err
		}
		cfg := load.Config{Addr: n.Addr, Conns: o.Conns, Duration: o.Warmup, MaxRequests: o.MaxRequests, Bodies: w.Bodies, Check: load.CheckCalls(1)}
		if o.Warmup > 0 {
			if _, err := load.Run(cfg); err != nil {
				return err
			}
		}
		cfg.Duration = o.Duration
		res, err := n.Load(cfg)
		if err != nil {
			return err
		}
		if res.Errors > 0 {
			return fmt.Errorf("%s: %d failed requests, first: %s", w.Name, res.Errors, res.FirstError)
		}
		bn.rounds[w.Name] = append(bn.rounds[w.Name], res)
		fmt.Fprintf(e.Log, "  %-8s %-32s %9.0f req/s  p50 %6s  p99 %6s  max %7s  cpu/req %5.1fµs\n", kind.Name, w.Name, res.RPS,
			report.FmtDur(res.P50), report.FmtDur(res.P99), report.FmtDur(res.Max), report.Us(res.ServerCPU))
	}
	bn.RSS = append(bn.RSS, n.RSS())
	return nil
}

// readyNote says when a node became ready well after its first answer.
func readyNote(startup, ready time.Duration) string {
	if ready-startup < readyGap {
		return ""
	}
	return fmt.Sprintf(" (ready %s)", report.FmtDur(ready))
}

// readyGap is how much later than the first answer readiness must come to
// be reported: /readyz is polled every 100 ms.
const readyGap = 200 * time.Millisecond
