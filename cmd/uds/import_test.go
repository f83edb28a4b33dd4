package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// lambdaBodyBytes is what a request body takes inside the Lambda event: a
// compressed (binary) body goes base64 encoded, any other as a JSON
// string, with every quote and backslash escaped once more.
func lambdaBodyBytes(body []byte, coding string) int {
	if coding == "gzip" {
		return base64.StdEncoding.EncodedLen(len(body))
	}
	s, _ := json.Marshal(string(body))
	return len(s)
}

// lambdaBodyLimit is Lambda's 6 MB request (6,291,456 bytes) less room for
// the event's headers and request context.
const lambdaBodyLimit = 6_000_000

// TestImportRequestsFitLambda imports records whose JSON would pass
// Lambda's request limit once escaped into the event (values of quotes,
// each escaped again), and records that barely compress (random text),
// and checks every import request as it would reach Lambda.
func TestImportRequestsFitLambda(t *testing.T) {
	t.Parallel()
	target, err := url.Parse(apitest.Server(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	var sizes []int // of the import requests' bodies in the event
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/import") {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			sizes = append(sizes, lambdaBodyBytes(body, r.Header.Get("Content-Encoding")))
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()

	random := func(n int) string {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return base64.StdEncoding.EncodeToString(b)
	}
	for _, tc := range []struct {
		name    string
		records int
		// data is record i's value, a JSON string.
		data func(i int) string
	}{
		// 800 KB of JSON each that the event would carry as 1.6 MB:
		// five of them, 4 MB of JSON, took 8 MB there.
		{"quotes", 6, func(int) string { return `"` + strings.Repeat(`\"`, 400_000) + `"` }},
		// 300 KB each (what a stored item can hold of random text):
		// gzip saves a quarter, and base64 takes it back.
		{"random text", 16, func(int) string { return `"` + random(225_000) + `"` }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			sizes = nil
			mu.Unlock()
			var in strings.Builder
			for i := range tc.records {
				fmt.Fprintf(&in, `{"namespace":%q,"id":"r%d","owner":"alice","data":%s,"createdBySubject":"alice","updatedBySubject":"alice","version":1}`+"\n",
					strings.ReplaceAll(tc.name, " ", "-"), i, tc.data(i))
			}
			code, out, errOut := uds(t, srv.URL, in.String(), "import", app)
			if code != 0 || !strings.Contains(out, fmt.Sprintf(`{"imported":%d,`, tc.records)) {
				t.Fatalf("import: exit %d, %q, stderr %q", code, out, errOut)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(sizes) < 2 {
				t.Errorf("%d import requests, want the records split over several", len(sizes))
			}
			for i, n := range sizes {
				if n > lambdaBodyLimit {
					t.Errorf("import request %d takes %d bytes of the Lambda event, more than %d", i, n, lambdaBodyLimit)
				}
			}
			t.Logf("bodies in the event: %v bytes", sizes)
		})
	}
}

// TestImportSays checks what uds import tells on standard error: how many
// records it imported, skipped as already present, found expired and
// found in conflict, not how many it sent.
func TestImportSays(t *testing.T) {
	srv := apitest.Server(t, 10*time.Second)
	record := func(id string, version int, expiresAt string) string {
		rec := fmt.Sprintf(`{"namespace":"n","id":%q,"owner":"alice","data":{"v":%d},"createdBySubject":"alice","updatedBySubject":"alice","version":%d`, id, version, version)
		if expiresAt != "" {
			rec += fmt.Sprintf(`,"expiresAt":%q`, expiresAt)
		}
		return rec + "}\n"
	}
	three := record("a", 1, "") + record("b", 1, "") + record("c", 1, "")
	large := `{"namespace":"n","id":"big","owner":"alice","contentType":"image/png","size":5000000,"large":true,"createdBySubject":"alice","updatedBySubject":"alice","version":1}` + "\n"
	for i, tc := range []struct {
		name    string
		before  string // imported first
		records string
		code    int
		says    string
	}{
		{"into an empty app", "", three, 0, "3 records: imported 3, skipped 0 already present, expired 0, conflicts 0, not imported 0\n"},
		{"the same again", three, three, 0, "3 records: imported 0, skipped 3 already present, expired 0, conflicts 0, not imported 0\n"},
		{"one of each", three, record("a", 1, "") + record("b", 2, "") + record("d", 1, "") + record("e", 1, "2001-01-01T00:00:00.000Z"), 1,
			"4 records: imported 1, skipped 1 already present, expired 1, conflicts 1, not imported 0\n"},
		// A large value's bytes are in the exporting deployment's bucket:
		// its record is left out, and the others written.
		{"a large value among them", "", record("a", 1, "") + large + record("b", 1, ""), 1,
			"3 records: imported 2, skipped 0 already present, expired 0, conflicts 0, not imported 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := fmt.Sprintf("d53065bd-f932-4841-83fb-%012d", i)
			if tc.before != "" {
				if code, _, stderr := uds(t, srv, tc.before, "import", app); code != 0 {
					t.Fatalf("importing the records before: exit %d, %s", code, stderr)
				}
			}
			code, stdout, stderr := uds(t, srv, tc.records, "import", app)
			if code != tc.code || !strings.HasPrefix(stderr, tc.says) {
				t.Errorf("exit %d, stderr %q; want %d and %q first", code, stderr, tc.code, tc.says)
			}
			if strings.Contains(tc.records, `"large":true`) && !strings.Contains(stdout, `"notImported":[{"index":1,"namespace":"n","id":"big","reason":"a large value`) {
				t.Errorf("stdout %q does not list the large value's record", stdout)
			}
		})
	}
}
