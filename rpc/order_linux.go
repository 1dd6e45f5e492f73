//go:build linux

package rpc

import (
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// readyOrder wakes the fast path's keep-alive connections in the order
// their requests arrived.
//
// Left to the runtime, a connection goroutine waits for its next request in
// the netpoller, and under load the scheduler polls only when its run queue
// is empty, then runs the goroutines that became ready in the reverse of
// the order epoll reported them (runtime.netpollready pushes each onto the
// head of a list). A request that arrived first in one poll is then served
// last in the next: at 32 saturating connections latencies spread evenly
// from zero to twice the mean, p99 ≈ 2 × mean (go run ./bench -shape -pin:
// 2.0–2.2 × mean for a minimal Go server; preconf's reads 2.5 ×). Here the
// connections' sockets are also registered, edge-triggered, in an epoll
// instance of our own, whose ready list is first-in first-out; one
// goroutine drains it whenever it is readable and wakes each connection
// through its channel in that order, so the scheduler's queue receives them
// in arrival order. Same run, pinned (go run ./bench -pin -nodes
// preconf,preconf-base,anvil -preconf-base <checkout without it>, 3 rounds,
// 32 connections), p99 before → after: eth_getBalance pending 0.72 → 0.56
// ms, eth_getStorageAt latest 0.71 → 0.54, eth_blockNumber 0.61 → 0.53,
// eth_simulateV1 2 transfers 4.33 → 3.28, 3 blocks + call 8.26 → 5.79 (anvil
// 0.86, 0.68, 0.62, 5.36, 6.32); sharing the cores with the generator 2.89 →
// 1.62, 2.64 → 2.11, 2.03 → 1.60, 6.26 → 5.31, 7.66 → 4.82; requests/s and
// CPU per request within 5 % of before.
//
// The channel only orders: a connection woken without data (an idle sweep,
// an old wake-up) goes on to read its socket as before, under the idle read
// deadline, so timeouts and closes behave as without it.
type readyOrder struct {
	epfd int
	file *os.File // epfd, for the runtime's netpoller

	mu     sync.Mutex
	conns  map[int32]chan struct{}
	closed bool
	done   chan struct{}
}

// newReadyOrder starts the order, or returns nil (no ordering) if epoll is
// unavailable. sweep is how often every waiting connection is woken to
// check its idle deadline.
func newReadyOrder(sweep time.Duration) *readyOrder {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	if err := unix.SetNonblock(epfd, true); err != nil { // for the netpoller
		unix.Close(epfd)
		return nil
	}
	o := &readyOrder{epfd: epfd, file: os.NewFile(uintptr(epfd), "epoll"), conns: make(map[int32]chan struct{}), done: make(chan struct{})}
	rc, err := o.file.SyscallConn()
	if err != nil {
		o.file.Close()
		return nil
	}
	go o.loop(rc)
	go o.sweep(max(sweep, 10*time.Millisecond))
	return o
}

// add registers c and returns its wake-up channel, or nil if c has no
// socket of its own (then it waits in the netpoller as before).
func (o *readyOrder) add(c net.Conn) (chan struct{}, int32) {
	sc, ok := c.(syscall.Conn)
	if o == nil || !ok {
		return nil, -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, -1
	}
	ch, fd := make(chan struct{}, 1), int32(-1)
	rc.Control(func(raw uintptr) {
		o.mu.Lock()
		defer o.mu.Unlock()
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(raw)}
		if o.closed || unix.EpollCtl(o.epfd, unix.EPOLL_CTL_ADD, int(raw), &ev) != nil {
			return
		}
		fd = int32(raw)
		o.conns[fd] = ch
	})
	if fd < 0 {
		return nil, -1
	}
	return ch, fd
}

// remove unregisters fd; call it before the socket is closed or handed
// over (its number can be reused once closed).
func (o *readyOrder) remove(fd int32) {
	if o == nil || fd < 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.conns, fd)
	if !o.closed {
		unix.EpollCtl(o.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
	}
}

// close stops the order; connections still registered are not woken any
// more by it (the server's shutdown wakes them).
func (o *readyOrder) close() {
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

// loop waits for the epoll instance to be readable and wakes the ready
// connections in its order, until the instance is closed.
func (o *readyOrder) loop(rc syscall.RawConn) {
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
			if testHookWake != nil {
				testHookWake(ev.Fd)
			}
			wake(o.conns[ev.Fd])
		}
		o.mu.Unlock()
	}
}

// testHookWake, if set, sees each wake-up in order (under the lock).
var testHookWake func(fd int32)

// sweep wakes every registered connection each period, so that one waiting
// here reaches its socket read and the idle deadline there.
func (o *readyOrder) sweep(period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-o.done:
			return
		case <-t.C:
		}
		o.mu.Lock()
		for _, ch := range o.conns {
			wake(ch)
		}
		o.mu.Unlock()
	}
}
