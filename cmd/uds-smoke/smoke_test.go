package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// smoke runs the command in-process and returns its exit status and
// outputs.
func smoke(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// stepLines is the name and status of every step line of the output, and
// its last line.
func stepLines(t *testing.T, stdout string) ([]string, string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "smoke test of ") {
		t.Fatalf("output %q", stdout)
	}
	var steps []string
	for _, l := range lines[1 : len(lines)-1] {
		f := strings.Fields(l)
		steps = append(steps, f[0]+" "+f[1])
	}
	return steps, lines[len(lines)-1]
}

// tamperer answers some requests in place of UDS: when it returns true it
// has written the answer.
type tamperer func(w http.ResponseWriter, r *http.Request) bool

// endpoint serves the API through tamper: what tamper leaves alone goes to
// api as it came.
func endpoint(t *testing.T, api string, tamper tamperer) string {
	t.Helper()
	target, err := url.Parse(api)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tamper == nil || !tamper(w, r) {
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// itemPath reports whether r addresses a key-value item of the smoke
// namespace (not its list or a list item).
func itemPath(r *http.Request) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/rest/api/v1/data/")
	return ok && strings.Count(rest, "/") == 2 && strings.Contains(rest, "/"+namespace+"/")
}

func answer(w http.ResponseWriter, status int, header map[string]string, body string) bool {
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
	return true
}

func TestSmoke(t *testing.T) {
	api := apitest.Server(t, 10*time.Second)
	passed := []string{"create 201", "read 200", "update 200", "append 201", "list 200", "quota 200", "delete 204", "delete 204", "gone 404"}
	cases := []struct {
		name   string
		tamper tamperer
		// steps are the name and status of each step line, cleanup
		// included; last is the summary line.
		steps []string
		last  string
		// left is how many items the run leaves stored.
		left int64
	}{
		{name: "working API", steps: passed, last: "ok: 9 steps"},
		{
			name: "not UDS",
			tamper: func(w http.ResponseWriter, r *http.Request) bool {
				return answer(w, http.StatusNotFound, map[string]string{"Content-Type": "text/html"}, "<h1>Not Found</h1>")
			},
			steps: []string{"create 404"}, last: "FAILED at create",
		},
		{
			name: "read answers another revision",
			tamper: func(w http.ResponseWriter, r *http.Request) bool {
				return r.Method == http.MethodGet && itemPath(r) &&
					answer(w, http.StatusOK, map[string]string{"ETag": `"7-other"`}, `{"data":{"other":true},"version":7}`)
			},
			steps: []string{"create 201", "read 200", "cleanup 204"}, last: "FAILED at read",
		},
		{
			name: "update refused",
			tamper: func(w http.ResponseWriter, r *http.Request) bool {
				return r.Method == http.MethodPut &&
					answer(w, http.StatusPreconditionFailed, nil, `{"error":"Precondition failed"}`)
			},
			steps: []string{"create 201", "read 200", "update 412", "cleanup 204"}, last: "FAILED at update",
		},
		{
			name: "list page without the item",
			tamper: func(w http.ResponseWriter, r *http.Request) bool {
				return strings.HasSuffix(r.URL.Path, "/list") && r.Method == http.MethodGet &&
					answer(w, http.StatusOK, nil, `{"list":[]}`)
			},
			steps: []string{"create 201", "read 200", "update 200", "append 201", "list 200", "cleanup 204", "cleanup 204"},
			last:  "FAILED at list",
		},
		{
			name: "quota fails",
			tamper: func(w http.ResponseWriter, r *http.Request) bool {
				return strings.HasSuffix(r.URL.Path, "/quota") &&
					answer(w, http.StatusInternalServerError, nil, `{"error":"Internal server error"}`)
			},
			steps: []string{"create 201", "read 200", "update 200", "append 201", "list 200", "quota 500", "cleanup 204", "cleanup 204"},
			last:  "FAILED at quota",
		},
		{
			name: "delete keeps the item",
			tamper: func(w http.ResponseWriter, r *http.Request) bool {
				return r.Method == http.MethodDelete && itemPath(r) && answer(w, http.StatusNoContent, nil, "")
			},
			steps: []string{"create 201", "read 200", "update 200", "append 201", "list 200", "quota 200", "delete 204", "delete 204", "gone 200"},
			last:  "FAILED at gone",
			left:  1,
		},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Each case writes in an app of its own, whose usage says
			// what the run left stored.
			app := fmt.Sprintf("00000000-0000-4000-8000-%012x", i+1)
			code, stdout, stderr := smoke(t, "-endpoint", endpoint(t, api, c.tamper), "-app", app, "-timeout", "30s")
			wantCode := exitOK
			if c.last != "ok: 9 steps" {
				wantCode = exitFailed
			}
			steps, last := stepLines(t, stdout)
			if code != wantCode || last != c.last || stderr != "" {
				t.Errorf("exit %d, last line %q, stderr %q; want %d, %q\n%s", code, last, stderr, wantCode, c.last, stdout)
			}
			checkEqual(t, "steps", steps, c.steps)

			direct, err := client.New(api)
			if err != nil {
				t.Fatal(err)
			}
			q, err := direct.Quota(context.Background(), app)
			if err != nil || q.UsedItems != c.left {
				t.Errorf("the run left %d items (%v), want %d", q.UsedItems, err, c.left)
			}
		})
	}
}

// The update line shows the If-Match the update sent: the create's ETag.
func TestUpdateSendsTheCreatesETag(t *testing.T) {
	code, stdout, _ := smoke(t, "-endpoint", apitest.Server(t, 10*time.Second))
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stdout)
	}
	var created, ifMatch string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "create ") {
			created = l
		}
		if strings.HasPrefix(l, "update ") {
			_, ifMatch, _ = strings.Cut(l, "If-Match: ")
			ifMatch, _, _ = strings.Cut(ifMatch, " ")
		}
	}
	// The create's version is 1: its ETag starts "1-.
	if !strings.HasPrefix(ifMatch, `"1-`) || created == "" {
		t.Errorf("update sent If-Match %q after %q\n%s", ifMatch, created, stdout)
	}
}

func TestNoAnswer(t *testing.T) {
	// Nothing listens on port 1: the client retries the connection and
	// gives up.
	code, stdout, _ := smoke(t, "-endpoint", "http://127.0.0.1:1", "-timeout", "20s")
	steps, last := stepLines(t, stdout)
	if code != exitFailed || last != "FAILED at create" || len(steps) != 1 || steps[0] != "create ---" {
		t.Errorf("exit %d, steps %q, last %q", code, steps, last)
	}
}

func TestUsage(t *testing.T) {
	t.Setenv("UDS_ENDPOINT", "")
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"help", []string{"-help"}, exitOK, "-endpoint"},
		{"no endpoint", nil, exitUsage, "give -endpoint"},
		{"not a URL", []string{"-endpoint", "ftp://example.com"}, exitUsage, "is not an http(s) URL"},
		{"arguments", []string{"-endpoint", "http://127.0.0.1:1", "extra"}, exitUsage, `unexpected arguments ["extra"]`},
		{"unknown flag", []string{"-colour"}, exitUsage, "flag provided but not defined"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := smoke(t, c.args...)
			if code != c.code || stdout != "" || !strings.Contains(stderr, c.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d and %q", code, stdout, stderr, c.code, c.stderr)
			}
		})
	}
}

func checkEqual(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}
