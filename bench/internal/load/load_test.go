package load

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer answers every POST with a fixed body; mode selects how the
// body is framed (Content-Length, chunked, or closing the connection).
func echoServer(t *testing.T, mode string, answer string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch mode {
		case "chunked":
			w.Write([]byte(answer[:len(answer)/2]))
			w.(http.Flusher).Flush()
			w.Write([]byte(answer[len(answer)/2:]))
		case "close":
			w.Header().Set("Connection", "close")
			w.Write([]byte(answer))
		case "500":
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("boom"))
		default:
			w.Write([]byte(answer))
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func TestRunLoad(t *testing.T) {
	const ok = `{"jsonrpc":"2.0","id":1,"result":"0x1"}`
	for _, tc := range []struct {
		mode       string
		answer     string
		wantErrors bool
	}{
		{"length", ok, false},
		{"chunked", ok, false},
		{"close", ok, false},
		{"length", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}`, true},
		{"500", ok, true},
	} {
		t.Run(tc.mode+"/"+tc.answer[len(tc.answer)-12:], func(t *testing.T) {
			srv, served := echoServer(t, tc.mode, tc.answer)
			addr := strings.TrimPrefix(srv.URL, "http://")
			res, err := Run(Config{Addr: addr, Conns: 4, Duration: 10 * time.Second, MaxRequests: 200,
				Bodies: [][]byte{[]byte(`{"jsonrpc":"2.0","id":1,"method":"x"}`)}, Check: CheckCalls(1)})
			if err != nil {
				t.Fatal(err)
			}
			total := res.Requests + res.Errors
			if total != 200 {
				t.Fatalf("requests %d + errors %d = %d, want the budget of 200", res.Requests, res.Errors, total)
			}
			if got := served.Load(); got != 200 {
				t.Fatalf("server saw %d requests, want 200", got)
			}
			if tc.wantErrors {
				if res.Errors != 200 || res.FirstError == "" {
					t.Fatalf("errors %d (%q), want 200 with a message", res.Errors, res.FirstError)
				}
				return
			}
			if res.Errors != 0 {
				t.Fatalf("errors %d: %s", res.Errors, res.FirstError)
			}
			if res.RPS <= 0 || res.P50 <= 0 || res.P99 < res.P50 || res.Max < res.P99 {
				t.Fatalf("inconsistent stats: %+v", res)
			}
			if res.ClientCPU <= 0 { // 200 requests' syscalls and parsing
				t.Fatalf("generator CPU per request %v, want > 0", res.ClientCPU)
			}
		})
	}
}

func TestRunLoadStopsAtDuration(t *testing.T) {
	srv, _ := echoServer(t, "length", `{"result":1}`)
	res, err := Run(Config{Addr: strings.TrimPrefix(srv.URL, "http://"), Conns: 2, Duration: 200 * time.Millisecond,
		Bodies: [][]byte{[]byte(`{}`)}, Check: CheckCalls(1)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Errors != 0 {
		t.Fatalf("result %+v", res)
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for q, want := range map[float64]time.Duration{0.5: 50, 0.99: 99, 1: 100, 0: 1} {
		if got := Percentile(d, q); got != want {
			t.Errorf("percentile(%v) = %v, want %v", q, got, want)
		}
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("percentile of nothing should be 0")
	}
}

// A paced connection waits Think after each answer: over 300 ms with a
// 100 ms pause, two connections send at most 2 × (300/100 + 1) requests
// (a slow machine only sends fewer); back to back they send hundreds.
func TestRunLoadThink(t *testing.T) {
	srv, served := echoServer(t, "length", `{"result":1}`)
	res, err := Run(Config{Addr: strings.TrimPrefix(srv.URL, "http://"), Conns: 2, Duration: 300 * time.Millisecond,
		Bodies: [][]byte{[]byte(`{}`)}, Check: CheckCalls(1), Think: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Requests > 8 || res.Errors != 0 || served.Load() != res.Requests {
		t.Fatalf("paced run: %d requests (%d served), %d errors; want 1-8", res.Requests, served.Load(), res.Errors)
	}
}
