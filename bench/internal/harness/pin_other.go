//go:build !linux

package harness

import "errors"

// pinLayout is Linux's (pin_linux.go): CPU affinity is set through
// sched_setaffinity and taskset, which other systems do not have.
type pinLayout struct{ nodeCPUs string }

func newPinLayout() (*pinLayout, error) {
	return nil, errors.New("pin: -pin needs Linux (sched_setaffinity and taskset)")
}

func (l *pinLayout) describe() string                     { return "" }
func (l *pinLayout) pinSelf() (restore func(), err error) { return func() {}, nil }
