package harness

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// TestDelayProxy: bytes pass through unchanged and in order, and each
// request-answer exchange takes at least the round-trip time given.
func TestDelayProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }() // echo
		}
	}()
	const rtt = 20 * time.Millisecond
	p, err := NewDelayProxy(ln.Addr().String(), rtt)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	for range 3 {
		t0 := time.Now()
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 4)
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping" {
			t.Fatalf("echo %q, %v", got, err)
		}
		if d := time.Since(t0); d < rtt {
			t.Errorf("exchange took %s, less than the round trip %s", d, rtt)
		}
	}
	big := make([]byte, 1<<20)
	rand.Read(big)
	go c.Write(big)
	back := make([]byte, len(big))
	if _, err := io.ReadFull(c, back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, big) {
		t.Error("1 MiB came back changed")
	}
	if err := p.Close(); err != nil {
		t.Error(err)
	}
}
