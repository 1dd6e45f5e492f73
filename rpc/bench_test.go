package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// Micro-benchmarks of the request hot path, each with allocations reported:
// decode (envelope and parameters), dispatch (Handle end to end with a
// trivial handler), response encode, and one HTTP round trip over loopback
// through ServeFast and through net/http alone.
//
//	go test -run '^$' -bench . -benchmem ./rpc/

const (
	benchBalance = `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266","pending"]}`
	benchStorage = `{"jsonrpc":"2.0","id":1,"method":"eth_getStorageAt","params":["0x00000000000000000000000000000000000b3c11","0x0","pending"]}`
)

func benchServer() *Server {
	s := NewServer(Options{})
	s.Register("eth_getBalance", func(_ context.Context, p Params) (any, error) {
		var addr common.Address
		if err := p.Required(0, &addr); err != nil {
			return nil, err
		}
		var tag string
		if _, err := p.Optional(1, &tag); err != nil {
			return nil, err
		}
		return json.RawMessage(`"0x21e19e0c9bab2400000"`), nil
	})
	s.Register("eth_blockNumber", func(context.Context, Params) (any, error) { return hexutil.Uint64(0x1234), nil })
	return s
}

// BenchmarkDecodeEnvelope: the request envelope, fast decoder vs encoding/json.
func BenchmarkDecodeEnvelope(b *testing.B) {
	msg := []byte(benchStorage)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req fastRequest
			if !decodeFast(msg, &req) {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req request
			if !json.Valid(msg) || json.Unmarshal(msg, &req) != nil {
				b.Fatal("not decoded")
			}
			if _, err := splitParams(req.Params); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDecodeParam: one address parameter, direct vs encoding/json.
func BenchmarkDecodeParam(b *testing.B) {
	raw := []byte(`"0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a common.Address
			if err := decodeValue(raw, &a); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a common.Address
			if err := json.Unmarshal(raw, &a); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDispatch: Handle end to end (decode, method lookup, handler,
// encode) with a handler that does no work of its own.
func BenchmarkDispatch(b *testing.B) {
	s := benchServer()
	ctx := context.Background()
	for _, bc := range []struct{ name, msg string }{
		{"getBalance", benchBalance},
		{"blockNumber", `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}`},
		{"batch10", "[" + string(bytes.Repeat([]byte(benchBalance+","), 9)) + benchBalance + "]"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			msg := []byte(bc.msg)
			buf := new(bytes.Buffer)
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				s.handleInto(ctx, msg, buf)
				if buf.Len() == 0 {
					b.Fatal("no answer")
				}
			}
		})
	}
}

// BenchmarkEncodeResult: writing one answer for the common result types.
func BenchmarkEncodeResult(b *testing.B) {
	id := json.RawMessage(`1`)
	for _, bc := range []struct {
		name   string
		result any
	}{
		{"raw", json.RawMessage(`"0x21e19e0c9bab2400000"`)},
		{"hexutil.Uint64", hexutil.Uint64(0x1234)},
		{"common.Hash", common.HexToHash("0x1234")},
		{"hexutil.Bytes", hexutil.Bytes(bytes.Repeat([]byte{0xab}, 32))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			buf := new(bytes.Buffer)
			b.ReportAllocs()
			for b.Loop() {
				buf.Reset()
				writeResult(buf, id, bc.result)
			}
		})
	}
}

// BenchmarkHTTPRoundTrip: one keep-alive request over loopback, client
// included, through ServeFast and through net/http with HTTPHandler.
func BenchmarkHTTPRoundTrip(b *testing.B) {
	s := benchServer()
	req := fmt.Sprintf("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(benchBalance), benchBalance)
	for _, mode := range []string{"fast", "net-http"} {
		b.Run(mode, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			h := s.HTTPHandler(HTTPOptions{})
			srv := &http.Server{Handler: h}
			if mode == "fast" {
				go h.Serve(ln, srv)
			} else {
				go srv.Serve(ln)
			}
			defer srv.Close()
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := io.WriteString(conn, req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkRequestBookkeeping: the fast path's work around each request
// other than reading, dispatching and writing — the request's context, the
// watcher, the socket deadlines, the clock reads — on loopback TCP
// connections (nothing is read or written), one per goroutine, from as
// many goroutines as CPUs. "per-request" is how it was done before the
// watcher's timer and the idle and write deadlines were kept across
// requests: a context registered with the server's cancellable one, the
// timer reset and stopped, three deadlines set exactly. "kept" is fastConn's.
func BenchmarkRequestBookkeeping(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() { // hold the server ends open until the listener closes
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Error(err)
		}
		return c
	}
	s := benchServer()
	var opts HTTPOptions
	opts.defaults()
	b.Run("per-request", func(b *testing.B) {
		parent, stop := context.WithCancel(context.Background())
		defer stop()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			c := dial()
			defer c.Close()
			var mu sync.Mutex
			armed := false
			t := time.AfterFunc(time.Hour, func() {})
			for pb.Next() {
				c.SetReadDeadline(time.Now().Add(opts.IdleTimeout))
				arrived := time.Now()
				c.SetReadDeadline(arrived.Add(opts.ReadTimeout))
				httpDate(time.Now())
				_, cancel := context.WithCancelCause(parent)
				mu.Lock()
				armed = true
				mu.Unlock()
				t.Reset(watchAfter)
				mu.Lock()
				armed = false
				mu.Unlock()
				t.Stop()
				cancel(nil)
				c.SetWriteDeadline(time.Now().Add(opts.WriteTimeout))
			}
			_ = armed
		})
	})
	b.Run("kept", func(b *testing.B) {
		f := &fastServer{rpc: s, opts: opts, ctx: s.withLimits(WithTransport(context.Background(), "http"))}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			fc := &fastConn{srv: f, c: dial()}
			defer fc.c.Close()
			for pb.Next() {
				fc.keepDeadline(&fc.readDL, time.Now(), opts.IdleTimeout, fc.c.SetReadDeadline)
				arrived := time.Now()
				httpDate(arrived)
				_, cancel := context.WithCancelCause(f.ctx)
				fc.reqs++
				fc.gate.begin(nil, fc.reqs)
				fc.watch(cancel, arrived, fc.reqs)
				fc.gate.finish()
				fc.unwatch()
				cancel(nil)
				fc.keepDeadline(&fc.writeDL, time.Now(), opts.WriteTimeout, fc.c.SetWriteDeadline)
			}
			if fc.timer != nil {
				fc.timer.Stop()
			}
		})
	})
	// The parts of per-request.
	b.Run("part/3-deadlines", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			c := dial()
			defer c.Close()
			for pb.Next() {
				c.SetReadDeadline(time.Now().Add(opts.IdleTimeout))
				c.SetReadDeadline(time.Now().Add(opts.ReadTimeout))
				c.SetWriteDeadline(time.Now().Add(opts.WriteTimeout))
			}
		})
	})
	b.Run("part/timer-reset-stop", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			t := time.AfterFunc(time.Hour, func() {})
			for pb.Next() {
				t.Reset(watchAfter)
				t.Stop()
			}
		})
	})
	for _, cancellable := range []bool{true, false} {
		b.Run(fmt.Sprintf("part/context/cancellable-parent=%v", cancellable), func(b *testing.B) {
			parent := context.Background()
			if cancellable {
				var stop context.CancelFunc
				parent, stop = context.WithCancel(parent)
				defer stop()
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_, cancel := context.WithCancelCause(parent)
					cancel(nil)
				}
			})
		})
	}
	b.Run("part/time.Now", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			var last time.Time
			for pb.Next() {
				last = time.Now()
			}
			runtime.KeepAlive(last)
		})
	})
}

// BenchmarkReadHead: parsing a request head on the fast path, as the bench's
// generator sends it and as a browser-side client (viem's fetch) does.
func BenchmarkReadHead(b *testing.B) {
	heads := map[string]string{
		"bench": "POST / HTTP/1.1\r\nHost: 127.0.0.1:8545\r\nContent-Type: application/json\r\nContent-Length: 120\r\n\r\n",
		"fetch": "POST / HTTP/1.1\r\nHost: 127.0.0.1:8545\r\nConnection: keep-alive\r\nContent-Type: application/json\r\nAccept: */*\r\n" +
			"Accept-Language: *\r\nSec-Fetch-Mode: cors\r\nUser-Agent: node\r\nAccept-Encoding: gzip, deflate\r\nContent-Length: 120\r\n\r\n",
	}
	for _, name := range []string{"bench", "fetch"} {
		b.Run(name, func(b *testing.B) {
			opts := HTTPOptions{}
			opts.defaults()
			fc := &fastConn{srv: &fastServer{opts: opts, policy: newRequestPolicy(opts)}}
			raw := heads[name] + strings.Repeat("x", 120)
			br := bufio.NewReaderSize(strings.NewReader(""), fastBufSize)
			for b.Loop() {
				br.Reset(strings.NewReader(raw))
				br.Peek(len(raw))
				if _, _, v := fc.readHead(br); v != headFast {
					b.Fatalf("verdict %v", v)
				}
			}
		})
	}
}
