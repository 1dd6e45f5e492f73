package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"

	"github.com/urfave/cli/v2"
)

// The GC's pacing. Go sets the next collection at the live heap times
// (1 + GOGC/100). A node serving a small state has a live heap of a few MB,
// so at the default target it collected 20 times a second under the
// eth_simulateV1 bench load (each cycle with two stop-the-world pauses and a
// mark phase that takes a quarter of the CPU plus assists from the
// allocating requests). --gc.min-heap keeps the goal at no less than a
// floor: below it the target is raised so that the heap may grow to the
// floor first; above it --gc.percent applies unchanged, so a large state
// costs no more memory than before. GOMEMLIMIT, when set, still caps the
// heap. The figures behind the defaults are in docs/bench.md ("What the
// profile showed and what changed").
var gcFlags = []cli.Flag{
	&cli.IntFlag{Name: "gc.percent", Value: defaultGCPercent, Usage: "Go GC target (as GOGC; -1 = off): executions allocate a lot of short-lived objects, and a higher target trades some memory for throughput (the GOGC environment variable wins unless this flag is given)", EnvVars: envName("gc.percent")},
	&cli.Uint64Flag{Name: "gc.min-heap", Value: defaultMinHeap, Usage: "heap size (bytes) below which the GC does not collect: the target is raised while the live heap is small (0 = off; ignored when the GC is off)", EnvVars: envName("gc.min-heap")},
}

// defaultGCPercent: with Go's default of 100, collection took about a
// quarter of the CPU of an eth_simulateV1 (measured with the bench
// workloads); at 400 it is a few percent, for a heap a few times the live
// one (tens of MB here).
const defaultGCPercent = 400

// defaultMinHeap: 128 MiB, the heap one request per second of bench load
// leaves to collect at most a few times a second.
const defaultMinHeap = 128 << 20

// applyGCFlags sets the GC target and starts the heap floor.
func applyGCFlags(c *cli.Context) {
	percent := c.Int("gc.percent")
	if !c.IsSet("gc.percent") && os.Getenv("GOGC") != "" {
		percent = debug.SetGCPercent(-1) // read the environment's value…
		debug.SetGCPercent(percent)      // …and keep it
	}
	debug.SetGCPercent(percent)
	if floor := c.Uint64("gc.min-heap"); floor > 0 && percent >= 0 {
		startHeapFloor(percent, floor)
	}
}

var heapFloorOnce sync.Once

// startHeapFloor re-targets the GC after every collection (one per process).
func startHeapFloor(percent int, floor uint64) {
	heapFloorOnce.Do(func() {
		f := &heapFloor{percent: percent, floor: floor, set: percent,
			live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
		f.adjust()
		f.arm()
	})
}

type heapFloor struct {
	percent, set int
	floor        uint64
	live         []metrics.Sample
	stopped      atomic.Bool // tests: no further adjustment
}

// gcSentinel is allocated to learn that a collection happened: its cleanup
// runs after the cycle that found it unreachable (it holds a pointer and
// is not tiny, so the tiny allocator does not keep it alive).
type gcSentinel struct{ _ [8]*byte }

func (f *heapFloor) arm() {
	runtime.AddCleanup(new(gcSentinel), func(f *heapFloor) {
		if !f.stopped.Load() {
			f.adjust()
			f.arm()
		}
	}, f)
}

// adjust sets the target for the next cycle from the heap the last one
// found live.
func (f *heapFloor) adjust() {
	metrics.Read(f.live)
	want := f.target(f.live[0].Value.Uint64())
	if want != f.set {
		debug.SetGCPercent(want)
		f.set = want
	}
}

// target is the GC percent whose goal for a live heap is the floor, or
// the configured percent when that goal is already above it.
func (f *heapFloor) target(live uint64) int {
	const maxPercent = 1 << 20 // a live heap of a few KB: do not overflow
	if live == 0 {
		return f.percent
	}
	if goal := live + live/100*uint64(f.percent); goal >= f.floor {
		return f.percent
	}
	return int(min((f.floor-live)*100/live, maxPercent))
}
