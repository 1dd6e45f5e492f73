//go:build !linux

package clients_test

import "syscall"

// childAttr: only Linux has a parent-death signal; elsewhere the test's own
// cleanup stops the child.
func childAttr() *syscall.SysProcAttr { return nil }
