package harness

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/preconf/preconf/internal/threadsched"
)

// TestPinSelf checks that every thread of the process moves onto the
// generator's CPUs, that a node started meanwhile runs on the others, and
// that restoring gives the threads their CPUs back.
func TestPinSelf(t *testing.T) {
	l, err := newPinLayout()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot pin: %v", err)
		}
		t.Skipf("cannot pin here: %v", err) // fewer than 2 CPUs or no taskset
	}
	procs := runtime.GOMAXPROCS(0)
	restore, err := l.pinSelf()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restore) // again after the check below: harmless, and sure on failure
	if got := runtime.GOMAXPROCS(0); got != l.gen.Count() {
		t.Errorf("GOMAXPROCS pinned = %d, want %d", got, l.gen.Count())
	}
	for tid, set := range threadAffinities(t) {
		if set != l.gen {
			t.Errorf("thread %d pinned: CPUs %v, want the generator's", tid, set)
		}
	}
	out, err := PinnedCommand(l.nodeCPUs, "grep", []string{"Cpus_allowed_list", "/proc/self/status"}).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := cpuList(t, strings.TrimPrefix(strings.TrimSpace(string(out)), "Cpus_allowed_list:")); !slices.Equal(got, cpuList(t, l.nodeCPUs)) {
		t.Errorf("node's CPUs = %v, want %s", got, l.nodeCPUs)
	}
	restore()
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS restored = %d, want %d", got, procs)
	}
	for tid, set := range threadAffinities(t) {
		if set != l.orig {
			t.Errorf("thread %d restored: CPUs %v, want the original", tid, set)
		}
	}
	if cmd := PinnedCommand("", "true", nil); cmd.Path != mustLook(t, "true") {
		t.Errorf("unpinned command runs %s, want true itself", cmd.Path)
	}
}

func threadAffinities(t *testing.T) map[int]unix.CPUSet {
	t.Helper()
	m := map[int]unix.CPUSet{}
	if err := threadsched.Each(func(tid int) error {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err == nil {
			m[tid] = set
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

func mustLook(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// cpuList parses a CPU list such as "1,3-5".
func cpuList(t *testing.T, s string) []int {
	t.Helper()
	var cpus []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, ok := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			t.Fatalf("CPU list %q: %v", s, err)
		}
		b := a
		if ok {
			if b, err = strconv.Atoi(hi); err != nil {
				t.Fatalf("CPU list %q: %v", s, err)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus
}
