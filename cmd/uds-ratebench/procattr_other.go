//go:build !linux

package main

import "syscall"

// stopWithParent: only Linux can have a child signalled when its parent
// dies; elsewhere the benchmark stops its servers itself on return and on
// Ctrl-C.
func stopWithParent() *syscall.SysProcAttr { return nil }
