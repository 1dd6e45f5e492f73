package faults_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/preconf/preconf/flashblock"
	"github.com/preconf/preconf/tests/faultproxy"
	"github.com/preconf/preconf/tests/procs"
)

func TestMain(m *testing.M) {
	code := m.Run()
	procs.Cleanup()
	os.Exit(code)
}

// oneShot applies a fault to the next frames only, then relays as is.
type oneShot struct {
	mu   sync.Mutex
	next faultproxy.Fault
	left int
}

func (o *oneShot) arm(f faultproxy.Fault, frames int) {
	o.mu.Lock()
	o.next, o.left = f, frames
	o.mu.Unlock()
}

func (o *oneShot) fault(fr faultproxy.Frame) []faultproxy.Frame {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.left == 0 {
		return []faultproxy.Frame{fr}
	}
	o.left--
	return o.next(fr)
}

// A thousand faults of every kind on a follower process (anchor: measured
// before on preconf, RSS grew from 90 to 255 MiB over about three minutes of
// faults): its resident memory and goroutines are sampled from its
// /metrics every hundred faults; the last samples stay within 20 % of the
// first (after a hundred faults of warm-up), and at the end the follower
// is healthy and its pending block the sequencer's, without a restart.
func TestFaultSoak(t *testing.T) {
	faults := 1000
	if testing.Short() {
		faults = 200
	}
	// Processes, so that the race detector the suite runs under slows
	// neither the sequencer nor the follower.
	seq := procs.Start(t, "sequencer", "/readyz", "--datadir", t.TempDir(), "--block-time", blockTime.String(),
		"--flashblock-interval", interval.String(), "--log.level", "warn")
	var id hexutil.Big
	if err := callInto(seq.URL(), &id, "eth_chainId"); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t}
	r.proxies(seq.URL())
	r.traffic(seq.URL(), id.ToInt())
	fol := procs.Start(t, "follower", "/readyz", "follow", "--upstream", r.rpc.URL(), "--flashblocks", r.feedURL(),
		"--log.level", "error", "--upstream.timeout", "2s", "--datadir", t.TempDir())
	r.url.Store(fol.URL())
	r.watchInvariant()
	shot := new(oneShot)
	r.ws.SetFault(shot.fault)
	rng := rand.New(rand.NewPCG(1, 2))
	type sample struct{ rss, goroutines, heap float64 }
	var samples []sample
	kinds := map[string]int{}
	start := time.Now()
	for i := 1; i <= faults; i++ {
		kind := ""
		switch {
		case i%250 == 125:
			kind = "freeze"
			r.tcp.Freeze()
			time.Sleep(1200 * time.Millisecond)
			r.tcp.Thaw()
		case i%100 == 50:
			kind = "oversized"
			r.ws.Send(t.Context(), faultproxy.Frame{Data: make([]byte, flashblock.MaxMessage+1)})
		default:
			switch rng.IntN(9) {
			case 0:
				kind = "reset"
				r.tcp.Reset()
			case 1:
				kind = "drop"
				shot.arm(faultproxy.Drop, 1)
			case 2:
				kind = "duplicate"
				shot.arm(faultproxy.Duplicate, 1)
			case 3:
				kind = "reorder"
				shot.arm(faultproxy.Swap(1), 2)
			case 4:
				kind = "replay"
				shot.arm(faultproxy.Replay(12, 11), 12)
			case 5:
				kind = "malformed"
				r.ws.Send(t.Context(), faultproxy.Frame{Binary: rng.IntN(2) == 0, Data: []byte(fmt.Sprintf("{%d", i))})
			case 6:
				kind = "refused"
				r.tcp.Refuse(true)
				r.tcp.Reset()
				time.Sleep(100 * time.Millisecond)
				r.tcp.Refuse(false)
			case 7:
				kind = "upstream_stall"
				r.rpc.Stall()
				time.Sleep(100 * time.Millisecond)
				r.rpc.Release()
			case 8:
				kind = "upstream_behind"
				r.rpc.SetBehind(3, 2)
				time.Sleep(150 * time.Millisecond)
				r.rpc.SetBehind(0, 0)
			}
		}
		kinds[kind]++
		time.Sleep(30 * time.Millisecond)
		if i%100 == 0 {
			var s sample
			var err error
			if s.rss, err = fol.Metric("process_resident_memory_bytes"); err == nil {
				s.goroutines, err = fol.Metric("go_goroutines")
			}
			if err == nil {
				s.heap, err = fol.Metric("go_memstats_heap_inuse_bytes")
			}
			if err != nil {
				t.Fatalf("after %d faults: %v", i, err)
			}
			samples = append(samples, s)
			t.Logf("FIGURE soak faults=%d rss_mib=%.1f heap_inuse_mib=%.1f goroutines=%.0f", i, s.rss/(1<<20), s.heap/(1<<20), s.goroutines)
		}
	}
	elapsed := time.Since(start)
	shot.arm(nil, 0)
	t1 := time.Now()
	r.waitFor("the follower's pending block to be the sequencer's", func() bool {
		// the same block with the same transactions (the sequencer does not
		// say its flashblock index)
		var st struct {
			Pending *struct {
				Number hexutil.Uint64
				Txs    int `json:"transactions"`
			}
		}
		var blk struct {
			Number       hexutil.Uint64
			Transactions []common.Hash
		}
		if callInto(fol.URL(), &st, "follower_status") != nil || st.Pending == nil || callInto(seq.URL(), &blk, "eth_getBlockByNumber", "pending", false) != nil {
			return false
		}
		return blk.Number == st.Pending.Number && len(blk.Transactions) == st.Pending.Txs
	})
	back := time.Since(t1)
	r.waitFor("/readyz 200", func() bool {
		resp, err := http.Get(fol.URL() + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	t.Logf("FIGURE soak faults=%d in %v kinds=%v caught_up_after_last=%v", faults, elapsed.Round(time.Second), kinds, back)
	if len(samples) >= 6 {
		first, last := samples[1:4], samples[len(samples)-3:] // the first hundred are warm-up
		median := func(ss []sample, f func(sample) float64) float64 {
			v := make([]float64, len(ss))
			for i, s := range ss {
				v[i] = f(s)
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		rss := func(s sample) float64 { return s.rss }
		gor := func(s sample) float64 { return s.goroutines }
		rssGrowth, gorGrowth := median(last, rss)/median(first, rss), median(last, gor)/median(first, gor)
		t.Logf("FIGURE soak rss_growth=%.3f goroutine_growth=%.3f", rssGrowth, gorGrowth)
		if rssGrowth > 1.2 || gorGrowth > 1.2 {
			t.Errorf("not flat over %d faults: RSS x%.2f, goroutines x%.2f (samples %v)", faults, rssGrowth, gorGrowth, samples)
		}
	}
	r.done()
}
