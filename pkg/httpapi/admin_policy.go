package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/udsproject/uds/pkg/policy"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// PolicyStore reads and sets namespaces' policies, for the admin routes.
type PolicyStore interface {
	StoredPolicy(ctx context.Context, app, namespace string) (uds.Policy, error)
	SetPolicy(ctx context.Context, app, namespace string, p uds.Policy) (uds.Policy, error)
	Policies(ctx context.Context, app, after string, limit int, held bool) ([]uds.NamespacePolicy, bool, error)
}

// policyJSON is a namespace's policy as the admin routes show it; a
// namespace without one shows the defaults at version 0.
type policyJSON struct {
	ApplicationUUID string          `json:"applicationUuid"`
	Namespace       string          `json:"namespace"`
	Access          uds.Access      `json:"access"`
	Schema          json.RawMessage `json:"schema"`
	// History is shown while the namespace keeps versions, and left out
	// otherwise, as pending is.
	History *historyJSON `json:"history,omitempty"`
	// Indexes and IndexBuild are shown while the namespace declares
	// indexes, or a build is under way.
	Indexes    []indexJSON     `json:"indexes,omitempty"`
	IndexBuild *indexBuildJSON `json:"indexBuild,omitempty"`
	// Binary is shown while the namespace has a binary rule.
	Binary      *binaryRuleJSON `json:"binary,omitempty"`
	Version     int64           `json:"version"`
	UpdatedDate string          `json:"updatedDate,omitempty"`
	// Pending is a change into or out of private under way.
	Pending *pendingJSON `json:"pending,omitempty"`
	// Policy says, in a listing, whether the namespace has a policy of
	// its own; one without shows the defaults.
	Policy *bool `json:"policy,omitempty"`
	// HeldSince is when the namespace first held data, where the
	// catalogue marked it.
	HeldSince string `json:"heldSince,omitempty"`
}

// historyJSON is a history policy as the admin routes show it: days is
// left out when kept versions have no age limit.
type historyJSON struct {
	Versions int `json:"versions"`
	Days     int `json:"days,omitempty"`
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
	if p.History.On() {
		j.History = &historyJSON{Versions: p.History.Versions, Days: p.History.Days}
	}
	j.Indexes, j.IndexBuild = indexesBody(p)
	j.Binary = binaryRuleShown(p.Binary)
	if c := p.Changing(now); c != nil {
		j.Pending = &pendingJSON{Access: c.Target().Mode(), Schema: orNull(c.Schema), Since: store.FormatTime(c.Since),
			SettlesAt: store.FormatTime(c.SettlesAt), LapsesAt: store.FormatTime(c.LapsesAt)}
	}
	if !p.HeldSince.IsZero() {
		j.HeldSince = store.FormatTime(p.HeldSince)
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
	pol, err = a.stores.Policies.StoredPolicy(r.Context(), app, namespace)
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

// deletePolicy restores the defaults: shared, without a schema or history.
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
	pol, err := a.stores.Policies.SetPolicy(r.Context(), app, namespace, pol)
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

// listPolicies lists the policies set in an app, by namespace; with
// include=held, the namespaces that hold data without one too.
func (a *API) listPolicies(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	var held bool
	if err == nil {
		var q url.Values
		if q, err = query(r); err == nil {
			held, err = includeHeld(q)
		}
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	page(a, w, r, "namespaces", "namespaces\x00"+app,
		func(after string, limit int) ([]uds.NamespacePolicy, bool, error) {
			return a.stores.Policies.Policies(r.Context(), app, after, limit, held)
		},
		func(np uds.NamespacePolicy) (any, string) {
			body := policyBody(app, np.Namespace, np.Policy, a.now())
			body.Policy = &np.Set
			return body, np.Namespace
		})
}

// maxPolicyBody bounds a policy body: a schema of at most 64 KB, compacted,
// with room for formatting.
const maxPolicyBody = 4 * policy.MaxSchemaBytes

// readPolicy reads and parses a policy body (parsePolicy).
func (a *API) readPolicy(r *http.Request) (uds.Policy, error) {
	body, err := readBody(r, maxPolicyBody, "a policy body takes at most 256 KB, and its schema at most 64 KB")
	if err != nil {
		return uds.Policy{}, err
	}
	return parsePolicy(body, a.schemas)
}

// policyShape is the policy body, as a refusal of its form describes it.
const policyShape = `{"access": "shared" | "private" | "owner-write", "schema": {...} | null, "history": {"versions": n, "days": n} | null, "indexes": [{"name": "...", "path": "/json/pointer", "type": "string" | "number"}, ...] | null, "binary": {"contentTypes": ["image/png", "image/*", ...], "maxBytes": n} | null}`

// parsePolicy parses {"access": ..., "schema": {...} | null, "history":
// {...} | null, "indexes": [...] | null, "binary": {...} | null}, compiles
// the schema through schemas, so that one that cannot be used is refused
// now rather than at the first write, and checks the history
// (historyBody.parse), the indexes (parseIndexes) and the binary rule
// (binaryRuleBody.parse).
func parsePolicy(body []byte, schemas *policy.Cache) (uds.Policy, error) {
	var b struct {
		Access  *string          `json:"access"`
		Schema  *json.RawMessage `json:"schema"`
		History *historyBody     `json:"history"`
		Indexes *[]indexBody     `json:"indexes"`
		Binary  *binaryRuleBody  `json:"binary"`
	}
	if err := decodeBody(body, &b, policyShape); err != nil {
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
	if b.History != nil {
		if pol.History, err = b.History.parse(); err != nil {
			return pol, err
		}
	}
	if b.Indexes != nil {
		if pol.Indexes, err = parseIndexes(*b.Indexes); err != nil {
			return pol, err
		}
	}
	if b.Binary != nil {
		if pol.Binary, err = b.Binary.parse(); err != nil {
			return pol, err
		}
	}
	if b.Schema == nil || string(*b.Schema) == "null" {
		return pol, nil
	}
	// decodeStrict compacted the body, the schema with it.
	pol.Schema = *b.Schema
	compiled, err := schemas.Schema(pol.Schema)
	if err != nil {
		return pol, err
	}
	return pol, compiled.CheckApplies()
}

// historyBody is a policy body's history member. Its numbers are read as
// sent: as an int, encoding/json would refuse 1.5 with a message naming
// the body rather than the member; as a json.Number, it would take "5".
type historyBody struct {
	Versions json.RawMessage `json:"versions"`
	Days     json.RawMessage `json:"days"`
}

// parse checks a history: versions is required, 0 (no history) to
// uds.MaxHistoryVersions; days is optional, 1 to uds.MaxHistoryDays, its
// absence or null meaning no age limit, and refused when there are no
// versions to age. A days of 0 is refused rather than read as no age
// limit: it reads as "keep for no days", the opposite of what it would
// do, and the range the contract states starts at 1.
func (h *historyBody) parse() (uds.History, error) {
	var out uds.History
	if !present(h.Versions) {
		return out, uds.Invalid("history.versions", "is required: a whole number from 1 to %d, or 0 for no history", uds.MaxHistoryVersions)
	}
	var err error
	if out.Versions, err = historyNumber("history.versions", h.Versions, 0, uds.MaxHistoryVersions, "or 0 for no history"); err != nil {
		return out, err
	}
	if present(h.Days) {
		if out.Days, err = historyNumber("history.days", h.Days, 1, uds.MaxHistoryDays, "or absent for no age limit"); err != nil {
			return out, err
		}
	}
	if !out.On() && out.Days != 0 {
		return out, uds.Invalid("history.days", "applies only with history.versions 1 or more: a namespace without history keeps no versions to age")
	}
	return out, nil
}

// present reports whether an optional member was given and not null.
func present(raw json.RawMessage) bool { return raw != nil && string(raw) != "null" }

// historyNumber reads a member of a history as sent: a whole number from
// least to limit, written as one (not 1.0, 1e2 or "1"); a refusal names
// the range from 1 and what else the member takes (otherwise).
func historyNumber(field string, raw json.RawMessage, least, limit int, otherwise string) (int, error) {
	n, err := strconv.Atoi(string(raw))
	if err != nil || n < least || n > limit {
		return 0, uds.Invalid(field, "must be a whole number from 1 to %d, %s; got %s", limit, otherwise, uds.Truncate(string(raw), 64))
	}
	return n, nil
}
