package httpapi

import (
	"net/http"
	"testing"

	"github.com/udsproject/uds/pkg/uds"
)

// TestErrorCodesHaveStatuses checks that statusOf gives every code a
// status, and no code that uds does not declare: an error of a code left
// out would be answered with status 0.
func TestErrorCodesHaveStatuses(t *testing.T) {
	for _, c := range uds.Codes() {
		if s := statusOf[c]; http.StatusText(s) == "" || s < 400 {
			t.Errorf("code %q has status %d", c, s)
		}
	}
	if len(statusOf) != len(uds.Codes()) {
		t.Errorf("statusOf maps %d codes, uds declares %d", len(statusOf), len(uds.Codes()))
	}
}
