package httpapi_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// TestSubjectHeaderRefused checks the rule both hosts share: where the
// host does not take the caller from X-Uds-Subject, a request that carries
// it is refused with a 400 that says why, before anything is read or
// written; where it does, the header names the caller.
func TestSubjectHeaderRefused(t *testing.T) {
	const why = "this host takes the caller from elsewhere"
	tables := storetest.NewTables(t)
	client := storetest.Client(t)
	serve := func(subject httpapi.SubjectFunc, refuse string) *env {
		api := httpapi.New(httpapi.StoresOf(store.New(client, tables)), httpapi.GroupAll, httpapi.Config{
			Subject: subject, RefuseSubjectHeader: refuse,
			CursorSecret: []byte("identity"), DeleteAllBudget: 20 * time.Second,
		})
		srv := httptest.NewServer(api)
		t.Cleanup(srv.Close)
		return &env{t: t, srv: srv, tables: tables, client: client}
	}
	trusting := serve(httpapi.HeaderSubject, "")
	refusing := serve(httpapi.AnonymousSubject, why)
	for _, tc := range []struct {
		name                 string
		e                    *env
		method, path, body   string
		headers              []string
		wantStatus           int
		wantError, wantOwner string
	}{
		{name: "trusted: the header names the caller", e: trusting,
			method: "POST", path: base + "/identity/trusted", body: `{"data":1}`,
			headers: []string{httpapi.SubjectHeader, "alice"}, wantStatus: 201, wantOwner: "alice"},
		{name: "refused: a create", e: refusing,
			method: "POST", path: base + "/identity/refused", body: `{"data":1}`,
			headers: []string{httpapi.SubjectHeader, "alice"}, wantStatus: 400, wantError: "Subject header not trusted"},
		{name: "refused: an empty header still names someone", e: refusing,
			method: "POST", path: base + "/identity/refused", body: `{"data":1}`,
			headers: []string{httpapi.SubjectHeader, ""}, wantStatus: 400, wantError: "Subject header not trusted"},
		{name: "refused: an admin route", e: refusing,
			method: "GET", path: "/rest/api/v1/admin/apps/" + app + "/users",
			headers: []string{httpapi.SubjectHeader, "alice"}, wantStatus: 400, wantError: "Subject header not trusted"},
		{name: "refused: a batch, whatever its operations", e: refusing,
			method: "POST", path: base + "/batch", body: `{"operations":[{"method":"GET","path":"identity/refused"}]}`,
			headers: []string{httpapi.SubjectHeader, "alice"}, wantStatus: 400, wantError: "Subject header not trusted"},
		{name: "refused: an unknown path is still a 404", e: refusing,
			method: "GET", path: "/rest/api/v1/nowhere",
			headers: []string{httpapi.SubjectHeader, "alice"}, wantStatus: 404, wantError: "Route not found"},
		{name: "without the header the host's caller", e: refusing,
			method: "POST", path: base + "/identity/anonymous", body: `{"data":1}`, wantStatus: 201, wantOwner: "anonymous"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.e.do(tc.method, tc.path, tc.body, tc.headers...).expect(t, tc.wantStatus)
			if tc.wantError != "" && (r.body["error"] != tc.wantError || r.body["timestamp"] == nil) {
				t.Errorf("body %s, want error %q", r.raw, tc.wantError)
			}
			if tc.wantStatus == 400 && r.body["details"] != why {
				t.Errorf("details %v, want the host's %q", r.body["details"], why)
			}
			if tc.wantOwner != "" && r.body["createdBySubject"] != tc.wantOwner {
				t.Errorf("createdBySubject %v, want %q", r.body["createdBySubject"], tc.wantOwner)
			}
		})
	}
	// Nothing the refused requests named was written.
	trusting.do("GET", base+"/identity/refused", "").expect(t, 404)
}
