package main

import "syscall"

// stopWithParent has a server sent SIGTERM when the benchmark dies,
// however it dies, so that none is left running.
func stopWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
