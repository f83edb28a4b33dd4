package safe_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/udsproject/uds/internal/safe"
)

func TestCall(t *testing.T) {
	t.Run("no panic", func(t *testing.T) {
		if err := safe.Call(func() {}); err != nil {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a panic becomes an error with its stack", func(t *testing.T) {
		err := safe.Call(func() {
			var m map[string]int
			m["x"] = 1
		})
		var p *safe.PanicError
		if !errors.As(err, &p) {
			t.Fatalf("got %v, want a *PanicError", err)
		}
		if !strings.Contains(err.Error(), "assignment to entry in nil map") || !strings.Contains(string(p.Stack), "safe_test.go") {
			t.Errorf("error %q, stack %s", err, p.Stack)
		}
	})
	t.Run("http.ErrAbortHandler goes on up", func(t *testing.T) {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler", v)
			}
		}()
		_ = safe.Call(func() { panic(http.ErrAbortHandler) })
		t.Error("Call returned")
	})
}
