package chain

import (
	"errors"
	"testing"
	"time"

	"github.com/preconf/preconf/pebblestore"
)

// TestCloseWaitsForReaders: a reader holding an iterator of the store when
// the chain closes (as go-ethereum's snapshot generator does on a new
// datadir) delays the close instead of failing it with Pebble's "leaked
// iterators: current"; a reader after Close gets an error, not a panic.
func TestCloseWaitsForReaders(t *testing.T) {
	c, err := Open(Config{Dir: t.TempDir(), CacheMB: 16})
	if err != nil {
		t.Fatal(err)
	}
	it := c.db.NewIterator(nil, nil)
	released := make(chan struct{})
	go func() {
		time.Sleep(100 * time.Millisecond) // past the chain's own shutdown
		for it.Next() {
		}
		it.Release()
		close(released)
	}()
	if err := c.Close(); err != nil {
		t.Fatalf("close with a reader: %v", err)
	}
	select {
	case <-released:
	default:
		t.Fatal("the store closed before its reader released its iterator")
	}
	after := c.db.NewIterator(nil, nil)
	defer after.Release()
	if after.Next() || !errors.Is(after.Error(), pebblestore.ErrClosed) {
		t.Fatalf("iterator after close: error %v, want pebblestore.ErrClosed", after.Error())
	}
}
