package simulate

import (
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/vm"
)

// TestJumpDestCache: what is stored is loaded by its hash, a hash stored
// twice keeps its first analysis, and past the bound the cache starts over
// instead of growing.
func TestJumpDestCache(t *testing.T) {
	c := &jumpDestCache{m: make(map[common.Hash]vm.BitVec)}
	a, b := common.Hash{1}, common.Hash{2}
	c.Store(a, vm.BitVec{1, 2})
	c.Store(a, vm.BitVec{9})
	if v, ok := c.Load(a); !ok || len(v) != 2 || v[0] != 1 {
		t.Fatalf("load a = %v %v", v, ok)
	}
	if _, ok := c.Load(b); ok {
		t.Fatal("b loaded before it was stored")
	}
	big := make(vm.BitVec, maxJumpDestBytes-1)
	c.Store(b, big)
	if _, ok := c.Load(a); ok || c.bytes != len(big) {
		t.Fatalf("past the bound: a still cached, %d bytes", c.bytes)
	}
	if v, ok := c.Load(b); !ok || len(v) != len(big) {
		t.Fatal("b not cached after the reset")
	}
}

// TestJumpDestCacheConcurrent: EVMs of concurrent requests share it (run
// with -race).
func TestJumpDestCacheConcurrent(t *testing.T) {
	c := &jumpDestCache{m: make(map[common.Hash]vm.BitVec)}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				h := common.Hash{byte(i), byte(g % 2)}
				if _, ok := c.Load(h); !ok {
					c.Store(h, vm.BitVec{byte(i)})
				}
			}
		}()
	}
	wg.Wait()
	if len(c.m) != 400 {
		t.Fatalf("%d analyses, want 400", len(c.m))
	}
}
