package harness

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWaitReady: startNode's wait for a Ready path (preconf's /readyz on a
// reused datadir whose state snapshot is being generated again).
func TestWaitReady(t *testing.T) {
	tests := []struct {
		name     string
		ready    string // the kind's Ready path
		notReady int64  // 503 answers before the first 200 (-1: never 200)
		exited   bool   // the process has ended
		wantErr  string
	}{
		{name: "no ready path", ready: ""},
		{name: "ready at once", ready: "/readyz"},
		{name: "ready after three 503s", ready: "/readyz", notReady: 3},
		{name: "never ready", ready: "/readyz", notReady: -1, wantErr: "not 200 within"},
		{name: "exited", ready: "/readyz", notReady: -1, exited: true, wantErr: "exited before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/readyz" {
					http.NotFound(w, r)
					return
				}
				if n := calls.Add(1); tt.notReady < 0 || n <= tt.notReady {
					http.Error(w, "not ready", http.StatusServiceUnavailable)
				}
			}))
			defer srv.Close()
			n := &Node{Kind: Kind{Ready: tt.ready}, Addr: strings.TrimPrefix(srv.URL, "http://"), done: make(chan struct{}), Startup: time.Millisecond}
			if tt.exited {
				close(n.done)
			}
			err := n.waitReady(time.Now(), time.Second)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.ready == "" && (n.UntilReady != n.Startup || calls.Load() != 0):
				t.Fatalf("ready %s after %d calls, want the start-up and no call", n.UntilReady, calls.Load())
			case tt.ready != "" && calls.Load() != tt.notReady+1:
				t.Fatalf("%d calls, want %d", calls.Load(), tt.notReady+1)
			case tt.notReady > 0 && n.UntilReady < time.Duration(tt.notReady)*100*time.Millisecond:
				t.Fatalf("ready %s after %d 503s polled every 100 ms", n.UntilReady, tt.notReady)
			}
		})
	}
}
