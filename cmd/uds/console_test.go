package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

var consoleLine = regexp.MustCompile(`^UDS console on (http://127\.0\.0\.1:\d+)/console/ for \S+ \(([^)]*)\)`)

// startConsole runs `uds console` with args until the test ends and
// returns the console's base URL and how it said it authenticates.
func startConsole(t *testing.T, args ...string) (string, string) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	out, stdout := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := run(ctx, append([]string{"console", "--port", "0", "--no-open"}, args...), strings.NewReader(""), stdout, &stderr)
		stdout.Close()
		done <- code
	}()
	t.Cleanup(func() {
		stop()
		if code := <-done; code != 0 {
			t.Errorf("uds console exited %d: %s", code, &stderr)
		}
	})
	// The first line names the console; nothing else is printed.
	line, err := bufio.NewReader(out).ReadString('\n')
	go func() { _, _ = io.Copy(io.Discard, out) }()
	m := consoleLine.FindStringSubmatch(line)
	if m == nil {
		stop()
		code := <-done
		done <- code
		t.Fatalf("uds console printed %q (%v), exit %d: %s", line, err, code, &stderr)
	}
	return m[1], m[2]
}

// seen is what the API behind the console received.
type seen struct {
	path, auth, subject, cookie, date string
	body                              string
}

// TestConsoleProxy runs `uds console` in front of a server that records
// what reaches it, with static AWS credentials in the environment: admin
// calls arrive signed with SigV4, data calls with the token (UDS_TOKEN),
// neither with what the browser sent; requests for another host or from
// another origin never reach it.
func TestConsoleProxy(t *testing.T) {
	dir := t.TempDir()
	for name, value := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDCONSOLETEST", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "",
		"AWS_REGION": "eu-west-1", "AWS_PROFILE": "", "UDS_TOKEN": "the-token",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
	} {
		t.Setenv(name, value)
	}
	got := make(chan seen, 1)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Uds-Subject"), r.Header.Get("Cookie"), r.Header.Get("X-Amz-Date"), string(b)}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	}))
	defer api.Close()
	base, auth := startConsole(t, "--endpoint", api.URL+"/stage", "--sigv4")
	if auth != "admin calls signed with SigV4, data calls with the token" {
		t.Errorf("the start line says %q", auth)
	}
	host := strings.TrimPrefix(base, "http://")
	for _, tc := range []struct {
		name, method, path, body string
		headers                  map[string]string
		status                   int
		reaches                  bool
		auth                     string // a prefix of the Authorization the API receives
	}{
		{"an admin read, signed", "GET", "/rest/api/v1/admin/apps/" + app + "/users", "", nil, 200, true,
			"AWS4-HMAC-SHA256 Credential=AKIDCONSOLETEST/"},
		{"an admin write, signed with its body", "PUT", "/rest/api/v1/admin/apps/" + app + "/quota", `{"limitItems":5}`,
			map[string]string{"Origin": "http://" + host, "Sec-Fetch-Site": "same-origin"}, 200, true, "AWS4-HMAC-SHA256 Credential=AKIDCONSOLETEST/"},
		{"a data call, with the token", "GET", "/rest/api/v1/data/" + app + "/quota", "", nil, 200, true, "Bearer the-token"},
		{"the browser's credentials dropped", "GET", "/rest/api/v1/data/" + app + "/quota", "",
			map[string]string{"Authorization": "Bearer stolen", "X-Uds-Subject": "mallory", "Cookie": "c=1"}, 200, true, "Bearer the-token"},
		{"another host", "GET", "/rest/api/v1/admin/apps/" + app + "/users", "", map[string]string{"Host": "evil.example:" + strings.Split(host, ":")[1]}, 403, false, ""},
		{"another origin", "GET", "/rest/api/v1/admin/apps/" + app + "/users", "", map[string]string{"Origin": "http://evil.example"}, 403, false, ""},
		{"another site's page", "POST", "/rest/api/v1/admin/apps/" + app + "/import", "{}", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, false, ""},
		{"a page of this machine's other ports", "GET", "/rest/api/v1/data/" + app + "/quota", "", map[string]string{"Sec-Fetch-Site": "same-site"}, 403, false, ""},
		{"the page's fetch", "GET", "/rest/api/v1/data/" + app + "/quota", "",
			map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}, 200, true, "Bearer the-token"},
		{"a link opened from a mail app", "GET", "/rest/api/v1/data/" + app + "/pages/html", "",
			map[string]string{"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Sec-Fetch-User": "?1"}, 403, false, ""},
		{"a link of the console's page", "GET", "/rest/api/v1/data/" + app + "/pages/html", "",
			map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}, 403, false, ""},
		{"a frame", "GET", "/rest/api/v1/admin/apps/" + app + "/export", "",
			map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}, 403, false, ""},
		{"a script", "GET", "/rest/api/v1/data/" + app + "/pages/js", "",
			map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "script"}, 403, false, ""},
		{"not an API path", "GET", "/other", "", nil, 404, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			req.Host = req.Header.Get("Host")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tc.status {
				// A request that reached the API by mistake leaves its
				// record to no later case, whose API call it would block.
				select {
				case <-got:
				default:
				}
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, b)
			}
			if !tc.reaches {
				var e struct{ Error, Details string }
				if tc.status == 403 && (json.Unmarshal(b, &e) != nil || !strings.HasPrefix(e.Error, "Forbidden by the console")) {
					t.Errorf("refusal %s", b)
				}
				select {
				case s := <-got:
					t.Errorf("reached the API: %+v", s)
				default:
				}
				return
			}
			s := <-got
			if s.path != "/stage"+tc.path || !strings.HasPrefix(s.auth, tc.auth) || s.subject != "" || s.cookie != "" || s.body != tc.body {
				t.Errorf("the API received %+v", s)
			}
			if signed := strings.HasPrefix(tc.auth, "AWS4"); signed != (s.date != "") || signed && !strings.Contains(s.auth, "/eu-west-1/execute-api/aws4_request") {
				t.Errorf("signature %q, X-Amz-Date %q", s.auth, s.date)
			}
		})
	}
}

// TestConsoleAgainstLocalAPI: against a local server, unsigned, the page's
// data calls act as --subject, and the page is told to hide its caller
// field; what it writes through the console is the API's.
func TestConsoleAgainstLocalAPI(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, apitest.Budget)
	base, auth := startConsole(t, "--endpoint", srv, "--subject", "alice")
	if auth != "admin calls unsigned, data calls as alice" {
		t.Errorf("the start line says %q", auth)
	}
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"the page", "GET", "/console/", "", 200, "<title>UDS console</title>"},
		{"its configuration", "GET", "/console/config.json", "", 200, `{"subjectHeader":false,"server":"` + srv + `","subject":"alice","calls":"admin calls unsigned, data calls as alice"}`},
		{"a write as alice", "POST", "/rest/api/v1/data/" + app + "/notes/n1", `{"data": {"text": "hi"}}`, 201, `"createdBySubject":"alice"`},
		{"an admin read", "GET", "/rest/api/v1/admin/apps/" + app + "/users", "", 200, `"user":"alice"`},
		{"the API's error, as it answered", "GET", "/rest/api/v1/data/" + app + "/notes/missing", "", 404, `"error":"Key not found"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := call(tc.method, tc.path, tc.body)
			if status != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s; want %d and %s", status, body, tc.status, tc.want)
			}
		})
	}
}
