package console

import (
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

// TestHandler: every file of the page is served with its type, the strict
// security policy and no-cache; the page itself at /console/; config.json
// from the configuration; nothing else.
func TestHandler(t *testing.T) {
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"api":true}`)
	})
	srv := httptest.NewServer(Mount(api, Config{SubjectHeader: true}))
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(t *testing.T, method, p string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+p, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, string(b)
	}
	for _, tc := range []struct {
		name, method, path string
		status             int
		ctype, body        string
	}{
		{"the page", "GET", "/console/", 200, "text/html; charset=utf-8", `<script type="module" src="js/main.js" nonce="`},
		{"the page by name", "GET", "/console/index.html", 200, "text/html; charset=utf-8", "<title>UDS console</title>"},
		{"a module", "GET", "/console/js/main.js", 200, "text/javascript; charset=utf-8", "import "},
		{"the style sheet", "GET", "/console/style.css", 200, "text/css; charset=utf-8", ":root"},
		{"the icon", "GET", "/console/icon.svg", 200, "image/svg+xml", "<svg"},
		{"the configuration", "GET", "/console/config.json", 200, "application/json", `{"subjectHeader":true}`},
		{"HEAD of a module", "HEAD", "/console/js/api.js", 200, "text/javascript; charset=utf-8", ""},
		{"a file not there", "GET", "/console/js/nothing.js", 404, "text/plain; charset=utf-8", "404 page not found"},
		{"a directory", "GET", "/console/js/", 404, "text/plain; charset=utf-8", "404 page not found"},
		{"out of the assets", "GET", "/console/../console.go", 404, "text/plain; charset=utf-8", "404 page not found"},
		{"a write", "POST", "/console/", 405, "text/plain; charset=utf-8", "method not allowed"},
		{"without the slash", "GET", "/console", 301, "", ""},
		{"the API beside it", "GET", "/rest/api/v1/data/x/quota", 200, "application/json", `{"api":true}`},
		{"a path that only begins like it", "GET", "/consoles", 200, "application/json", `{"api":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := get(t, tc.method, tc.path)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", res.StatusCode, tc.status)
			}
			if tc.ctype != "" && res.Header.Get("Content-Type") != tc.ctype {
				t.Errorf("Content-Type %q, want %q", res.Header.Get("Content-Type"), tc.ctype)
			}
			if !strings.Contains(body, tc.body) {
				t.Errorf("body does not hold %q:\n%.300s", tc.body, body)
			}
			if strings.HasPrefix(tc.path, "/rest/") || tc.path == "/consoles" {
				if res.Header.Get("Content-Security-Policy") != "" {
					t.Errorf("the API's answer got the console's headers")
				}
				return
			}
			if got := res.Header.Get("Content-Security-Policy"); !strings.HasPrefix(got, "default-src 'none';") || !strings.Contains(got, "frame-ancestors 'none'") {
				t.Errorf("Content-Security-Policy %q", got)
			}
			if got := res.Header.Get("Cache-Control"); got != "no-cache" {
				t.Errorf("Cache-Control %q, want no-cache", got)
			}
			if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q", got)
			}
			if tc.status == 301 && res.Header.Get("Location") != Path {
				t.Errorf("Location %q, want %s", res.Header.Get("Location"), Path)
			}
		})
	}
	t.Run("without the header's trust", func(t *testing.T) {
		rec := httptest.NewRecorder()
		Handler(Config{}).ServeHTTP(rec, httptest.NewRequest("GET", "/console/config.json", nil))
		var cfg map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &cfg); err != nil || cfg["subjectHeader"] != false {
			t.Errorf("config %s (%v)", rec.Body, err)
		}
	})
}

// TestAssetsHaveTypes: every embedded file has a type the handler names,
// so none is served as a 404 by an oversight, and the page loads nothing
// from elsewhere (the security policy would refuse it).
func TestAssetsHaveTypes(t *testing.T) {
	err := fs.WalkDir(assets, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		t.Run(p, func(t *testing.T) {
			if _, ok := contentTypes[path.Ext(p)]; !ok {
				t.Errorf("no content type for %s", p)
			}
			b, err := fs.ReadFile(assets, p)
			if err != nil {
				t.Fatal(err)
			}
			if s := string(b); strings.Contains(s, "http://") || strings.Contains(s, "https://") {
				if !strings.HasSuffix(p, ".svg") {
					t.Errorf("%s names an absolute URL: the page loads only its own files", p)
				}
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPageNonce: the page names its script and style sheet by a nonce
// drawn afresh for each answer, the one its policy names, and the policy
// admits no script or style by origin: the API shares the page's origin,
// and a stored value it answers as JavaScript must not run in the page.
func TestPageNonce(t *testing.T) {
	nonceAttr := regexp.MustCompile(`<(script|link)[^>]* nonce="([^"]*)"`)
	seen := map[string]bool{}
	for range 2 {
		rec := httptest.NewRecorder()
		Handler(Config{}).ServeHTTP(rec, httptest.NewRequest("GET", Path, nil))
		policy := rec.Header().Get("Content-Security-Policy")
		tags := nonceAttr.FindAllStringSubmatch(rec.Body.String(), -1)
		if len(tags) != 2 || tags[0][2] != tags[1][2] || len(tags[0][2]) < 22 {
			t.Fatalf("the page's nonces %q, want one of 128 bits on its style sheet and its script", tags)
		}
		nonce := tags[0][2]
		if seen[nonce] {
			t.Errorf("two answers of the page have the nonce %s", nonce)
		}
		seen[nonce] = true
		for _, want := range []string{"script-src 'nonce-" + nonce + "';", "style-src 'nonce-" + nonce + "';", "default-src 'none';"} {
			if !strings.Contains(policy, want) {
				t.Errorf("the policy %q does not say %s", policy, want)
			}
		}
		if regexp.MustCompile(`(script|style|default)-src[^;]*'self'`).MatchString(policy) {
			t.Errorf("the policy %q admits scripts or styles of the page's origin", policy)
		}
		if strings.Contains(rec.Body.String(), noncePlaceholder) {
			t.Errorf("the page still holds %s", noncePlaceholder)
		}
	}
}
