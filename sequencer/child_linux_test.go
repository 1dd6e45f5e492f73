package sequencer

import "syscall"

// childAttr makes a child process die with the test process (Linux's
// parent-death signal), so that a failed or killed test leaves no node behind.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
