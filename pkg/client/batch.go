package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// BatchOp is one operation of a batch: Method GET, POST, PUT or DELETE on
// Key (whose App must be the batch's), Data for POST and PUT, and the
// options a single call would take (IfMatch, IfNoneMatch, ClassName, TTL,
// ExpiresAt). ReadVersion and RestoreVersion make the operations that
// read and restore a kept version, PatchItem and MergePatchItem the ones
// that patch an item.
type BatchOp struct {
	Method  string
	Key     Key
	Data    any
	Options []CallOption
	// version is the kept version a GET reads or a POST restores.
	version *int64
	// patchType is the type of a PATCH's patch document, which Data
	// holds.
	patchType string
}

// ReadVersion is the batch operation that reads version of k, as
// GetVersion does (the IfNoneMatch option applies).
func ReadVersion(k Key, version int64, opts ...CallOption) BatchOp {
	return BatchOp{Method: http.MethodGet, Key: k, Options: opts, version: &version}
}

// RestoreVersion is the batch operation that restores version of k, as
// Restore does (the IfMatch option applies): its slot answers 200 for an
// update, 201 when it brought a deleted item back. In an atomic batch it
// is all or none with the other writes.
func RestoreVersion(k Key, version int64, opts ...CallOption) BatchOp {
	return BatchOp{Method: http.MethodPost, Key: k, Options: opts, version: &version}
}

// BatchResult is what the operation's own route answered: its status,
// ETag and body (the item, or an error body).
type BatchResult struct {
	Status int             `json:"status"`
	ETag   string          `json:"etag,omitempty"`
	Body   json.RawMessage `json:"body,omitempty"`
	// BodyOmitted marks a write whose body did not fit the answer; it
	// happened (see Status and ETag).
	BodyOmitted bool `json:"bodyOmitted,omitempty"`
}

// Item decodes the result's body as an item.
func (r BatchResult) Item() (Item, error) {
	var it Item
	err := json.Unmarshal(r.Body, &it)
	it.ETag = r.ETag
	return it, err
}

// Batch applies operations in one request: one by one (up to 100, each
// answered in its slot as its own route would answer), or atomic (up to
// 50 writes, all or none: a refusal is an *APIError whose FailedIndex
// names the operation). A batch is sent again only when it certainly did
// not reach UDS.
func (c *Client) Batch(ctx context.Context, app string, atomic bool, ops []BatchOp) ([]BatchResult, error) {
	type opJSON struct {
		Method      string          `json:"method"`
		Path        string          `json:"path"`
		Body        json.RawMessage `json:"body,omitempty"`
		IfMatch     string          `json:"ifMatch,omitempty"`
		IfNoneMatch string          `json:"ifNoneMatch,omitempty"`
		ContentType string          `json:"contentType,omitempty"`
	}
	body := struct {
		Atomic     bool     `json:"atomic"`
		Operations []opJSON `json:"operations"`
	}{Atomic: atomic, Operations: make([]opJSON, len(ops))}
	for i, op := range ops {
		if op.Key.App != app {
			// The operation's path names no app: sent, it would write
			// in the batch's.
			return nil, invalid("operation %d names app %q, and the batch is of app %q: a batch writes in one app", i, op.Key.App, app)
		}
		o := collect(op.Options)
		j := opJSON{Method: op.Method, IfMatch: o.ifMatch, IfNoneMatch: o.ifNoneMatch}
		j.Path = url.PathEscape(op.Key.Namespace) + "/" + url.PathEscape(op.Key.ID)
		if op.Key.SortKey != "" {
			j.Path += "/" + url.PathEscape(op.Key.SortKey)
		}
		switch {
		case op.version != nil:
			query := map[string]string{http.MethodGet: "version", http.MethodPost: "restore"}[op.Method]
			j.Path += "?" + query + "=" + strconv.FormatInt(*op.version, 10)
		case op.Method == http.MethodPost || op.Method == http.MethodPut:
			b, err := o.writeBody(op.Data)
			if err != nil {
				return nil, err
			}
			j.Body = b
		case op.Method == http.MethodPatch:
			b, err := marshalData(op.Data)
			if err != nil {
				return nil, err
			}
			j.Body, j.ContentType = b, op.patchType
		}
		body.Operations[i] = j
	}
	b, err := jsonBody(body)
	if err != nil {
		return nil, err
	}
	var out struct {
		Results []BatchResult `json:"results"`
	}
	_, err = c.call(ctx, request{method: http.MethodPost, path: "/data/" + url.PathEscape(app) + "/batch", body: b, retry: unsent}, &out, http.StatusOK)
	return out.Results, err
}
