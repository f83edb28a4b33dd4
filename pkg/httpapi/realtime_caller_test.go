package httpapi_test

import (
	"net/http/httptest"
	"testing"

	"github.com/udsproject/uds/pkg/httpapi"
)

// TestRealtimeCallerAsTheHeaderNamesIt checks that the subject query
// parameter of a local realtime upgrade names the caller the
// X-Uds-Subject header would: spaces and tabs around it go, as around a
// header's value.
func TestRealtimeCallerAsTheHeaderNamesIt(t *testing.T) {
	api := httpapi.New(httpapi.Stores{}, httpapi.GroupAll, httpapi.Config{Subject: httpapi.HeaderSubject, CursorSecret: []byte("test secret")})
	for _, q := range []string{"alice", "alice%20", "%20alice%09"} {
		got, err := api.RealtimeCaller(httptest.NewRequest("GET", "/rest/api/v1/realtime?subject="+q, nil))
		if err != nil || got != "alice" {
			t.Errorf("?subject=%s names %q, %v; want alice", q, got, err)
		}
	}
}
