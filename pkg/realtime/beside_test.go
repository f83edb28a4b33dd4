package realtime_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/udsproject/uds/pkg/realtime"
)

// Beside hands every request to its handler with the path as it was
// sent: a path of an empty segment or of dots is the API's to answer
// (400 for an empty namespace, the item "."), where an http.ServeMux
// answered 307 to the cleaned path, and a client following it deleted
// t/victim for t//victim.
func TestBesideLeavesPathsAsSent(t *testing.T) {
	var got []string
	record := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = append(got, name+" "+r.URL.Path)
			w.WriteHeader(http.StatusNoContent)
		})
	}
	srv := httptest.NewServer(realtime.Beside(record("upgrades"), record("api")))
	t.Cleanup(srv.Close)
	want := []string{}
	for _, tc := range []struct{ path, handler string }{
		{"/rest/api/v1/data/a/t//victim", "api"},
		{"/rest/api/v1/data/a/t/.", "api"},
		{"/rest/api/v1/data/a/t/../x", "api"},
		{realtime.Path, "upgrades"},
		{realtime.Path + "/", "api"},
	} {
		req, err := http.NewRequest(http.MethodDelete, srv.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNoContent {
			t.Errorf("DELETE %s answered %d (%s)", tc.path, res.StatusCode, res.Header.Get("Location"))
		}
		want = append(want, tc.handler+" "+tc.path)
	}
	if len(got) != len(want) {
		t.Fatalf("handled %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d handled as %q, want %q", i, got[i], want[i])
		}
	}
}
