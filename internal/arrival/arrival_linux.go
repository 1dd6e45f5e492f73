//go:build linux

package arrival

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// wake signals ch (buffered, one slot) unless a signal is already pending.
func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// A waiter's state, as the waiting goroutine and the Order see it.
const (
	busy    int32 = iota // running: it reads its socket before it waits again
	waiting              // blocked in Wait
	woken                // woken by the order and counted against the budget, not yet running
)

// Order wakes registered connections in arrival order, at most budget at a
// time (see the package comment).
type Order struct {
	epfd   int
	file   *os.File // epfd, for the runtime's netpoller
	budget int

	mu     sync.Mutex
	conns  map[int32]*Waiter
	queue  []*Waiter // ready while the budget was spent: woken from qhead on
	qhead  int
	active int // woken and counted, not yet running (≤ budget)
	closed bool
	done   chan struct{}

	// Tests' hooks, called under mu when set (set them under mu): each
	// epoll event in order, and each counted wake-up with the number then
	// woken and not running.
	onReady   func(fd int32)
	onCounted func(fd int32, active int)
}

// Waiter is one registered connection.
type Waiter struct {
	o     *Order
	fd    int32
	ch    chan struct{}
	state atomic.Int32 // busy, waiting or woken
	// Under o.mu.
	queued, gone bool
}

// New starts an order, or returns nil (no ordering) if epoll is
// unavailable. budget is how many connections may be woken and not yet
// running (at least 1); sweep is how often every waiting connection is
// woken anyway, so that it reaches the read (and the read deadline) it
// would have made without the order.
func New(budget int, sweep time.Duration) *Order {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	if err := unix.SetNonblock(epfd, true); err != nil { // for the netpoller
		unix.Close(epfd)
		return nil
	}
	o := &Order{epfd: epfd, file: os.NewFile(uintptr(epfd), "epoll"), budget: max(budget, 1),
		conns: make(map[int32]*Waiter), done: make(chan struct{})}
	rc, err := o.file.SyscallConn()
	if err != nil {
		o.file.Close()
		return nil
	}
	go o.loop(rc)
	go o.sweep(max(sweep, 10*time.Millisecond))
	return o
}

// Add registers c, or returns nil if c has no socket of its own or the
// order is closed (then its reads wait in the netpoller as before).
// Remove it before c is closed or handed over: its number can be reused.
func (o *Order) Add(c net.Conn) *Waiter {
	sc, ok := c.(syscall.Conn)
	if o == nil || !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	var w *Waiter
	rc.Control(func(raw uintptr) {
		o.mu.Lock()
		defer o.mu.Unlock()
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(raw)}
		if o.closed || unix.EpollCtl(o.epfd, unix.EPOLL_CTL_ADD, int(raw), &ev) != nil {
			return
		}
		w = &Waiter{o: o, fd: int32(raw), ch: make(chan struct{}, 1)}
		o.conns[w.fd] = w
	})
	return w
}

// Remove unregisters w (nil: nothing). Only w's own goroutine calls it,
// not while it waits.
func (o *Order) Remove(w *Waiter) {
	if o == nil || w == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if w.gone {
		return
	}
	w.gone = true
	delete(o.conns, w.fd)
	if !o.closed {
		unix.EpollCtl(o.epfd, unix.EPOLL_CTL_DEL, int(w.fd), nil)
	}
	if w.state.Swap(busy) == woken { // woken, never ran
		o.release()
	}
}

// Close stops the order; registered connections are not woken any more by
// it (their owners stop waiting through Wait's done).
func (o *Order) Close() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	o.closed = true
	close(o.done)
	o.file.Close()
}

// Wait blocks until the connection's socket may have new data (in arrival
// order) or done is closed (false). Call it only when the last read
// emptied the socket: the registration is edge-triggered, so bytes already
// there announce nothing more. A wake-up may find no data (a sweep, an old
// wake-up); the caller then reads as it would have without the order.
func (w *Waiter) Wait(done <-chan struct{}) bool {
	w.state.CompareAndSwap(busy, waiting) // (woken already: it was counted, the signal is pending)
	ok := true
	select {
	case <-w.ch:
	case <-done:
		ok = false
	}
	if w.state.Swap(busy) == woken {
		w.o.pass()
	}
	return ok
}

// pass is a counted waiter starting to run.
func (o *Order) pass() {
	o.mu.Lock()
	o.release()
	o.mu.Unlock()
}

// release gives a counted waiter's budget to the next (o.mu held).
func (o *Order) release() {
	o.active--
	o.next()
}

// next wakes queued waiters while the budget allows (o.mu held).
func (o *Order) next() {
	for o.active < o.budget && o.qhead < len(o.queue) {
		w := o.queue[o.qhead]
		o.queue[o.qhead] = nil
		o.qhead++
		w.queued = false
		if !w.gone {
			o.wakeCounted(w)
		}
	}
	if o.qhead == len(o.queue) {
		o.queue, o.qhead = o.queue[:0], 0
	}
}

// ready handles an epoll event for w (o.mu held).
func (o *Order) ready(w *Waiter) {
	if o.onReady != nil && w != nil {
		o.onReady(w.fd)
	}
	switch {
	case w == nil || w.queued:
	case w.state.Load() != waiting:
		// Running (or already woken): it reads its socket before it
		// waits again, and a pending signal makes that wait return.
		wake(w.ch)
	case o.active >= o.budget:
		w.queued = true
		o.queue = append(o.queue, w)
	default:
		o.wakeCounted(w)
	}
}

// wakeCounted wakes a waiting w against the budget (o.mu held); one no
// longer waiting (a sweep woke it meanwhile) gets a plain signal.
func (o *Order) wakeCounted(w *Waiter) {
	if w.state.CompareAndSwap(waiting, woken) {
		o.active++
		if o.onCounted != nil {
			o.onCounted(w.fd, o.active)
		}
	}
	wake(w.ch)
}

// loop waits for the epoll instance to be readable and hands its events
// to ready in its order, until the instance is closed.
func (o *Order) loop(rc syscall.RawConn) {
	events := make([]unix.EpollEvent, 128)
	for {
		var n int
		var werr error
		err := rc.Read(func(fd uintptr) bool {
			for {
				n, werr = unix.EpollWait(int(fd), events, 0)
				if !errors.Is(werr, unix.EINTR) {
					return werr != nil || n > 0 // else: wait for readability
				}
			}
		})
		if err != nil || werr != nil {
			return // closed
		}
		o.mu.Lock()
		for _, ev := range events[:n] {
			o.ready(o.conns[ev.Fd])
		}
		o.mu.Unlock()
	}
}

// sweep signals every registered connection each period (uncounted), so
// that one waiting here reaches its socket read and its deadline there.
func (o *Order) sweep(period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-o.done:
			return
		case <-t.C:
		}
		o.mu.Lock()
		if !o.closed {
			for _, w := range o.conns {
				wake(w.ch)
			}
		}
		o.mu.Unlock()
	}
}
