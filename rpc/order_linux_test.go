//go:build linux

package rpc

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
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

func waitToken(ch chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

// Connections whose data arrives one after the other are woken in that
// order, whatever order the runtime would run them in.
func TestReadyOrderWakesInArrivalOrder(t *testing.T) {
	o := newReadyOrder(time.Hour)
	if o == nil {
		t.Fatal("no epoll")
	}
	defer o.close()
	const n = 8
	srv, cli := loopbackPairs(t, n)
	chans := make([]chan struct{}, n)
	var want []int32
	for i, s := range srv {
		var fd int32
		chans[i], fd = o.add(s)
		if chans[i] == nil || fd != fdOf(t, s) {
			t.Fatalf("conn %d not registered (fd %d)", i, fd)
		}
		want = append(want, fd)
	}
	var mu sync.Mutex
	var got []int32
	testHookWake = func(fd int32) { mu.Lock(); got = append(got, fd); mu.Unlock() }
	defer func() { testHookWake = nil }()
	// Holding the order's lock, the loop cannot wake anyone until every
	// byte has arrived: it finds them all in the ready list at once.
	o.mu.Lock()
	for _, c := range slices.Backward(cli) { // reverse of the registration order
		if _, err := c.Write([]byte{1}); err != nil {
			o.mu.Unlock()
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	o.mu.Unlock()
	for i := range chans {
		if !waitToken(chans[n-1-i], 5*time.Second) {
			t.Fatalf("conn %d not woken", n-1-i)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Reverse(want)
	if !slices.Equal(got, want) {
		t.Fatalf("woken in fd order %v, want the arrival order %v", got, want)
	}
}

// A removed connection is not woken; the sweep wakes the registered ones
// without data; nothing is registered once closed.
func TestReadyOrderRemoveSweepClose(t *testing.T) {
	o := newReadyOrder(20 * time.Millisecond)
	if o == nil {
		t.Fatal("no epoll")
	}
	srv, cli := loopbackPairs(t, 2)
	kept, _ := o.add(srv[0])
	gone, fd := o.add(srv[1])
	o.remove(fd)
	if !waitToken(kept, 5*time.Second) {
		t.Fatal("sweep did not wake a registered connection")
	}
	cli[1].Write([]byte{1})
	if waitToken(gone, 200*time.Millisecond) {
		t.Fatal("a removed connection was woken")
	}
	o.close()
	o.close() // twice is fine
	if ch, fd := o.add(srv[0]); ch != nil || fd != -1 {
		t.Fatalf("add after close = %v, %d", ch, fd)
	}
	o.remove(fdOf(t, srv[0])) // after close: no-op
	var nilOrder *readyOrder
	if ch, _ := nilOrder.add(srv[0]); ch != nil {
		t.Fatal("nil order registered a connection")
	}
	nilOrder.remove(3)
	nilOrder.close()
}

// Connections are answered whether they wait in arrival order (more open
// connections than orderFrom) or in the netpoller (fewer), and across the
// change both ways: many open, then all but one closed, then many again.
func TestServeFastOrderedAndNot(t *testing.T) {
	s := testServer()
	addr, _ := startFast(t, s, HTTPOptions{})
	type conn struct {
		c  net.Conn
		rw *bufio.ReadWriter
	}
	open := func(n int) []conn {
		var cs []conn
		for range n {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			c.SetDeadline(time.Now().Add(10 * time.Second))
			cs = append(cs, conn{c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c))})
		}
		return cs
	}
	ask := func(cs []conn, rounds int) {
		t.Helper()
		for r := range rounds {
			for _, c := range cs {
				c.rw.WriteString(post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"test_echo","params":["x"]}`, r)))
				c.rw.Flush()
			}
			for i, c := range cs {
				resp, err := http.ReadResponse(c.rw.Reader, nil)
				if err != nil {
					t.Fatalf("round %d, conn %d of %d: %v", r, i, len(cs), err)
				}
				if b := readBody(t, resp); !strings.Contains(b, `"x"`) {
					t.Fatalf("round %d, conn %d: %s", r, i, b)
				}
			}
		}
	}
	many := open(2*runtime.GOMAXPROCS(0) + 3)
	ask(many, 20) // ordered
	for _, c := range many[1:] {
		c.c.Close()
	}
	time.Sleep(100 * time.Millisecond) // the server sees the closes
	ask(many[:1], 20)                  // one left: in the netpoller
	more := append(many[:1], open(2*runtime.GOMAXPROCS(0)+3)...)
	ask(more, 20) // ordered again, the first connection included
}
