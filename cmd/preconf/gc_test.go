package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestHeapFloorTarget(t *testing.T) {
	f := &heapFloor{percent: 400, floor: 128 << 20}
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 400},        // nothing measured yet
		{6 << 20, 2033}, // 6 MiB live: the goal is the floor (6 + 6×20.33 ≈ 128 MiB)
		{32 << 20, 400}, // 32 × 5 MiB is above the floor: never lowered
		{25 << 20, 412}, // just above the configured target
		{26 << 20, 400}, // 26 × 5 = 130 MiB ≥ floor: unchanged
		{1 << 30, 400},  // a large state: unchanged
		{100, 1 << 20},  // a few bytes: capped
	} {
		if got := f.target(tc.live); got != tc.want {
			t.Errorf("live %d: target %d, want %d", tc.live, got, tc.want)
		}
	}
}

// After a collection the floor's cleanup raises the target of a small heap.
func TestHeapFloorRetargets(t *testing.T) {
	old := debug.SetGCPercent(100)
	f := &heapFloor{percent: 100, set: 100, floor: 1 << 40, live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}} // a floor no test heap reaches
	defer func() {
		f.stopped.Store(true)
		debug.SetGCPercent(old)
	}()
	f.arm()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // the cleanup runs after the cycle
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		if p > 100 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GC percent still %d after collections", p)
		}
	}
}
