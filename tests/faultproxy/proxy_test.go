package faultproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// echo is a TCP echo server.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// TCP: bytes move, stop moving while frozen (no close), move again after
// a thaw; a reset reaches the client as ECONNRESET; refused connections
// are reset at once.
func TestTCP(t *testing.T) {
	p, err := NewTCP(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip := func(wait time.Duration) error {
		c.SetDeadline(time.Now().Add(wait))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		_, err := io.ReadFull(c, buf)
		return err
	}
	if err := roundTrip(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	p.Freeze()
	var ne net.Error
	if err := roundTrip(100 * time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("frozen: %v", err)
	}
	p.Thaw()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 8) // the frozen round trip's echo, then this one's
	c.Write([]byte("ping"))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("thawed: %v", err)
	}
	p.Reset()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(buf); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after a reset: %v", err)
	}
	p.Refuse(true)
	c2, err := net.Dial("tcp", p.Addr())
	if err == nil {
		c2.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = c2.Read(buf)
		c2.Close()
	}
	if err == nil {
		t.Fatal("a refused connection read data")
	}
}

// WS: frames pass through the installed fault.
func TestWS(t *testing.T) {
	feed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for i := range 6 {
			c.Write(r.Context(), websocket.MessageText, []byte{'a' + byte(i)})
		}
		c.CloseRead(r.Context())
		<-r.Context().Done()
	}))
	defer feed.Close()
	p, err := NewWS("ws" + strings.TrimPrefix(feed.URL, "http"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetFault(Every(2, Drop))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, p.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	var got []byte
	for range 3 {
		_, data, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, data...)
	}
	if string(got) != "ace" {
		t.Fatalf("got %q", got)
	}
}

// The frame faults.
func TestFaults(t *testing.T) {
	run := func(f Fault, n int) string {
		var out []byte
		for i := range n {
			for _, fr := range f(Frame{Data: []byte{'a' + byte(i)}}) {
				out = append(out, fr.Data...)
			}
		}
		return string(out)
	}
	h := NewHolder(2)
	for _, tc := range []struct {
		name string
		f    Fault
		n    int
		want string
	}{
		{"dup", Every(3, Duplicate), 6, "abccdeff"},
		{"swap", Swap(2), 6, "acbed"}, // f is held for the next frame
		{"replay", Replay(4, 2), 8, "abcbdefgfh"},
		{"hold", func(fr Frame) []Frame {
			if fr.Data[0] == 'b' {
				h.Hold()
			}
			if fr.Data[0] == 'f' {
				h.Release()
			}
			return h.Fault(fr)
		}, 6, "adef"},
	} {
		if got := run(tc.f, tc.n); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// RPC: a stall holds requests until released; the lagging view answers
// "latest" with an older block and refuses newer hashes.
func TestRPC(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"latest"`) {
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"hash":"0x` + strings.Repeat("a", 64) + `","number":"0xa"}}`))
			return
		}
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":` + strings.ReplaceAll(string(body), `"`, `'`) + `}`))
	}))
	defer up.Close()
	p, post := rpcProxy(t, up.URL)
	post(`{"id":1,"method":"eth_getBlockByNumber","params":["latest",false]}`)
	p.SetBehind(3, 1)
	if got := post(`{"id":1,"method":"eth_getBlockByNumber","params":["latest",false]}`); !strings.Contains(got, `'0x7'`) {
		t.Fatalf("lagging latest: %s", got)
	}
	if got := post(`[{"id":7,"method":"eth_getProof","params":["0x01",[],{"blockHash":"0x` + strings.Repeat("a", 64) + `"}]}]`); !strings.Contains(got, `"id":7,"error":{"code":-32000,"message":"header not found"}`) {
		t.Fatalf("newer hash in the lagging view: %s", got)
	}
	p.SetBehind(0, 0)
	p.Stall()
	done := make(chan string)
	go func() { done <- post(`{"id":1,"method":"eth_chainId"}`) }()
	select {
	case got := <-done:
		t.Fatalf("answered while stalled: %s", got)
	case <-time.After(100 * time.Millisecond):
	}
	p.Release()
	if got := <-done; !strings.Contains(got, "eth_chainId") {
		t.Fatalf("after release: %s", got)
	}
}

// rpcProxy is an RPC proxy in front of target, closed when the test ends,
// and a function that posts a body through it and returns the answer.
func rpcProxy(t *testing.T, target string) (*RPC, func(body string) string) {
	t.Helper()
	p, err := NewRPC(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, func(body string) string {
		resp, err := http.Post(p.URL(), "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return string(out)
	}
}
