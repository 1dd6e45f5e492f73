package remote_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/preconf/preconf/remote"
)

// flaky answers eth_chainId, failing the first fails requests as fail says.
func flaky(t *testing.T, fails int, fail func(w http.ResponseWriter)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= int64(fails) {
			fail(w)
			return
		}
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x2105"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func fast(retries int) remote.Options {
	return remote.Options{Retries: retries, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
}

// Transient failures are tried again, as often as the options allow;
// anything else is not.
func TestRetries(t *testing.T) {
	status := func(code int) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) { w.Header().Set("Retry-After", "0"); w.WriteHeader(code) }
	}
	rpcErr := func(body string) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) { w.Write([]byte(body)) }
	}
	hangup := func(w http.ResponseWriter) {
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
	}
	for _, tc := range []struct {
		name      string
		fail      func(http.ResponseWriter)
		retryable bool
	}{
		{"429", status(http.StatusTooManyRequests), true},
		{"503", status(http.StatusServiceUnavailable), true},
		{"502", status(http.StatusBadGateway), true},
		{"connection closed", hangup, true},
		{"json-rpc 429", rpcErr(`{"jsonrpc":"2.0","id":1,"error":{"code":429,"message":"Your app has exceeded its compute units per second capacity"}}`), true},
		{"json-rpc -32005", rpcErr(`{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"limit exceeded"}}`), true},
		{"json-rpc rate limit text", rpcErr(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"Rate limit reached"}}`), true},
		{"404", status(http.StatusNotFound), false},
		{"json-rpc error", rpcErr(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"the method eth_chainId does not exist"}}`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, n := flaky(t, 2, tc.fail)
			c := remote.NewClientWith(srv.URL, fast(3))
			var id string
			err := c.Call(context.Background(), &id, "eth_chainId")
			if tc.retryable {
				if err != nil || id != "0x2105" || n.Load() != 3 || c.Retries.Load() != 2 {
					t.Fatalf("err %v, id %q after %d requests, %d retries; want the third to answer", err, id, n.Load(), c.Retries.Load())
				}
				return
			}
			if err == nil || n.Load() != 1 {
				t.Fatalf("err %v after %d requests; want one failed request", err, n.Load())
			}
		})
	}
}

// A client that tries once (follow mode's) does not retry; one whose retries
// run out says how often it tried.
func TestRetriesRunOut(t *testing.T) {
	srv, n := flaky(t, 100, func(w http.ResponseWriter) { w.WriteHeader(http.StatusTooManyRequests) })
	if err := remote.NewClient(srv.URL, 0).Call(context.Background(), nil, "eth_chainId"); err == nil || n.Load() != 1 {
		t.Fatalf("single try: err %v after %d requests", err, n.Load())
	}
	n.Store(0)
	err := remote.NewClientWith(srv.URL, fast(2)).Call(context.Background(), nil, "eth_chainId")
	if !errors.Is(err, remote.ErrUnavailable) || !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "after 3 tries") || n.Load() != 3 {
		t.Fatalf("err %v after %d requests", err, n.Load())
	}
}

// After a failure that used every try, calls fail at once during the
// cooldown, then reach the upstream again.
func TestCooldown(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x1"}`))
	}))
	defer srv.Close()
	o := fast(1)
	o.Cooldown = 200 * time.Millisecond
	c := remote.NewClientWith(srv.URL, o)
	if err := c.Call(context.Background(), nil, "eth_chainId"); err == nil || n.Load() != 2 {
		t.Fatalf("err %v after %d requests", err, n.Load())
	}
	start := time.Now()
	err := c.Call(context.Background(), nil, "eth_chainId")
	if !errors.Is(err, remote.ErrUnavailable) || !strings.Contains(err.Error(), "next try in") || n.Load() != 2 {
		t.Fatalf("during cooldown: err %v after %d requests", err, n.Load())
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("a call during the cooldown took %v", d)
	}
	down.Store(false)
	time.Sleep(250 * time.Millisecond)
	if err := c.Call(context.Background(), nil, "eth_chainId"); err != nil {
		t.Fatalf("after the cooldown: %v", err)
	}
}

// No more than MaxConcurrent exchanges are in flight at once.
func TestMaxConcurrent(t *testing.T) {
	var in, peak atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := in.Add(1)
		for {
			p := peak.Load()
			if v <= p || peak.CompareAndSwap(p, v) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		in.Add(-1)
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x1"}`))
	}))
	defer srv.Close()
	c := remote.NewClientWith(srv.URL, remote.Options{MaxConcurrent: 3})
	var wg sync.WaitGroup
	for range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Call(context.Background(), nil, "eth_chainId"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p != 3 {
		t.Fatalf("peak concurrency %d, want 3", p)
	}
}
