package sameorigin

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestCheck: the requests a server on 127.0.0.1:8080, also named
// devbox, that allows one origin, admits and refuses. A request without
// Origin and Sec-Fetch-Site is a program's, and is admitted.
func TestCheck(t *testing.T) {
	g := New("127.0.0.1:8080", "DevBox", []string{"http://localhost:3000"})
	for _, tc := range []struct {
		name, host, origin, site string
		admitted                 bool
	}{
		{"curl", "127.0.0.1:8080", "", "", true},
		{"localhost", "localhost:8080", "", "", true},
		{"localhost in capitals", "LocalHost:8080", "", "", true},
		{"IPv6 loopback", "[::1]:8080", "", "", true},
		{"another loopback address", "127.0.0.2:8080", "", "", true},
		{"the configured name", "devbox:8080", "", "", true},
		{"another port", "127.0.0.1:8081", "", "", false},
		{"no port, so 80", "127.0.0.1", "", "", false},
		{"a rebinding page's name", "evil.example:8080", "", "", false},
		{"a LAN address", "192.168.1.2:8080", "", "", false},
		{"localhost with a trailing dot", "localhost.:8080", "", "", false},
		{"the own page", "127.0.0.1:8080", "http://127.0.0.1:8080", "same-origin", true},
		{"the own page at localhost", "localhost:8080", "http://localhost:8080", "same-origin", true},
		{"a typed URL", "127.0.0.1:8080", "", "none", true},
		{"another origin", "127.0.0.1:8080", "http://evil.example", "", false},
		{"another origin, as https", "127.0.0.1:8080", "https://127.0.0.1:8080", "", false},
		{"an opaque origin", "127.0.0.1:8080", "null", "cross-site", false},
		{"another site's navigation", "127.0.0.1:8080", "", "cross-site", false},
		{"a page of another port", "127.0.0.1:8080", "", "same-site", false},
		{"the own origin sent cross-site", "127.0.0.1:8080", "http://127.0.0.1:8080", "cross-site", false},
		{"the allowed origin", "127.0.0.1:8080", "http://localhost:3000", "same-site", true},
		{"the allowed origin to another Host", "evil.example:8080", "http://localhost:3000", "same-site", false},
		{"the allowed origin misspelt", "127.0.0.1:8080", "http://localhost:3000/", "same-site", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "http://"+tc.host+"/rest/api/v1/data/x/batch", nil)
			r.Host = tc.host
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			if tc.site != "" {
				r.Header.Set("Sec-Fetch-Site", tc.site)
			}
			if refusal := g.Check(r); (refusal == nil) != tc.admitted || refusal != nil && (refusal.Why == "" || refusal.Remedy == "") {
				t.Errorf("refusal %+v, want admitted %v", refusal, tc.admitted)
			}
		})
	}
}

// TestEveryInterface: a server listening on every interface is named by
// localhost and loopback addresses, not by 0.0.0.0.
func TestEveryInterface(t *testing.T) {
	g := New("[::]:8080", "", nil)
	for host, want := range map[string]bool{"localhost:8080": true, "[::1]:8080": true, "0.0.0.0:8080": false, "[::]:8080": false} {
		r := httptest.NewRequest("GET", "http://"+host+"/", nil)
		if got := g.CheckHost(r) == nil; got != want {
			t.Errorf("Host %s admitted %v, want %v", host, got, want)
		}
	}
}

// TestHandlerCORS: the allowed origin's preflight is answered, not
// served; its requests are served with CORS; nothing says "*".
func TestHandlerCORS(t *testing.T) {
	cors := CORS{Methods: []string{"GET", "PUT"}, Headers: []string{"Content-Type"}, Expose: []string{"ETag"}}
	served := 0
	h := New("127.0.0.1:8080", "", []string{"http://localhost:3000"}).Handler("the test server", cors,
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served++ }))
	for _, tc := range []struct {
		name, method, origin string
		status               int
		allow, methods, vary string
		served               int
	}{
		{"preflight", "OPTIONS", "http://localhost:3000", 204, "http://localhost:3000", "GET, PUT", "Origin", 0},
		{"request", "PUT", "http://localhost:3000", 200, "http://localhost:3000", "", "Origin", 1},
		{"curl", "PUT", "", 200, "", "", "Origin", 2},
		{"another origin's preflight", "OPTIONS", "http://evil.example", 403, "", "", "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, "http://127.0.0.1:8080/x", nil)
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
				r.Header.Set("Access-Control-Request-Method", "PUT")
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			got := w.Result().Header
			if w.Code != tc.status || got.Get("Access-Control-Allow-Origin") != tc.allow || got.Get("Access-Control-Allow-Methods") != tc.methods ||
				got.Get("Vary") != tc.vary || served != tc.served {
				t.Errorf("%d %v, served %d times", w.Code, got, served)
			}
		})
	}
}
