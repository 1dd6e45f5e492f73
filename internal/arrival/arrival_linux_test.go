//go:build linux

package arrival

import (
	"bufio"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// loopbackPairs returns n connected TCP pairs (server side, client side).
func loopbackPairs(t *testing.T, n int) (srv, cli []net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); s.Close() })
		srv, cli = append(srv, s), append(cli, c)
	}
	return srv, cli
}

func fdOf(t *testing.T, c net.Conn) int32 {
	t.Helper()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int32
	rc.Control(func(raw uintptr) { fd = int32(raw) })
	return fd
}

func signalled(ch chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

func newOrder(t *testing.T, budget int, sweep time.Duration) *Order {
	t.Helper()
	o := New(budget, sweep)
	if o == nil {
		t.Fatal("no epoll")
	}
	t.Cleanup(o.Close)
	return o
}

// register adds every server-side connection, checking its descriptor.
func register(t *testing.T, o *Order, srv []net.Conn) []*Waiter {
	t.Helper()
	ws := make([]*Waiter, len(srv))
	for i, s := range srv {
		if ws[i] = o.Add(s); ws[i] == nil || ws[i].fd != fdOf(t, s) {
			t.Fatalf("conn %d not registered", i)
		}
	}
	return ws
}

// arriveInOrder writes a byte to each client in turn while holding the
// order's lock, so that its loop finds every event in one batch.
func arriveInOrder(t *testing.T, o *Order, cli []net.Conn) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range cli {
		if _, err := c.Write([]byte{1}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

type hookLog struct {
	mu  sync.Mutex
	fds []int32
	max int // the most woken and not running at once
}

func (h *hookLog) get() ([]int32, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.fds), h.max
}

// Connections whose data arrives one after the other are woken in that
// order, and never more than the budget at once: the rest wait until a
// woken one runs.
func TestArrivalOrderAndBudget(t *testing.T) {
	for _, budget := range []int{1, 2, 16} {
		const n = 8
		o := newOrder(t, budget, time.Hour)
		srv, cli := loopbackPairs(t, n)
		ws := register(t, o, srv)
		var ready, counted hookLog
		o.mu.Lock()
		o.onReady = func(fd int32) { ready.mu.Lock(); ready.fds = append(ready.fds, fd); ready.mu.Unlock() }
		o.onCounted = func(fd int32, active int) {
			counted.mu.Lock()
			counted.fds, counted.max = append(counted.fds, fd), max(counted.max, active)
			counted.mu.Unlock()
		}
		o.mu.Unlock()
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Go(func() { w.Wait(nil) })
		}
		waitFor(t, func() bool { // every goroutine is in Wait
			for _, w := range ws {
				if w.state.Load() != waiting {
					return false
				}
			}
			return true
		})
		slices.Reverse(cli) // arrive in the reverse of the registration order
		slices.Reverse(ws)
		arriveInOrder(t, o, cli)
		wg.Wait()
		want := make([]int32, n)
		for i, w := range ws {
			want[i] = w.fd
		}
		gotReady, _ := ready.get()
		gotCounted, most := counted.get()
		if !slices.Equal(gotReady, want) || !slices.Equal(gotCounted, want) {
			t.Fatalf("budget %d: events %v, woken %v; want the arrival order %v", budget, gotReady, gotCounted, want)
		}
		if most > budget || (budget == 1 && most != 1) {
			t.Fatalf("budget %d: %d woken and not running at once", budget, most)
		}
		o.mu.Lock()
		active, queued := o.active, len(o.queue)-o.qhead
		o.mu.Unlock()
		if active != 0 || queued != 0 {
			t.Fatalf("budget %d: left active %d, queue %d", budget, active, queued)
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
	}
}

// A waiter woken but removed before it ran gives its budget to the next;
// one that is running when its data arrives is signalled without counting
// against the budget, and its next Wait returns at once.
func TestBudgetReleasedAndBusyUncounted(t *testing.T) {
	o := newOrder(t, 1, time.Hour)
	srv, cli := loopbackPairs(t, 3)
	ws := register(t, o, srv)
	a, b, c := ws[0], ws[1], ws[2]
	// a and b "wait" (no goroutine runs them yet); c is running.
	a.state.Store(waiting)
	b.state.Store(waiting)
	arriveInOrder(t, o, cli)
	waitFor(t, func() bool { o.mu.Lock(); defer o.mu.Unlock(); return len(o.queue)-o.qhead == 1 })
	o.mu.Lock()
	active := o.active
	o.mu.Unlock()
	if a.state.Load() != woken || !signalled(a.ch, time.Second) || b.state.Load() != waiting || active != 1 {
		t.Fatalf("a %d, b %d, active %d", a.state.Load(), b.state.Load(), active)
	}
	if !signalled(c.ch, time.Second) || c.state.Load() != busy {
		t.Fatal("the running connection was not signalled, or was counted")
	}
	o.Remove(a) // woken, never ran: b gets the budget
	if b.state.Load() != woken || !signalled(b.ch, time.Second) {
		t.Fatalf("b not woken after a's removal (state %d)", b.state.Load())
	}
	b.ch <- struct{}{}
	if !b.Wait(nil) || b.state.Load() != busy {
		t.Fatal("b's Wait")
	}
	o.mu.Lock()
	active = o.active
	o.mu.Unlock()
	if active != 0 {
		t.Fatalf("active %d after b ran", active)
	}
	cli[2].Write([]byte{2}) // c is busy: a plain signal, and Wait returns
	done := make(chan bool)
	go func() { done <- c.Wait(nil) }()
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("Wait reported done")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a signal to a running connection was lost")
	}
}

// A removed connection is not woken; the sweep wakes the registered ones
// without data; Wait returns false on done; nothing registers once closed.
func TestRemoveSweepDoneClose(t *testing.T) {
	o := New(2, 20*time.Millisecond)
	if o == nil {
		t.Fatal("no epoll")
	}
	srv, cli := loopbackPairs(t, 2)
	kept, gone := o.Add(srv[0]), o.Add(srv[1])
	o.Remove(gone)
	o.Remove(gone) // twice is fine
	if !signalled(kept.ch, 5*time.Second) {
		t.Fatal("sweep did not wake a registered connection")
	}
	cli[1].Write([]byte{1})
	if signalled(gone.ch, 200*time.Millisecond) {
		t.Fatal("a removed connection was woken")
	}
	done := make(chan struct{})
	close(done)
	for len(kept.ch) > 0 {
		<-kept.ch
	}
	o.Close()
	o.Close()
	if kept.Wait(done) {
		t.Fatal("Wait with done closed and no signal returned true")
	}
	if w := o.Add(srv[0]); w != nil {
		t.Fatal("registered after close")
	}
	o.Remove(kept) // after close: unregistered without epoll
	var none *Order
	if none.Add(srv[0]) != nil {
		t.Fatal("nil order registered a connection")
	}
	none.Remove(nil)
	none.Close()
}

// Echo servers whose connections wait in the order answer every request
// of many clients at budget 1: nothing is lost or left waiting.
func TestEchoUnderBudget(t *testing.T) {
	o := newOrder(t, 1, time.Second)
	const conns, rounds = 24, 200
	srv, cli := loopbackPairs(t, conns)
	for _, s := range srv {
		w := o.Add(s)
		go func() {
			defer o.Remove(w)
			buf := make([]byte, 64)
			for {
				w.Wait(nil)
				s.SetReadDeadline(time.Now().Add(10 * time.Second))
				n, err := s.Read(buf)
				if err != nil {
					return
				}
				if _, err := s.Write(buf[:n]); err != nil {
					return
				}
			}
		}()
	}
	var wg sync.WaitGroup
	for _, c := range cli {
		wg.Go(func() {
			c.SetDeadline(time.Now().Add(20 * time.Second))
			r := bufio.NewReader(c)
			for i := range rounds {
				if _, err := c.Write([]byte{byte(i)}); err != nil {
					t.Error(err)
					return
				}
				b, err := r.ReadByte()
				if err != nil || b != byte(i) {
					t.Errorf("round %d: %v %v", i, b, err)
					return
				}
			}
			c.Close()
		})
	}
	wg.Wait()
}
