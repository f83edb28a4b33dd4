package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// RegistryStore keeps the apps' registered names.
type RegistryStore interface {
	RegisterApp(ctx context.Context, app, name, description string) (uds.AppRegistration, error)
	App(ctx context.Context, app string) (uds.AppRegistration, error)
	UnregisterApp(ctx context.Context, app string) error
	AppByName(ctx context.Context, name string) (uds.AppRegistration, error)
	Apps(ctx context.Context, after uds.AppRegistration, limit int) ([]uds.AppRegistration, bool, error)
	HeldApps(ctx context.Context, after string, limit int) ([]uds.AppRegistration, bool, error)
}

// The app registry gives apps names that operators know them by. Data
// paths keep the app's id: a name resolves to it only here, where an
// operator types one (GET /admin/apps?name=).

// errNotRegistered answers a read of an app that has no registration.
var errNotRegistered = uds.NewError(uds.CodeNotFound, "app not registered")

// appsQuery is what GET /admin/apps takes: a page of the registry, or
// one app found by its name.
var appsQuery = []string{"limit", "cursor", "name", "include"}

// registryBinding binds the registry listing's cursors: a cursor of
// another listing does not continue it.
const registryBinding = "registry"

// registrationJSON is an app's registration as the admin routes show it;
// an app that holds data and is not registered shows its id, and no name
// or dates.
type registrationJSON struct {
	ApplicationUUID string `json:"applicationUuid"`
	Name            string `json:"name,omitempty"`
	Description     string `json:"description,omitempty"`
	CreatedDate     string `json:"createdDate,omitempty"`
	UpdatedDate     string `json:"updatedDate,omitempty"`
	Registered      bool   `json:"registered"`
	// HeldSince is when the app first held data, where the catalogue
	// marked it and the read carries the mark (a listing does not: the
	// registry's index does not hold it).
	HeldSince string `json:"heldSince,omitempty"`
	// Limits are the app's default per-user limits, shown where the app
	// has some (they share its record, so showing them costs nothing).
	Limits *limitsJSON `json:"limits,omitempty"`
}

func registrationBody(reg uds.AppRegistration) registrationJSON {
	j := registrationJSON{ApplicationUUID: reg.App, Name: reg.Name, Description: reg.Description, Registered: reg.Name != ""}
	if j.Registered {
		j.CreatedDate, j.UpdatedDate = store.FormatTime(reg.Created), store.FormatTime(reg.Updated)
	}
	if !reg.HeldSince.IsZero() {
		j.HeldSince = store.FormatTime(reg.HeldSince)
	}
	if reg.Limits != (uds.Limits{}) {
		j.Limits = &limitsJSON{LimitBytes: reg.Limits.Bytes, LimitItems: reg.Limits.Items}
	}
	return j
}

// maxRegistrationBody bounds a registration body: a name of 100
// characters and a description of 1000 bytes, each character escaped.
const maxRegistrationBody = 16 << 10

// registrationShape is the registration body, as a refusal of its form
// describes it.
const registrationShape = `{"name": "...", "description": "..."}`

// readRegistration reads a registration body and parses it.
func readRegistration(r *http.Request) (name, description string, err error) {
	body, err := readBody(r, maxRegistrationBody, "a registration body takes at most 16 KiB: a name of up to 100 characters and a description of up to 1000 bytes")
	if err != nil {
		return "", "", err
	}
	return parseRegistration(body)
}

// parseRegistration checks a registration body: name required,
// description optional (absent or null: none).
func parseRegistration(body []byte) (name, description string, err error) {
	var b struct {
		Name        *string `json:"name"`
		Description *string `json:"description"`
	}
	if err := decodeBody(body, &b, registrationShape); err != nil {
		return "", "", err
	}
	if b.Name == nil {
		return "", "", uds.Invalid("name", "is required: the app's name, 1 to %d characters", uds.MaxAppNameRunes)
	}
	if name, err = uds.ParseAppName(*b.Name); err != nil {
		return "", "", err
	}
	if b.Description != nil {
		description, err = uds.ParseAppDescription(*b.Description)
	}
	return name, description, err
}

// registerApp registers an app under a name, or changes its name and
// description: the body is the whole registration.
func (a *API) registerApp(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	name, description, err := readRegistration(r)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	reg, err := a.stores.Registry.RegisterApp(r.Context(), app, name, description)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, registrationBody(reg))
}

func (a *API) getApp(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	reg, err := a.stores.Registry.App(r.Context(), app)
	if errors.Is(err, uds.ErrNotFound) {
		err = errNotRegistered
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, registrationBody(reg))
}

// unregisterApp frees an app's name; its data, limits and policies stay.
// An app without a registration is answered as one just unregistered.
func (a *API) unregisterApp(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err == nil {
		err = a.stores.Registry.UnregisterApp(r.Context(), app)
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listApps lists the registry by name, compared case-insensitively, one
// page at a time; with name=, it finds that app: a list of one, or none.
// With include=held, the apps that hold data and are not registered
// follow the registered ones, by id.
func (a *API) listApps(w http.ResponseWriter, r *http.Request, _ params) {
	q, err := query(r)
	var held bool
	if err == nil {
		held, err = includeHeld(q)
	}
	if err == nil && q.Has("name") {
		if q.Has("limit") || q.Has("cursor") || q.Has("include") {
			err = uds.Invalid("query", "name finds one app: it takes neither limit nor cursor, nor include")
		} else {
			a.appNamed(w, r, q.Get("name"))
			return
		}
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	if held {
		a.listAppsHeld(w, r)
		return
	}
	// A cursor carries the last app of its page and its name's key, which
	// is where the index's order resumes.
	page(a, w, r, "apps", registryBinding,
		func(after string, limit int) ([]uds.AppRegistration, bool, error) {
			app, key, _ := strings.Cut(after, "\x00")
			return a.stores.Registry.Apps(r.Context(), uds.AppRegistration{App: app, NameKey: key}, limit)
		},
		func(reg uds.AppRegistration) (any, string) {
			return registrationBody(reg), reg.App + "\x00" + reg.NameKey
		})
}

// heldBinding binds the cursors of the listing of apps that hold data.
const heldBinding = "registry\x00held"

// listAppsHeld lists the registered apps by name, then the apps that
// hold data and are not registered by id, with one cursor: it carries the
// partition of the last app of its page ("r" or "h"), the app, and its
// key in the registry's index.
func (a *API) listAppsHeld(w http.ResponseWriter, r *http.Request) {
	page(a, w, r, "apps", heldBinding,
		func(after string, limit int) ([]uds.AppRegistration, bool, error) {
			part, rest, _ := strings.Cut(after, "\x00")
			var regs []uds.AppRegistration
			if part != "h" {
				app, key, _ := strings.Cut(rest, "\x00")
				var more bool
				var err error
				if regs, more, err = a.stores.Registry.Apps(r.Context(), uds.AppRegistration{App: app, NameKey: key}, limit); err != nil || more {
					return regs, more, err
				}
				rest = ""
			}
			held, more, err := a.stores.Registry.HeldApps(r.Context(), rest, limit-len(regs))
			return append(regs, held...), more, err
		},
		func(reg uds.AppRegistration) (any, string) {
			if reg.Name == "" {
				return registrationBody(reg), "h\x00" + reg.App
			}
			return registrationBody(reg), "r\x00" + reg.App + "\x00" + reg.NameKey
		})
}

// appNamed answers the list of the app registered under name, compared
// case-insensitively: one app, or none.
func (a *API) appNamed(w http.ResponseWriter, r *http.Request, name string) {
	name, err := uds.ParseAppName(name)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	apps := []registrationJSON{}
	reg, err := a.stores.Registry.AppByName(r.Context(), name)
	switch {
	case err == nil:
		apps = append(apps, registrationBody(reg))
	case !errors.Is(err, uds.ErrNotFound):
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"apps": apps})
}
