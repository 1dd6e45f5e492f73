package main

import (
	"testing"
	"time"
)

// TestMergeWindows: two halves of an A B B A sequence give the percentiles
// of every answer together, the rate over their summed time and the CPU
// per request over their summed CPU; one window without a CPU figure makes
// the merged one unknown (0) rather than wrong.
func TestMergeWindows(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	// 100 fast answers in a fast window, 100 slow ones in a slow window.
	fast, slow := make([]int, 100), make([]int, 100)
	for i := range fast {
		fast[i], slow[i] = 1, 3
	}
	slow[99] = 9
	a := window{lats: ms(fast...), elapsed: time.Second, clientCPU: 100 * time.Millisecond, serverCPU: 200 * time.Millisecond}
	b := window{lats: ms(slow...), elapsed: 3 * time.Second, clientCPU: 300 * time.Millisecond, serverCPU: 600 * time.Millisecond,
		errors: 2, firstErr: "boom"}
	got := mergeWindows(a, b)
	want := loadResult{Requests: 200, Errors: 2, FirstError: "boom", Elapsed: 4 * time.Second, RPS: 50,
		P50: time.Millisecond, P90: 3 * time.Millisecond, P99: 3 * time.Millisecond, Max: 9 * time.Millisecond,
		ClientCPU: 2 * time.Millisecond, ServerCPU: 4 * time.Millisecond}
	if got != want {
		t.Errorf("merged\n%+v\nwant\n%+v", got, want)
	}
	b.serverCPU = -1
	if got := mergeWindows(a, b); got.ServerCPU != 0 || got.ClientCPU != 2*time.Millisecond {
		t.Errorf("a window without the node's CPU: ServerCPU %v ClientCPU %v, want 0 and 2ms", got.ServerCPU, got.ClientCPU)
	}
	if got := mergeWindows(a); got.P99 != time.Millisecond || got.RPS != 100 || got.ServerCPU != 2*time.Millisecond {
		t.Errorf("one window: %+v", got)
	}
}
