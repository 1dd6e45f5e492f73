// Package fleet_test runs a fleet of replicas the way operators do: one
// sequencer, three followers — two of them fed by the first follower's
// /flashblocks — and HAProxy from Debian in front (round robin, health
// checks on /readyz; scripts/setup-haproxy installs it), every one a
// process on loopback. A client sends its transactions through the balancer
// and reads its own transaction's receipt, nonce and balance at "pending"
// on the next requests, on whichever replica answers. The test measures
// how far the replicas' pending blocks drift apart, how often and for how
// long a read misses the client's own write, and what the client sees
// while a replica is killed and restarted; the figures are logged on lines
// starting "FIGURE" (quoted in docs/follow.md, "Running a fleet"). Under
// CI=true a missing haproxy is a failure.
package fleet_test

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/preconf/preconf/chain"
	"github.com/preconf/preconf/internal/peers"
	"github.com/preconf/preconf/tests/procs"
)

// The sequencer's cadence: 200 ms flashblocks in 1 s blocks.
const (
	interval = 200 * time.Millisecond
	perBlock = 5
)

func TestMain(m *testing.M) {
	code := m.Run()
	procs.Cleanup()
	os.Exit(code)
}

// haproxy is the HAProxy scripts/setup-haproxy installs from Debian
// ($PRECONF_HAPROXY, the tools cache, or PATH); without it the test is
// skipped, or fails under CI=true.
func haproxy(t *testing.T) string {
	path, err := peers.Program("haproxy", "PRECONF_HAPROXY")
	if err != nil {
		peers.Missing(t, err.Error()+": run scripts/setup-haproxy")
	}
	return path
}

type fleet struct {
	t        *testing.T
	seq      *procs.Proc
	replicas []*procs.Proc
	lb       string // the balancer's URL
}

func ws(p *procs.Proc) string { return "ws://" + p.Addr + "/flashblocks?replay=block" }

// startFleet starts the sequencer, the replicas and the balancer.
func startFleet(t *testing.T) *fleet {
	bin := haproxy(t)
	f := &fleet{t: t}
	f.seq = procs.Start(t, "sequencer", "/readyz", "--datadir", t.TempDir(), "--block-time", "1s",
		"--flashblock-interval", interval.String(), "--log.level", "warn")
	follow := func(name, feed string) *procs.Proc {
		return procs.Start(t, name, "/readyz", "follow", "--upstream", f.seq.URL(), "--flashblocks", feed,
			"--datadir", t.TempDir(), "--log.level", "warn")
	}
	r1 := follow("replica1", ws(f.seq))
	f.replicas = []*procs.Proc{r1, follow("replica2", ws(r1)), follow("replica3", ws(r1))}

	tmpl, err := os.ReadFile(filepath.Join("testdata", "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	port := procs.FreePort(t)
	var servers strings.Builder
	for i, r := range f.replicas {
		fmt.Fprintf(&servers, "    server r%d %s check\n", i+1, r.Addr)
	}
	cfg := strings.NewReplacer("{{FRONTEND}}", port, "{{SERVERS}}", servers.String()).Replace(string(tmpl))
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("haproxy log:\n%s", logs.String())
		}
	})
	f.lb = "http://127.0.0.1:" + port
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := f.call(f.lb, "eth_chainId"); err == nil {
			break
		}
		select {
		case <-exited:
			t.Fatalf("haproxy exited:\n%s", logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the balancer does not answer:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return f
}

func (f *fleet) call(url, method string, params ...any) (json.RawMessage, error) {
	return procs.Call(url, method, params...)
}

func (f *fleet) callInto(url string, out any, method string, params ...any) error {
	return procs.CallInto(url, out, method, params...)
}

// drift samples, every 50 ms until stopped, each live replica's pending
// block (follower_status) and records the spread between the most and
// the least advanced, in flashblocks.
type drift struct {
	mu      sync.Mutex
	spreads []int
	stop    chan struct{}
	done    chan struct{}
}

func (f *fleet) sampleDrift() *drift {
	d := &drift{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(d.done)
		for {
			select {
			case <-d.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			var at []int
			for _, r := range f.replicas {
				var st struct {
					Pending *struct{ Number, Index hexutil.Uint64 }
				}
				if f.callInto(r.URL(), &st, "follower_status") != nil || st.Pending == nil {
					continue // down, or between blocks
				}
				at = append(at, int(st.Pending.Number)*perBlock+int(st.Pending.Index))
			}
			if len(at) < 2 {
				continue
			}
			d.mu.Lock()
			d.spreads = append(d.spreads, slices.Max(at)-slices.Min(at))
			d.mu.Unlock()
		}
	}()
	return d
}

func (d *drift) end() []int {
	close(d.stop)
	<-d.done
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.spreads
}

// client sends transfers from one key through the balancer and reads its
// own writes back.
type client struct {
	f      *fleet
	key    *ecdsa.PrivateKey
	from   common.Address
	signer types.Signer
	nonce  uint64
	n      int
}

// ryw is one read-your-write attempt: whether the next reads missed the
// write, and how long until all three showed it.
type ryw struct {
	miss    bool
	visible time.Duration
	err     error
}

// write sends one transfer (sync: eth_sendRawTransactionSync, else
// eth_sendRawTransaction) to a fresh recipient, then reads its receipt,
// the sender's nonce and the recipient's balance at "pending" through the
// balancer, each request possibly answered by another replica, until all
// three show the write (at most 10 s).
func (c *client) write(sync bool) ryw {
	c.n++
	to := common.Address{0xf1, byte(c.n >> 16), byte(c.n >> 8), byte(c.n), 19: 1}
	value := big.NewInt(int64(1000 + c.n))
	tx := types.MustSignNewTx(c.key, c.signer, &types.DynamicFeeTx{ChainID: c.signer.ChainID(), Nonce: c.nonce,
		GasTipCap: big.NewInt(1e9), GasFeeCap: big.NewInt(50e9), Gas: 21000, To: &to, Value: value})
	raw, _ := tx.MarshalBinary()
	method, params := "eth_sendRawTransaction", []any{hexutil.Bytes(raw)}
	if sync {
		method, params = "eth_sendRawTransactionSync", []any{hexutil.Bytes(raw), 5000}
	}
	if _, err := c.f.call(c.f.lb, method, params...); err != nil {
		c.resync()
		return ryw{err: fmt.Errorf("%s: %w", method, err)}
	}
	c.nonce++
	sent := time.Now()
	var res ryw
	for attempt := 0; ; attempt++ {
		var receipt map[string]any
		var nonce hexutil.Uint64
		var balance hexutil.Big
		err := c.f.callInto(c.f.lb, &receipt, "eth_getTransactionReceipt", tx.Hash())
		if err == nil {
			err = c.f.callInto(c.f.lb, &nonce, "eth_getTransactionCount", c.from, "pending")
		}
		if err == nil {
			err = c.f.callInto(c.f.lb, &balance, "eth_getBalance", to, "pending")
		}
		if err == nil && receipt != nil && uint64(nonce) >= c.nonce && balance.ToInt().Cmp(value) == 0 {
			res.visible = time.Since(sent)
			return res
		}
		res.miss = true
		if time.Since(sent) > 10*time.Second {
			res.err = fmt.Errorf("transaction %s not visible through the balancer after 10 s (last error %v)", tx.Hash(), err)
			return res
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// resync reads the next nonce again after a failed send (the transaction
// may have been admitted all the same): after a block, at "pending".
func (c *client) resync() {
	time.Sleep(1500 * time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n hexutil.Uint64
		if c.f.callInto(c.f.lb, &n, "eth_getTransactionCount", c.from, "pending") == nil {
			c.nonce = uint64(n)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// summary is what a run of writes measured.
type summary struct {
	writes, misses, errors int
	missDurations          []time.Duration
	firstErrors            []string
}

func (s *summary) add(r ryw) {
	s.writes++
	if r.err != nil {
		s.errors++
		if len(s.firstErrors) < 5 {
			s.firstErrors = append(s.firstErrors, r.err.Error())
		}
		return
	}
	if r.miss {
		s.misses++
		s.missDurations = append(s.missDurations, r.visible)
	}
}

func (s *summary) String() string {
	q := func(p float64) time.Duration {
		if len(s.missDurations) == 0 {
			return 0
		}
		v := slices.Clone(s.missDurations)
		slices.Sort(v)
		return v[int(p*float64(len(v)-1)+0.5)].Round(100 * time.Microsecond)
	}
	return fmt.Sprintf("writes=%d misses=%d (%.1f%%) miss_visible_after_p50=%v p99=%v max=%v errors=%d %v",
		s.writes, s.misses, 100*float64(s.misses)/float64(max(s.writes, 1)), q(0.5), q(0.99), q(1), s.errors, s.firstErrors)
}

func quantiles(v []int) string {
	if len(v) == 0 {
		return "no samples"
	}
	v = slices.Clone(v)
	slices.Sort(v)
	at := func(p float64) int { return v[int(p*float64(len(v)-1)+0.5)] }
	return fmt.Sprintf("samples=%d p50=%d p90=%d p99=%d max=%d", len(v), at(0.5), at(0.9), at(0.99), at(1))
}

func TestFleet(t *testing.T) {
	f := startFleet(t)
	var id hexutil.Big
	if err := f.callInto(f.lb, &id, "eth_chainId"); err != nil {
		t.Fatal(err)
	}
	key, _ := crypto.HexToECDSA(chain.DevKeys[3])
	c := &client{f: f, key: key, from: crypto.PubkeyToAddress(key.PublicKey), signer: types.LatestSignerForChainID(id.ToInt())}
	before := f.requestsPerReplica()
	d := f.sampleDrift()

	var syncRuns, asyncRuns summary
	for range 40 {
		syncRuns.add(c.write(true))
	}
	for range 40 {
		asyncRuns.add(c.write(false))
	}
	spreads := d.end()
	t.Logf("FIGURE fleet drift_flashblocks %s", quantiles(spreads))
	t.Logf("FIGURE fleet read_your_write sync %s", &syncRuns)
	t.Logf("FIGURE fleet read_your_write async %s", &asyncRuns)
	after := f.requestsPerReplica()
	for i := range after {
		after[i] -= before[i]
	}
	t.Logf("FIGURE fleet requests_per_replica %v", after)
	if syncRuns.errors+asyncRuns.errors > 0 {
		t.Errorf("errors with every replica up: sync %v, async %v", syncRuns.firstErrors, asyncRuns.firstErrors)
	}
	for i, n := range after {
		if n == 0 {
			t.Errorf("replica%d answered none of the reads: the balancer does not spread them (%v)", i+1, after)
		}
	}

	// A replica killed (as a crash) and restarted while the client writes
	// and reads through the balancer: a leaf (replica3), then the replica
	// the two others take their feed from (replica1).
	for _, victim := range []*procs.Proc{f.replicas[2], f.replicas[0]} {
		run, down, ready, served := f.killDuring(c, victim)
		t.Logf("FIGURE fleet kill_restart %s down_for=%v ready_after_restart=%v serving_after_restart=%v %s",
			victim.Name, down.Round(time.Millisecond), ready.Round(time.Millisecond), served.Round(time.Millisecond), run)
	}
}

// killDuring kills victim a second into a run of synchronous writes,
// restarts it three seconds later and lets the writes go on for two more
// seconds once the balancer sends it requests again.
func (f *fleet) killDuring(c *client, victim *procs.Proc) (run *summary, down, ready, served time.Duration) {
	run = new(summary)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			run.add(c.write(true))
		}
	}()
	time.Sleep(time.Second)
	t0 := time.Now()
	victim.Kill()
	time.Sleep(3 * time.Second)
	t1 := time.Now()
	victim.Restart()
	ready = time.Since(t1)
	served = f.waitServed(victim) + ready
	time.Sleep(2 * time.Second)
	close(stop)
	<-done
	return run, t1.Sub(t0), ready, served
}

// requestsPerReplica is each replica's count of eth_getTransactionCount
// requests (one of the reads the client makes through the balancer).
func (f *fleet) requestsPerReplica() []float64 {
	out := make([]float64, len(f.replicas))
	for i, r := range f.replicas {
		out[i], _ = r.Metric(`preconf_rpc_requests_total{method="eth_getTransactionCount"}`)
	}
	return out
}

// waitServed waits until the balancer sends the replica requests again
// and returns the time since it was restarted (since now).
func (f *fleet) waitServed(r *procs.Proc) time.Duration {
	start := time.Now()
	base, _ := r.Metric(`preconf_rpc_requests_total{method="eth_getTransactionCount"}`)
	for {
		n, _ := r.Metric(`preconf_rpc_requests_total{method="eth_getTransactionCount"}`)
		if n > base {
			return time.Since(start)
		}
		if time.Since(start) > 30*time.Second {
			f.t.Fatalf("%s gets no requests 30 s after its restart", r.Name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
