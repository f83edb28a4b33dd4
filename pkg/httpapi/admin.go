package httpapi

import "net/http"

// serveAdmin handles /admin/... (the admin route group).
func (a *API) serveAdmin(w http.ResponseWriter, r *http.Request, segs []string) {
	a.notFound(w, r)
}

// serveOwnQuota handles /data/{app}/quota: the caller's usage and limits.
func (a *API) serveOwnQuota(w http.ResponseWriter, r *http.Request, app string) {
	a.notFound(w, r)
}
