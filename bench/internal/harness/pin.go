package harness

// -pin: the load generator and the node under test on separate CPUs.
//
// By default the generator (this process) and the node share every core, so
// a request's measured latency includes the time either side's threads wait
// for a core the other holds, and a faster node makes the generator busier
// and that wait longer. On the 2-CPU machine of docs/bench.md (3 rounds of
// 3 s, 32 connections), eth_getBalance at pending against preconf measured
// p99 2.6–3.8 ms shared and 0.9–1.0 ms with the generator on CPU 0 and the
// node on CPU 1 (anvil: 1.4–1.6 ms shared, 1.2–2.1 ms pinned); under
// eth_blockNumber, perf sched showed 1.3 % of the node's and of the
// generator's wake-ups waiting over 1 ms for a core (0.3 % with anvil).
// Pinning separates the two as a second machine would, at the price of
// fewer cores for the node.

import (
	"os/exec"
	"strconv"
	"strings"
)

// The layout itself (pinLayout: which CPUs, and moving this process's
// threads) is Linux's, pin_linux.go; elsewhere -pin reports that it cannot
// pin (pin_other.go).

// splitCPUs gives the first quarter of cpus (at least one) to the generator
// and the rest, as taskset's list, to the nodes (len(cpus) >= 2).
func splitCPUs(cpus []int) (gen []int, nodes string) {
	n := max(1, len(cpus)/4)
	list := make([]string, 0, len(cpus)-n)
	for _, c := range cpus[n:] {
		list = append(list, strconv.Itoa(c))
	}
	return cpus[:n], strings.Join(list, ",")
}

// PinnedCommand is the node's command line, under taskset when pinned
// (taskset sets its own affinity and execs the node: every thread the node
// starts inherits it, and the pid stays the node's).
func PinnedCommand(cpus, bin string, args []string) *exec.Cmd {
	if cpus == "" {
		return exec.Command(bin, args...)
	}
	return exec.Command("taskset", append([]string{"-c", cpus, bin}, args...)...)
}

// PinIf, when pin is set, pins this process for a measurement, has e start
// nodes on the other CPUs and writes the layout for the report; restore
// undoes it (a no-op when not pinned). Call it after every node is built or
// installed (a build would otherwise inherit one CPU).
func PinIf(pin bool, e *Env, layout *string) (restore func(), err error) {
	if !pin {
		return func() {}, nil
	}
	l, err := newPinLayout()
	if err != nil {
		return nil, err
	}
	unpin, err := l.pinSelf()
	if err != nil {
		return nil, err
	}
	e.NodeCPUs = l.nodeCPUs
	*layout = l.describe()
	return func() { e.NodeCPUs = ""; unpin() }, nil
}
