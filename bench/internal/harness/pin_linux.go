package harness

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/preconf/preconf/internal/threadsched"
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
	if err := threadsched.Each(func(tid int) error { return unix.SchedSetaffinity(tid, set) }); err != nil {
		return fmt.Errorf("pin: %w", err)
	}
	return nil
}
