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
	"testing"

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
			srv := &http.Server{Handler: s.HTTPHandler(HTTPOptions{})}
			if mode == "fast" {
				go s.ServeFast(ln, srv, HTTPOptions{})
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
