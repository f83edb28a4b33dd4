//go:build !linux

package localbench

import "syscall"

// stopWithParent: only Linux can have a child signalled when its parent
// dies; elsewhere a benchmark stops its servers itself on return and on
// Ctrl-C.
func stopWithParent() *syscall.SysProcAttr { return nil }
