package httpapi

import "net/http"

// The admin route group and the caller's own quota view are built with the
// quota feature; until then they answer 501.

func (a *API) notYet(w http.ResponseWriter, r *http.Request, _ params) {
	writeJSON(w, http.StatusNotImplemented, errorBody{Error: "Not implemented", Timestamp: now()})
}

func (a *API) ownQuota(w http.ResponseWriter, r *http.Request, p params)         { a.notYet(w, r, p) }
func (a *API) appUsers(w http.ResponseWriter, r *http.Request, p params)         { a.notYet(w, r, p) }
func (a *API) userApps(w http.ResponseWriter, r *http.Request, p params)         { a.notYet(w, r, p) }
func (a *API) getAppLimits(w http.ResponseWriter, r *http.Request, p params)     { a.notYet(w, r, p) }
func (a *API) putAppLimits(w http.ResponseWriter, r *http.Request, p params)     { a.notYet(w, r, p) }
func (a *API) userQuota(w http.ResponseWriter, r *http.Request, p params)        { a.notYet(w, r, p) }
func (a *API) putUserLimits(w http.ResponseWriter, r *http.Request, p params)    { a.notYet(w, r, p) }
func (a *API) deleteUserLimits(w http.ResponseWriter, r *http.Request, p params) { a.notYet(w, r, p) }
func (a *API) recompute(w http.ResponseWriter, r *http.Request, p params)        { a.notYet(w, r, p) }
