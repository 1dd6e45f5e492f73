package txpool

import (
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// TestPendingNonce follows a sender's pool nonce through the pool's life:
// admissions (contiguous and gapped), execution seen through a stale or a
// fresh pending state, an invalid transaction dropped, and the sweep.
func TestPendingNonce(t *testing.T) {
	f := newFixture(t, Config{}) // the sender's pending nonce is 3
	from := crypto.PubkeyToAddress(f.key.PublicKey)
	add := func(nonce uint64) common.Hash {
		t.Helper()
		tx := f.tx(t, f.key, nonce, 21000, 2*gwei, 1, nil)
		if _, err := f.pool.Add(tx); err != nil {
			t.Fatalf("add nonce %d: %v", nonce, err)
		}
		return tx.Hash()
	}
	want := func(step string, stateNonce, n uint64) {
		t.Helper()
		if got := f.pool.PendingNonce(from, stateNonce); got != n {
			t.Fatalf("%s: pool nonce over state nonce %d = %d, want %d", step, stateNonce, got, n)
		}
	}
	want("empty pool", 3, 3)
	h3, h4 := add(3), add(4)
	want("two pooled", 3, 5)
	add(7)
	want("gapped 7 counts for nothing", 3, 5)
	// The sequencer executes 3 and 4 and takes them out of the pool: a
	// reader whose pending state predates the execution still gets 5.
	f.pool.Remove(h3, h4)
	want("executed, stale state", 3, 5)
	want("executed, fresh state", 5, 5)
	// 5 and 6 close the gap up to 7.
	f.setNonce(5)
	h5 := add(5)
	want("5 pooled", 5, 6)
	add(6)
	want("gap closed", 5, 8)
	// 5 turns out invalid: it is the next nonce again, 6 and 7 wait.
	f.pool.Drop(h5)
	want("5 dropped", 5, 5)
	// Sweeps: the entry stays while anything is pooled.
	f.pool.Sweep(func(common.Address) uint64 { return 5 })
	f.pool.Sweep(func(common.Address) uint64 { return 5 })
	if f.pool.nonces.len() != 1 {
		t.Fatalf("entries %d after sweeps with transactions pooled, want 1", f.pool.nonces.len())
	}
	f.pool.Remove(hashesOf(f.pool)...)
	f.pool.Sweep(func(common.Address) uint64 { return 5 })
	want("one sweep after the pool emptied", 3, 5)
	f.pool.Sweep(func(common.Address) uint64 { return 5 })
	if f.pool.nonces.len() != 0 {
		t.Fatalf("entries %d after two sweeps with nothing pooled, want 0", f.pool.nonces.len())
	}
	want("swept", 5, 5)
}

func hashesOf(p *Pool) []common.Hash {
	var out []common.Hash
	for _, e := range p.All() {
		out = append(out, e.Tx.Hash())
	}
	return out
}

// setNonce makes the fixture's pending state report nonce for every account.
func (f *fixture) setNonce(nonce uint64) {
	h, r, _ := f.base()
	f.pool.env = func() (*types.Header, state.Reader, error) { return h, nonceReader{r, nonce}, nil }
}

// TestPendingNonceConcurrent: readers of the pool nonce run beside
// admissions, executions and the sweep (for -race) and never see it go
// down while nothing is dropped.
func TestPendingNonceConcurrent(t *testing.T) {
	f := newFixture(t, Config{})
	from := crypto.PubkeyToAddress(f.key.PublicKey)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := uint64(0)
			for {
				select {
				case <-stop:
					return
				default:
				}
				n := f.pool.PendingNonce(from, 3)
				if n < last {
					t.Errorf("pool nonce went down: %d after %d", n, last)
					return
				}
				last = n
			}
		}()
	}
	for n := uint64(3); n < 40; n++ {
		h := f.tx(t, f.key, n, 21000, 2*gwei, 1, nil)
		if _, err := f.pool.Add(h); err != nil {
			t.Fatal(err)
		}
		if n%3 == 0 {
			f.pool.Candidates(func(common.Address) uint64 { return 3 })
			f.pool.Sweep(func(common.Address) uint64 { return 3 })
		}
	}
	close(stop)
	wg.Wait()
	if got := f.pool.PendingNonce(from, 3); got != 40 {
		t.Errorf("pool nonce %d, want 40", got)
	}
}
