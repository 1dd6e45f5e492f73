// Package pebblestore opens the node's Pebble stores so that closing one never
// races with its readers: Close waits for every open iterator to be
// released before Pebble closes, and an iterator asked for after Close
// reports ErrClosed instead of crashing the process.
//
// go-ethereum's Pebble wrapper already orders Get, Has and batch writes
// against Close (a read lock each), but not iterators, which live past the
// call that made them. Pebble refuses to close while one is open ("leaked
// iterators: current") and panics when one is made after Close. One such
// reader outlives every shutdown step this node controls: go-ethereum's
// state snapshot generator keeps its two iterators open until it is aborted
// and releases them only after it has answered the abort, so
// BlockChain.Stop can return while they are still open (a new datadir,
// stopped before its second block; core/state/snapshot/generate.go,
// generate: ctx.close is deferred past `abort <- nil`).
package pebblestore

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/ethdb/pebble"
)

// ErrClosed is the error of an iterator made after Close.
var ErrClosed = errors.New("database closed")

// CloseWait bounds Close's wait for open iterators; past it the store is
// closed anyway and Close reports how many were still open.
var CloseWait = 10 * time.Second

// Open opens (or creates) a Pebble store at dir with a cache of cacheMB
// megabytes, its metrics under namespace, guarded (see Guard), without a
// freezer.
func Open(dir string, cacheMB int, namespace string) (ethdb.Database, error) {
	kv, err := pebble.New(dir, cacheMB, 256, namespace, false)
	if err != nil {
		return nil, err
	}
	return rawdb.NewDatabase(Guard(kv)), nil
}

// Guard wraps kv so that Close waits for its iterators (at most CloseWait)
// and iterators made after Close report ErrClosed.
func Guard(kv ethdb.KeyValueStore) ethdb.KeyValueStore {
	return &guarded{KeyValueStore: kv, idle: make(chan struct{})}
}

type guarded struct {
	ethdb.KeyValueStore

	mu      sync.Mutex
	iters   int  // open iterators
	closing bool // Close was called: no new iterators
	idle    chan struct{}
}

// NewIterator counts the iterator until it is released.
func (g *guarded) NewIterator(prefix, start []byte) ethdb.Iterator {
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		return closedIterator{}
	}
	g.iters++ // before it exists: Close cannot slip in between
	g.mu.Unlock()
	return &trackedIterator{Iterator: g.KeyValueStore.NewIterator(prefix, start), g: g}
}

func (g *guarded) released() {
	g.mu.Lock()
	g.iters--
	if g.closing && g.iters == 0 {
		close(g.idle)
	}
	g.mu.Unlock()
}

// Close refuses new iterators, waits for the open ones to be released, then
// closes the store. A second Close returns nil.
func (g *guarded) Close() error {
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		return nil
	}
	g.closing = true
	if g.iters == 0 {
		close(g.idle)
	}
	g.mu.Unlock()
	t := time.NewTimer(CloseWait)
	defer t.Stop()
	select {
	case <-g.idle:
		return g.KeyValueStore.Close()
	case <-t.C:
		g.mu.Lock()
		n := g.iters
		g.mu.Unlock()
		return errors.Join(fmt.Errorf("%d iterators still open after %s", n, CloseWait), g.KeyValueStore.Close())
	}
}

// trackedIterator tells its store when it is released (once: Release may
// be called more than once).
type trackedIterator struct {
	ethdb.Iterator
	g    *guarded
	done atomic.Bool
}

func (it *trackedIterator) Release() {
	if it.done.CompareAndSwap(false, true) {
		it.Iterator.Release()
		it.g.released()
	}
}

// closedIterator is an empty iterator whose error is ErrClosed.
type closedIterator struct{}

func (closedIterator) Next() bool    { return false }
func (closedIterator) Error() error  { return ErrClosed }
func (closedIterator) Key() []byte   { return nil }
func (closedIterator) Value() []byte { return nil }
func (closedIterator) Release()      {}
