package pebblestore

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/ethdb/memorydb"
	"github.com/ethereum/go-ethereum/ethdb/pebble"
)

// isClosing reports whether Close has begun on g.
func (g *guarded) isClosing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closing
}

// TestCloseWaitsForIterators: Pebble closes only after the iterator open
// when Close began is released, and it stays usable until then. Without
// the guard Pebble's Close fails ("leaked iterators: current").
func TestCloseWaitsForIterators(t *testing.T) {
	kv, err := pebble.New(t.TempDir(), 16, 16, "test/", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Put([]byte("k1"), []byte("v1")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Put([]byte("k2"), []byte("v2")); err != nil {
		t.Fatal(err)
	}
	g := Guard(kv).(*guarded)
	it := g.NewIterator([]byte("k"), nil)
	read := make(chan []string, 1)
	go func() {
		for !g.isClosing() {
			time.Sleep(time.Millisecond)
		}
		var keys []string
		for it.Next() { // the store is still open: Close is waiting for us
			keys = append(keys, string(it.Key()))
		}
		if err := it.Error(); err != nil {
			keys = append(keys, err.Error())
		}
		it.Release()
		it.Release() // counted once
		read <- keys
	}()
	if err := g.Close(); err != nil {
		t.Fatalf("close with a reader: %v", err)
	}
	if got := strings.Join(<-read, ","); got != "k1,k2" {
		t.Fatalf("reader during close saw %q, want k1,k2", got)
	}
	after := g.NewIterator(nil, nil)
	if after.Next() || !errors.Is(after.Error(), ErrClosed) {
		t.Fatalf("iterator after close: next or error %v, want ErrClosed", after.Error())
	}
	after.Release()
	if err := g.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// TestCloseWaitIsBounded: an iterator never released does not hang Close.
func TestCloseWaitIsBounded(t *testing.T) {
	defer func(d time.Duration) { CloseWait = d }(CloseWait)
	CloseWait = 20 * time.Millisecond
	g := Guard(memorydb.New())
	it := g.NewIterator(nil, nil)
	defer it.Release()
	err := g.Close()
	if err == nil || !strings.Contains(err.Error(), "1 iterators still open") {
		t.Fatalf("close with a leaked iterator: %v", err)
	}
}
