package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

func TestHistoryCommands(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	// The namespace keeps up to 10 versions of each item.
	if status := putPolicy(t, srv, app, "hist", `{"access":"shared","history":{"versions":10}}`); status != http.StatusOK {
		t.Fatalf("setting the history policy answered %d", status)
	}
	var written []map[string]any
	for i, args := range [][]string{
		{"create", app, "hist", "doc", "--data", `{"n":1}`},
		{"put", app, "hist", "doc", "--data", `{"n":2}`},
		{"put", app, "hist", "doc", "--data", `{"n":3}`},
	} {
		code, out, errOut := uds(t, srv, "", append([]string{"--subject", "alice"}, args...)...)
		var it map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &it) != nil {
			t.Fatalf("write %d: %d %q %s", i+1, code, out, errOut)
		}
		written = append(written, it)
	}
	code, out, _ := uds(t, srv, "", "history", app, "hist", "doc")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.Contains(lines[0], `"version":3,`) || !strings.Contains(lines[0], `"current":true`) ||
		!strings.Contains(lines[2], `"version":1,`) || !strings.Contains(lines[2], `"updatedBySubject":"alice"`) {
		t.Fatalf("history: %d %q", code, out)
	}
	if code, out, _ := uds(t, srv, "", "get", app, "hist", "doc", "--version", "1"); code != 0 || !strings.Contains(out, `"data":{"n":1}`) || !strings.Contains(out, `"etag":`+mustJSON(t, written[0]["etag"])) {
		t.Errorf("get --version 1: %d %q, written as %v", code, out, written[0])
	}
	if code, _, errOut := uds(t, srv, "", "get", app, "hist", "doc", "--version", "9"); code != 1 || !strings.Contains(errOut, "404") {
		t.Errorf("get --version 9: %d %q", code, errOut)
	}
	if code, _, errOut := uds(t, srv, "", "restore", app, "hist", "doc", "--version", "1", "--if-match", written[1]["etag"].(string)); code != 1 || !strings.Contains(errOut, "uds restore: 412") {
		t.Errorf("restore at a stale ETag: %d %q", code, errOut)
	}
	code, out, _ = uds(t, srv, "", "--subject", "alice", "restore", app, "hist", "doc", "--version", "1", "--if-match", written[2]["etag"].(string))
	if code != 0 || !strings.Contains(out, `"data":{"n":1}`) || !strings.Contains(out, `"version":4`) {
		t.Fatalf("restore: %d %q", code, out)
	}
	if code, out, _ := uds(t, srv, "", "--subject", "alice", "quota", app); code != 0 || !strings.Contains(out, `"historyBytes":`) || strings.Contains(out, `"historyBytes":0`) {
		t.Errorf("quota with versions kept: %d %q", code, out)
	}
	if code, _, errOut := uds(t, srv, "", "rm-history", app, "hist", "doc"); code != 0 || errOut != "removed 3 versions\n" {
		t.Errorf("rm-history: %d %q", code, errOut)
	}
	if code, out, _ := uds(t, srv, "", "history", app, "hist", "doc"); code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"version":4,`) {
		t.Errorf("history after rm-history: %d %q", code, out)
	}
	if code, out, _ := uds(t, srv, "", "--subject", "alice", "quota", app); code != 0 || !strings.Contains(out, `"historyBytes":0`) {
		t.Errorf("quota after rm-history: %d %q", code, out)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHistoryCommandRequests checks what the history commands ask of the
// API and how they print its answers, against a server that answers each
// call with a fixed body and keeps the requests.
func TestHistoryCommandRequests(t *testing.T) {
	t.Parallel()
	const item = `{"applicationUuid":"` + app + `","namespace":"n","id":"i","data":{"n":1},"version":1}`
	var mu sync.Mutex
	var requests []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests = append(requests, strings.TrimSpace(r.Method+" "+r.RequestURI+" "+r.Header.Get("If-Match")))
		mu.Unlock()
		q := r.URL.Query()
		w.Header().Set("ETag", `"1-x"`)
		switch {
		case q.Has("history") && r.Method == http.MethodDelete:
			_, _ = w.Write([]byte(`{"removed":2}`))
		case q.Has("history") && q.Get("cursor") == "":
			_, _ = w.Write([]byte(`{"versions":[{"version":2,"updatedDate":"2026-11-25T10:00:00.000Z","updatedBySubject":"bob","size":12,"current":true}],"cursor":"next"}`))
		case q.Has("history"):
			_, _ = w.Write([]byte(`{"versions":[{"version":1,"updatedDate":"2026-11-25T09:00:00.000Z","updatedBySubject":"alice","size":0,"deleted":true}]}`))
		case q.Has("restore"):
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(item))
		default:
			_, _ = w.Write([]byte(item))
		}
	}))
	defer srv.Close()
	const path = "/rest/api/v1/data/" + app + "/n/"
	const printed = `{"applicationUuid":"` + app + `","namespace":"n","id":"i","data":{"n":1},"version":1,"etag":"\"1-x\""}` + "\n"
	for _, tc := range []struct {
		name           string
		args           []string
		requests       []string
		stdout, stderr string
	}{
		{"history, every page", []string{"history", app, "n", "i"},
			[]string{"GET " + path + "i?history", "GET " + path + "i?cursor=next&history"},
			`{"version":2,"updatedDate":"2026-11-25T10:00:00Z","updatedBySubject":"bob","size":12,"current":true}` + "\n" +
				`{"version":1,"updatedDate":"2026-11-25T09:00:00Z","updatedBySubject":"alice","size":0,"deleted":true}` + "\n", ""},
		{"a list item's history", []string{"history", app, "n", "i", "2024/01 x"},
			[]string{"GET " + path + "i/2024%2F01%20x?history", "GET " + path + "i/2024%2F01%20x?cursor=next&history"}, "", ""},
		{"get --version", []string{"get", app, "n", "i", "--version", "1"}, []string{"GET " + path + "i?version=1"}, printed, ""},
		{"restore", []string{"restore", "--version", "1", app, "n", "i"}, []string{"POST " + path + "i?restore=1"}, printed, ""},
		{"restore --if-match", []string{"restore", app, "n", "i", "--version", "3", "--if-match", `"4-y"`}, []string{"POST " + path + `i?restore=3 "4-y"`}, printed, ""},
		{"rm-history", []string{"rm-history", app, "n", "i"}, []string{"DELETE " + path + "i?history"}, "", "removed 2 versions\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			requests = nil
			mu.Unlock()
			code, stdout, stderr := uds(t, srv.URL, "", tc.args...)
			mu.Lock()
			defer mu.Unlock()
			if code != 0 || !reflect.DeepEqual(requests, tc.requests) {
				t.Errorf("exit %d (%s) after requests %q, want 0 after %q", code, stderr, requests, tc.requests)
			}
			if (tc.stdout != "" && stdout != tc.stdout) || (tc.stderr != "" && stderr != tc.stderr) {
				t.Errorf("stdout %q, stderr %q; want %q, %q", stdout, stderr, tc.stdout, tc.stderr)
			}
		})
	}
}

// An export carries the versions histories kept and their delete markers
// (unless --no-history); imported into another app, they come back as
// they were, and that app's export is the same bytes.
func TestHistoryExportImport(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	const otherApp = "0b4e7c4e-6f0a-4b43-9d53-2f6c1e0f6a11"
	for _, a := range []string{app, otherApp} {
		if code, _, errOut := uds(t, srv, "", "set-policy", a, "hist", "--access", "shared", "--history-versions", "3", "--history-days", "30"); code != 0 {
			t.Fatalf("set-policy: %s", errOut)
		}
	}
	for i, args := range [][]string{
		{"--subject", "alice", "create", app, "hist", "doc", "--data", `{"n":1}`},
		{"--subject", "bob", "put", app, "hist", "doc", "--data", `{"n":2}`},
		{"--subject", "bob", "put", app, "hist", "doc", "--data", `{"n":3,"class":"x"}`, "--class", "Note"},
		{"--subject", "alice", "create", app, "hist", "gone", "--data", `"soon deleted"`},
		{"--subject", "carol", "rm", app, "hist", "gone"},
		{"--subject", "bob", "create", app, "hist", "journal", "2026/11/25", "--data", `{"entry":1}`},
		{"--subject", "bob", "put", app, "hist", "journal", "2026/11/25", "--data", `{"entry":2}`},
	} {
		if code, _, errOut := uds(t, srv, "", args...); code != 0 {
			t.Fatalf("write %d (%v): %s", i+1, args, errOut)
		}
	}
	code, first, errOut := uds(t, srv, "", "export", app)
	// alice: doc, its version 1 and 2, gone's version 1 and its marker;
	// bob: the journal entry and its version 1.
	if code != 0 || strings.Count(first, "\n") != 7 || strings.Count(first, `"keptAt":`) != 5 || strings.Count(first, `"deleted":true`) != 1 {
		t.Fatalf("export: exit %d, stderr %q:\n%s", code, errOut, first)
	}
	if code, out, _ := uds(t, srv, "", "export", "--no-history", app); code != 0 || strings.Count(out, "\n") != 2 || strings.Contains(out, "keptAt") {
		t.Fatalf("export --no-history: exit %d:\n%s", code, out)
	}
	if code, out, errOut := uds(t, srv, first, "import", otherApp); code != 0 || !strings.Contains(out, `"imported":7`) {
		t.Fatalf("import: exit %d %q %q", code, out, errOut)
	}
	if code, again, _ := uds(t, srv, "", "export", otherApp); code != 0 || again != first {
		t.Fatalf("the other app's export differs:\n%s\nwant\n%s", again, first)
	}
	for _, item := range [][]string{{"hist", "doc"}, {"hist", "gone"}, {"hist", "journal", "2026/11/25"}} {
		_, want, _ := uds(t, srv, "", append([]string{"history", app}, item...)...)
		code, got, _ := uds(t, srv, "", append([]string{"history", otherApp}, item...)...)
		if code != 0 || got != want || want == "" {
			t.Errorf("history of %v in the other app:\n%s\nwant\n%s", item, got, want)
		}
	}
	// --namespace exports one namespace of the app.
	if code, _, errOut := uds(t, srv, "", "--subject", "dave", "create", app, "other", "note", "--data", `1`); code != 0 {
		t.Fatalf("create: %s", errOut)
	}
	if code, out, _ := uds(t, srv, "", "export", "--namespace", "other", app); code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"namespace":"other"`) {
		t.Errorf("export --namespace other: exit %d:\n%s", code, out)
	}
	if code, out, _ := uds(t, srv, "", "export", "--namespace", "hist", "--no-history", app); code != 0 || strings.Count(out, "\n") != 2 || strings.Contains(out, `"namespace":"other"`) {
		t.Errorf("export --namespace hist --no-history: exit %d:\n%s", code, out)
	}
}
