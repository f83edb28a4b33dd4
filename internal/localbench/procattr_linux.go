package localbench

import "syscall"

// stopWithParent has a server sent SIGTERM when the benchmark that started
// it dies, however it dies, so that none is left running.
func stopWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
