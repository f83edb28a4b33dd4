package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/udsproject/uds/pkg/policy"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// policyJSON is a namespace's policy as the admin routes show it; a
// namespace without one shows the defaults at version 0.
type policyJSON struct {
	ApplicationUUID string          `json:"applicationUuid"`
	Namespace       string          `json:"namespace"`
	Access          uds.Access      `json:"access"`
	Schema          json.RawMessage `json:"schema"`
	Version         int64           `json:"version"`
	UpdatedDate     string          `json:"updatedDate,omitempty"`
	// Pending is a change into or out of private under way.
	Pending *pendingJSON `json:"pending,omitempty"`
}

type pendingJSON struct {
	Access    uds.Access      `json:"access"`
	Schema    json.RawMessage `json:"schema"`
	Since     string          `json:"since"`
	SettlesAt string          `json:"settlesAt"`
	LapsesAt  string          `json:"lapsesAt"`
}

func policyBody(app, namespace string, p uds.Policy, now time.Time) policyJSON {
	j := policyJSON{ApplicationUUID: app, Namespace: namespace, Access: p.Mode(), Schema: orNull(p.Schema), Version: p.Version}
	if !p.Updated.IsZero() {
		j.UpdatedDate = store.FormatTime(p.Updated)
	}
	if c := p.Changing(now); c != nil {
		j.Pending = &pendingJSON{Access: c.Target().Mode(), Schema: orNull(c.Schema), Since: store.FormatTime(c.Since),
			SettlesAt: store.FormatTime(c.SettlesAt), LapsesAt: store.FormatTime(c.LapsesAt)}
	}
	return j
}

// orNull shows a missing schema as null.
func orNull(schema json.RawMessage) json.RawMessage {
	if schema == nil {
		return json.RawMessage("null")
	}
	return schema
}

func appAndNamespace(p params) (app, namespace string, err error) {
	if app, err = uds.ParseApp(p.app); err != nil {
		return "", "", err
	}
	namespace, err = uds.ParseNamespace(p.namespace)
	return app, namespace, err
}

// namespaceInEffect names the namespace a route addresses and reads its
// policy in effect, strongly consistent.
func (a *API) namespaceInEffect(r *http.Request, p params) (app, namespace string, pol uds.Policy, err error) {
	if app, namespace, err = appAndNamespace(p); err != nil {
		return
	}
	pol, err = a.store.StoredPolicy(r.Context(), app, namespace)
	return
}

func (a *API) getPolicy(w http.ResponseWriter, r *http.Request, p params) {
	app, namespace, pol, err := a.namespaceInEffect(r, p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, policyBody(app, namespace, pol, a.now()))
}

func (a *API) putPolicy(w http.ResponseWriter, r *http.Request, p params) {
	app, namespace, err := appAndNamespace(p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	pol, err := a.readPolicy(r)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	a.setPolicy(w, r, app, namespace, pol, http.StatusOK)
}

// deletePolicy restores the defaults: shared, without a schema.
func (a *API) deletePolicy(w http.ResponseWriter, r *http.Request, p params) {
	app, namespace, err := appAndNamespace(p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	a.setPolicy(w, r, app, namespace, uds.Policy{}, http.StatusNoContent)
}

// setPolicy sets a namespace's policy and answers done (PUT 200 with the
// policy, DELETE 204) or, for a change into or out of private that was
// announced and not yet completed, 202 with the policy and its pending
// change, and Retry-After until it may be completed by repeating the
// request (store/policy_change.go).
func (a *API) setPolicy(w http.ResponseWriter, r *http.Request, app, namespace string, pol uds.Policy, done int) {
	pol, err := a.store.SetPolicy(r.Context(), app, namespace, pol)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	now := a.now()
	if c := pol.Changing(now); c != nil {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(c.SettlesAt.Sub(now).Seconds()+0.999))))
		writeJSON(w, http.StatusAccepted, policyBody(app, namespace, pol, now))
		return
	}
	if done == http.StatusNoContent {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, done, policyBody(app, namespace, pol, now))
}

// listPolicies lists the policies set in an app, by namespace.
func (a *API) listPolicies(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	page(a, w, r, "namespaces", "namespaces\x00"+app,
		func(after string, limit int) ([]uds.NamespacePolicy, bool, error) {
			return a.store.Policies(r.Context(), app, after, limit)
		},
		func(np uds.NamespacePolicy) (any, string) {
			return policyBody(app, np.Namespace, np.Policy, a.now()), np.Namespace
		})
}

// maxPolicyBody bounds a policy body: a schema of at most 64 KB, compacted,
// with room for formatting.
const maxPolicyBody = 4 * policy.MaxSchemaBytes

// readPolicy reads and parses a policy body (parsePolicy).
func (a *API) readPolicy(r *http.Request) (uds.Policy, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxPolicyBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return uds.Policy{}, &uds.TooLargeError{Reason: "a policy body takes at most 256 KB, and its schema at most 64 KB"}
	case err != nil:
		return uds.Policy{}, uds.Invalid("body", "could not be read")
	}
	return parsePolicy(body, a.schemas)
}

// parsePolicy parses {"access": ..., "schema": {...} | null} and compiles
// the schema through schemas, so that one that cannot be used is refused
// now rather than at the first write.
func parsePolicy(body []byte, schemas *policy.Cache) (uds.Policy, error) {
	var b struct {
		Access *string          `json:"access"`
		Schema *json.RawMessage `json:"schema"`
	}
	if err := decodeBody(body, &b, `{"access": "shared" | "private" | "owner-write", "schema": {...} | null}`); err != nil {
		return uds.Policy{}, err
	}
	if b.Access == nil {
		return uds.Policy{}, uds.Invalid("access", `is required: "shared", "private" or "owner-write"`)
	}
	var pol uds.Policy
	var err error
	if pol.Access, err = uds.ParseAccess(*b.Access); err != nil {
		return pol, err
	}
	if b.Schema == nil || string(*b.Schema) == "null" {
		return pol, nil
	}
	// decodeStrict compacted the body, the schema with it.
	pol.Schema = *b.Schema
	if _, err := schemas.Schema(pol.Schema); err != nil {
		return pol, err
	}
	return pol, nil
}
