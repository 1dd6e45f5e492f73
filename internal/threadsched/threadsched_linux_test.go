//go:build linux

package threadsched

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The main thread never exits (the runtime parks it when a goroutine locked
// to it ends), so it is kept for the main goroutine: onThread's goroutines
// then always get a thread that exits with them.
func init() { runtime.LockOSThread() }

// onThread runs fn on a thread of its own, which ends with it (a goroutine
// that exits locked takes its thread along): settings made there do not
// outlive the test. fn runs off the test's goroutine, so it reports with
// t.Error and returns, never t.Fatal.
func onThread(t *testing.T, fn func(tid int)) {
	t.Helper()
	done := make(chan int)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits
		tid := unix.Gettid()
		defer func() { done <- tid }()
		fn(tid)
	}()
	// The thread exits after its goroutine: wait until it is gone, so that
	// a later walk over the threads does not meet it.
	task := "/proc/self/task/" + strconv.Itoa(<-done)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(task); errors.Is(err, fs.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there 10 s after its goroutine ended", task)
		}
	}
}

// restore puts every thread back under SCHED_OTHER, and checks it did.
func restore(t *testing.T) {
	t.Helper()
	if err := Batch(false); err != nil {
		t.Fatal(err)
	}
	Each(func(tid int) error {
		if p := policyOf(t, tid); p != unix.SCHED_NORMAL {
			t.Errorf("thread %d: policy %d after Batch(false)", tid, p)
		}
		return nil
	})
}

// policyOf is thread tid's policy, -1 (matching none) after reporting an
// error; callable from onThread's fn.
func policyOf(t *testing.T, tid int) int {
	t.Helper()
	p, err := Policy(tid)
	if err != nil {
		t.Errorf("policy of %d: %v", tid, err)
		return -1
	}
	return p
}

func TestBatchEveryThreadAndLaterOnes(t *testing.T) {
	defer restore(t)
	// Threads parked in the runtime, so that there are several to set.
	release := make(chan struct{})
	for range 4 {
		go func() { runtime.LockOSThread(); <-release; runtime.UnlockOSThread() }()
	}
	defer close(release)
	if err := Batch(true); err != nil {
		t.Fatal(err)
	}
	seen := 0
	if err := Each(func(tid int) error {
		seen++
		if p := policyOf(t, tid); p != unix.SCHED_BATCH {
			t.Errorf("thread %d: policy %d, want SCHED_BATCH", tid, p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if seen < 2 {
		t.Fatalf("saw %d threads", seen)
	}
	// A thread started afterwards inherits the policy from its creator.
	before := map[int]bool{}
	Each(func(tid int) error { before[tid] = true; return nil })
	started := false
	for range 8 {
		onThread(t, func(tid int) {
			if before[tid] {
				return
			}
			started = true
			if p := policyOf(t, tid); p != unix.SCHED_BATCH {
				t.Errorf("new thread %d: policy %d, want SCHED_BATCH", tid, p)
			}
		})
	}
	if !started {
		t.Fatal("no new thread was started")
	}
}

func TestBatchKeepsOtherPoliciesAndNice(t *testing.T) {
	defer restore(t)
	onThread(t, func(tid int) {
		if err := setPolicy(tid, unix.SCHED_IDLE); err != nil {
			t.Error(err)
			return
		}
		if err := Batch(true); err != nil {
			t.Error(err)
			return
		}
		if p := policyOf(t, tid); p != unix.SCHED_IDLE {
			t.Errorf("SCHED_IDLE thread: policy %d after Batch", p)
		}
	})
	onThread(t, func(tid int) {
		if err := unix.Setpriority(unix.PRIO_PROCESS, tid, 7); err != nil { // a thread's nice
			t.Error(err)
			return
		}
		if err := Batch(true); err != nil {
			t.Error(err)
			return
		}
		if p := policyOf(t, tid); p != unix.SCHED_BATCH {
			t.Errorf("policy %d, want SCHED_BATCH", p)
		}
		// getpriority's raw value is 20 - nice.
		if n, err := unix.Getpriority(unix.PRIO_PROCESS, tid); err != nil || 20-n != 7 {
			t.Errorf("nice %d (%v), want 7", 20-n, err)
		}
	})
}

func TestEachSeesTheCallingThread(t *testing.T) {
	onThread(t, func(me int) {
		found := false
		if err := Each(func(tid int) error { found = found || tid == me; return nil }); err != nil {
			t.Error(err)
			return
		}
		if !found {
			t.Errorf("thread %d not visited", me)
		}
	})
}
