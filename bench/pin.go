package main

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
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/preconf/preconf/internal/threads"
)

// pinLayout splits the CPUs this process may use: the first quarter (at
// least one) runs the load generator, the rest the nodes.
type pinLayout struct {
	orig, gen unix.CPUSet
	nodeCPUs  string // taskset's list form, e.g. "1" or "2,3"
}

func newPinLayout() (*pinLayout, error) {
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		return nil, fmt.Errorf("pin: %w", err)
	}
	var cpus []int
	for c := 0; c < len(orig)*64; c++ {
		if orig.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		return nil, errors.New("pin: needs at least 2 CPUs")
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return nil, fmt.Errorf("pin: taskset (util-linux) not found: %w", err)
	}
	gen, nodes := splitCPUs(cpus)
	l := &pinLayout{orig: orig, nodeCPUs: nodes}
	for _, c := range gen {
		l.gen.Set(c)
	}
	return l, nil
}

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

// describe is the layout for the report.
func (l *pinLayout) describe() string {
	var gen []string
	for c := 0; c < len(l.gen)*64; c++ {
		if l.gen.IsSet(c) {
			gen = append(gen, strconv.Itoa(c))
		}
	}
	return fmt.Sprintf("load generator on CPU %s, nodes on CPU %s", strings.Join(gen, ","), l.nodeCPUs)
}

// pinSelf moves every thread of this process onto the generator's CPUs (a
// thread's affinity is its own; threads created later inherit their
// creator's) and sizes GOMAXPROCS to them. The returned function undoes
// both, so that builds and later parts get every core back.
func (l *pinLayout) pinSelf() (restore func(), err error) {
	procs := runtime.GOMAXPROCS(0)
	if err := setAllThreads(&l.gen); err != nil {
		setAllThreads(&l.orig)
		return nil, err
	}
	runtime.GOMAXPROCS(l.gen.Count())
	return func() {
		runtime.GOMAXPROCS(procs)
		setAllThreads(&l.orig)
	}, nil
}

// setAllThreads sets the affinity of every thread of this process.
func setAllThreads(set *unix.CPUSet) error {
	if err := threads.Each(func(tid int) error { return unix.SchedSetaffinity(tid, set) }); err != nil {
		return fmt.Errorf("pin: %w", err)
	}
	return nil
}

// pinnedCommand is the node's command line, under taskset when pinned
// (taskset sets its own affinity and execs the node: every thread the node
// starts inherits it, and the pid stays the node's).
func pinnedCommand(cpus, bin string, args []string) *exec.Cmd {
	if cpus == "" {
		return exec.Command(bin, args...)
	}
	return exec.Command("taskset", append([]string{"-c", cpus, bin}, args...)...)
}

// pinIf, when pin is set, pins this process for a measurement, has e start
// nodes on the other CPUs and writes the layout for the report; restore
// undoes it (a no-op when not pinned). Call it after every node is built or
// installed (a build would otherwise inherit one CPU).
func pinIf(pin bool, e *env, layout *string) (restore func(), err error) {
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
	e.nodeCPUs = l.nodeCPUs
	*layout = l.describe()
	return func() { e.nodeCPUs = ""; unpin() }, nil
}
