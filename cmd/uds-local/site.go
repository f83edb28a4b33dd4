package main

import (
	"net/http"
	"strconv"

	"github.com/udsproject/uds/docs"
	"github.com/udsproject/uds/internal/sameorigin"
	"github.com/udsproject/uds/pkg/console"
)

// openAPIPath is where the local server serves the API's OpenAPI document.
const openAPIPath = "/openapi.json"

// site serves what a person or a tool asks the server's root for, beside
// the API and the console (next): GET / redirects to the console, and GET
// /openapi.json answers the OpenAPI document built into the server, which
// answers other methods 405. Other methods on /, and every other path,
// are next's: the API
// answers them as any path that is not a route. Like console.Mount, it
// compares the path rather than going through http.ServeMux, which would
// clean the API's paths.
//
// The redirect is a 302 Found, a temporary one: browsers cache a permanent
// redirect (301, 308) for good, and the next program served on
// 127.0.0.1:8080 would find its root redirected to a /console/ it does
// not have.
func site(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if r.URL.Path == openAPIPath {
				// The document is a resource of its own, read only.
				w.Header().Set("Allow", "GET, HEAD")
				sameorigin.WriteError(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method not allowed", r.Method+" "+openAPIPath+" is not served; the document is read with GET")
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		switch r.URL.Path {
		case "/":
			http.Redirect(w, r, console.Path, http.StatusFound)
		case openAPIPath:
			h := w.Header()
			h.Set("Content-Type", "application/json")
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Content-Length", strconv.Itoa(len(docs.OpenAPI)))
			_, _ = w.Write(docs.OpenAPI)
		default:
			next.ServeHTTP(w, r)
		}
	})
}
