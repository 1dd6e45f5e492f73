//go:build linux

package threadsched

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Each calls fn with the id of every thread of this process. It goes over
// /proc/self/task until a pass finds no thread it has not seen (the runtime
// may start one meanwhile); a thread that ended before fn reached it
// (ESRCH) is skipped.
func Each(fn func(tid int) error) error {
	done := map[int]bool{}
	for pass := 0; pass < 10; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("threadsched: %w", err)
		}
		fresh := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := fn(tid); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("threadsched: thread %d: %w", tid, err)
			}
			done[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
	return errors.New("threads: threads kept appearing")
}

// Batch(true) moves every thread of this process that runs under the
// default policy (SCHED_OTHER) to SCHED_BATCH, and Batch(false) moves those
// under SCHED_BATCH back; threads under another policy (an operator's chrt)
// keep theirs, and nice values are unchanged. Under SCHED_BATCH a thread
// that wakes up does not preempt the one running on its CPU (sched(7):
// "without interactivity causing extra preemptions (between the workload's
// tasks)"). Go wakes a parked thread whenever a goroutine is made ready
// while a P is idle; Linux may queue it on the waker's CPU, and there it
// preempted the waker, a thread in the middle of a request, which then
// waited while the other CPU sat idle (perf sched; docs/bench.md,
// "Wake-up preemption").
func Batch(on bool) error {
	from, to := unix.SCHED_NORMAL, unix.SCHED_BATCH
	if !on {
		from, to = to, from
	}
	// A thread the runtime was creating while its creator was moved took
	// the creator's old policy, and may show up only after Each's last
	// pass; so walk again until a walk moves nothing.
	for walk := 0; walk < 10; walk++ {
		moved := false
		if err := Each(func(tid int) error {
			p, err := Policy(tid)
			if err != nil || p != from {
				return err
			}
			moved = true
			return setPolicy(tid, to)
		}); err != nil || !moved {
			return err
		}
	}
	return errors.New("threads: threads kept escaping the policy")
}

// Policy is the scheduling policy of thread tid (unix.SCHED_*).
func Policy(tid int) (int, error) {
	p, _, errno := unix.RawSyscall(unix.SYS_SCHED_GETSCHEDULER, uintptr(tid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(p), nil
}

// setPolicy sets thread tid's policy, one without a static priority
// (SCHED_OTHER, SCHED_BATCH, SCHED_IDLE). sched_setscheduler, unlike
// sched_setattr, leaves the nice value alone.
func setPolicy(tid, policy int) error {
	var param struct{ priority int32 }
	_, _, errno := unix.RawSyscall(unix.SYS_SCHED_SETSCHEDULER, uintptr(tid), uintptr(policy), uintptr(unsafe.Pointer(&param)))
	if errno != 0 {
		return errno
	}
	return nil
}
