//go:build linux

package main

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/preconf/preconf/internal/threadsched"
)

// policies counts the scheduling policies of a process's threads.
func policies(t *testing.T, pid int) map[int]int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		if p, err := threadsched.Policy(tid); err == nil {
			got[p]++
		}
	}
	return got
}

func TestSchedBatchFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, unix.SCHED_BATCH}, // the default
		{[]string{"--sched.batch=false"}, unix.SCHED_NORMAL},
	} {
		p := start(t, append([]string{"--datadir", t.TempDir(), "--block-time", "0"}, tc.args...)...)
		post(t, p.url, `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`) // serving: its threads have started
		got := policies(t, p.cmd.Process.Pid)
		p.stop(t)
		if len(got) != 1 || got[tc.want] < 2 {
			t.Errorf("%v: thread policies %v (policy: count), want all %d", tc.args, got, tc.want)
		}
	}
}
