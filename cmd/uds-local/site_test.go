package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/console"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/store/storetest"
)

// TestRootAndOpenAPI: GET / (and HEAD) redirects to the console with a
// 302, GET /openapi.json answers docs/openapi.json as JSON (nosniff),
// another method on / is the API's 404 and on /openapi.json a 405, and
// the guard refuses both paths to a page of another host (403 in the
// API's error shape, with its code). Before, / answered the API's JSON 404.
func TestRootAndOpenAPI(t *testing.T) {
	t.Parallel()
	cfg := config.Config{
		Tables: storetest.NewTables(t), Endpoint: os.Getenv(config.EnvDynamoDBEndpoint),
		ListenAddr: "127.0.0.1:0", S3ListenAddr: "127.0.0.1:0", LogFormat: "text", CursorSecret: []byte("k"),
	}
	base, _, stop := serve(t, cfg)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	root := strings.TrimSuffix(base, httpapi.BasePath)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	call := func(t *testing.T, method, path string, headers ...string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, root+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		req.Host = req.Header.Get("Host")
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	for _, method := range []string{"GET", "HEAD"} {
		t.Run(method+" /", func(t *testing.T) {
			res, body := call(t, method, "/")
			if res.StatusCode != http.StatusFound || res.Header.Get("Location") != console.Path {
				t.Fatalf("%d, Location %q: %s; want 302 to %s", res.StatusCode, res.Header.Get("Location"), body, console.Path)
			}
			if res, _ := call(t, "GET", res.Header.Get("Location")); res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
				t.Errorf("the redirect's target: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
			}
		})
	}
	t.Run("GET /openapi.json", func(t *testing.T) {
		want, err := os.ReadFile("../../docs/openapi.json")
		if err != nil {
			t.Fatal(err)
		}
		res, body := call(t, "GET", "/openapi.json")
		var doc struct{ OpenAPI string }
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" || res.Header.Get("X-Content-Type-Options") != "nosniff" || !bytes.Equal(body, want) ||
			json.Unmarshal(body, &doc) != nil || doc.OpenAPI == "" {
			t.Errorf("%d %s, %d bytes; want 200 application/json and docs/openapi.json's %d bytes",
				res.StatusCode, res.Header.Get("Content-Type"), len(body), len(want))
		}
	})
	t.Run("POST /", func(t *testing.T) {
		res, body := call(t, "POST", "/")
		var e struct{ Code string }
		if res.StatusCode != 404 || json.Unmarshal(body, &e) != nil || e.Code == "" {
			t.Errorf("%d %s; want the API's JSON 404", res.StatusCode, body)
		}
	})
	t.Run("POST /openapi.json", func(t *testing.T) {
		res, body := call(t, "POST", "/openapi.json")
		var e struct{ Code string }
		if res.StatusCode != 405 || res.Header.Get("Allow") != "GET, HEAD" || json.Unmarshal(body, &e) != nil || e.Code != "method_not_allowed" {
			t.Errorf("%d Allow %q %s; want a JSON 405 allowing GET, HEAD", res.StatusCode, res.Header.Get("Allow"), body)
		}
	})
	port := root[strings.LastIndex(root, ":")+1:]
	for _, path := range []string{"/", "/openapi.json"} {
		t.Run("a DNS rebinding page's GET "+path, func(t *testing.T) {
			res, body := call(t, "GET", path, "Host", "evil.example:"+port)
			var e struct{ Code string }
			if res.StatusCode != 403 || json.Unmarshal(body, &e) != nil || e.Code != "forbidden" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%d %s; want a JSON 403 with code forbidden, nosniff", res.StatusCode, body)
			}
		})
	}
}
