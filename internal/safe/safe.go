// Package safe turns a panic into an error, so that one bad request, or one
// goroutine serving it, fails on its own instead of ending the process:
// on Lambda an unrecovered panic ends the execution environment (the
// runtime reports it and exits), and every request it would have served
// next pays a cold start.
package safe

import (
	"fmt"
	"net/http"
	"runtime/debug"
)

// PanicError is a recovered panic: its value and the stack where it was
// raised, for the log only.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Call runs fn and returns the panic it raised, if any, as a *PanicError.
// http.ErrAbortHandler, which net/http raises on purpose to abort a
// response, goes on up.
func Call(fn func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	fn()
	return nil
}
