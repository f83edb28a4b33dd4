package httpapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/udsproject/uds/pkg/uds"
)

// BasePath prefixes every route.
const BasePath = "/rest/api/v1/"

// ServeHTTP routes a request. Paths are split on their escaped form so that
// an encoded slash (%2F) stays inside its segment; each segment is then
// unescaped. One trailing slash is accepted on every route.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), BasePath)
	if !ok {
		a.notFound(w, r)
		return
	}
	rest = strings.TrimSuffix(rest, "/")
	raw := strings.Split(rest, "/")
	segs := make([]string, len(raw))
	for i, s := range raw {
		u, err := url.PathUnescape(s)
		if err != nil {
			a.fail(w, r, uds.Invalid("path", "malformed percent-encoding in %q", s), nil)
			return
		}
		segs[i] = u
	}
	switch {
	case segs[0] == "data" && len(segs) == 3 && segs[2] == "quota" && a.groups&GroupKV != 0:
		a.serveOwnQuota(w, r, segs[1])
	case segs[0] == "data" && len(segs) == 4 && a.groups&GroupKV != 0:
		a.serveKV(w, r, segs[1], segs[2], segs[3])
	case segs[0] == "data" && len(segs) == 5 && segs[4] == uds.ReservedSortKey && a.groups&GroupList != 0 && r.Method != http.MethodPost && r.Method != http.MethodPut:
		a.serveList(w, r, segs[1], segs[2], segs[3])
	case segs[0] == "data" && len(segs) >= 5 && a.groups&GroupList != 0:
		// The sort key is the rest of the path, so it may contain slashes
		// whether or not the gateway decoded %2F before we saw it.
		a.serveListItem(w, r, segs[1], segs[2], segs[3], strings.Join(segs[4:], "/"))
	case segs[0] == "admin" && a.groups&GroupAdmin != 0:
		a.serveAdmin(w, r, segs[1:])
	default:
		a.notFound(w, r)
	}
}

func (a *API) notFound(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotFound, errorBody{Error: "Route not found", Details: r.Method + " " + r.URL.Path + " is not a UDS route" + a.servedBy(), Timestamp: now()})
}

func (a *API) servedBy() string {
	if a.groups == GroupAll {
		return ""
	}
	return " served by this function"
}

// methodNotAllowed answers 405 with the methods the route has.
func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: "Method not allowed", Details: r.Method + " is not allowed here; allowed: " + allow, Timestamp: now()})
}
