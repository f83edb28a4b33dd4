package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// The media types of the two patch documents UDS takes.
const (
	MergePatchType = "application/merge-patch+json"
	JSONPatchType  = "application/json-patch+json"
)

// PatchOp is one operation of a JSON Patch (RFC 6902): Op is add, remove,
// replace, move, copy or test; Path (and From, for move and copy) are JSON
// Pointers into the item's data; Value is an add's, replace's or test's
// value, encoded with encoding/json (json.RawMessage as it is; nil is
// JSON null for the operations that take a value).
type PatchOp struct {
	Op    string
	Path  string
	From  string
	Value any
}

// MarshalJSON encodes the operation as RFC 6902 writes it: from only for
// move and copy, value only (and always) for add, replace and test.
func (op PatchOp) MarshalJSON() ([]byte, error) {
	out := map[string]any{"op": op.Op, "path": op.Path}
	switch op.Op {
	case "move", "copy":
		out["from"] = op.From
	case "add", "replace", "test":
		out["value"] = op.Value
	}
	return json.Marshal(out)
}

// PatchOperation names the JSON Patch operation that did not apply (an
// *APIError of ErrConflict from Patch): its index in the patch, its op
// and its path.
type PatchOperation struct {
	Index int    `json:"index"`
	Op    string `json:"op"`
	Path  string `json:"path"`
}

// Patch applies a JSON Patch to the item's data: patch is a []PatchOp, or
// the document as JSON text (json.RawMessage or []byte, as read from a
// file), sent as it is. Every operation applies or none,
// on the item as it is when the write commits, so that concurrent patches
// of different members need no IfMatch to keep one another. It fails with
// ErrNotFound if there is no item, ErrConflict if an operation does not
// apply (a test that fails, a path that is missing: the *APIError's
// PatchOperation names it) or the value is bytes, ErrSchema if the result
// breaks the namespace's JSON Schema. The class name and expiry stay the
// item's unless ClassName, TTL or ExpiresAt set them. It is sent again as
// Update is: without IfMatch only when it certainly did not reach UDS.
func (c *Client) Patch(ctx context.Context, k Key, patch any, opts ...CallOption) (Item, error) {
	return c.patch(ctx, k, JSONPatchType, patch, opts)
}

// MergePatch applies a JSON Merge Patch (RFC 7396) to the item's data: an
// object's members replace the item's, a null removes one, and members
// the patch does not name keep their bytes. patch is encoded as data is
// by Create (json.RawMessage and []byte as they are). Otherwise it is
// Patch.
func (c *Client) MergePatch(ctx context.Context, k Key, patch any, opts ...CallOption) (Item, error) {
	return c.patch(ctx, k, MergePatchType, patch, opts)
}

func (c *Client) patch(ctx context.Context, k Key, contentType string, patch any, opts []CallOption) (Item, error) {
	o := collect(opts)
	body, err := marshalData(patch)
	if err != nil {
		return Item{}, err
	}
	h := o.header()
	o.fieldHeaders(h)
	return c.item(ctx, request{method: http.MethodPatch, path: k.path(), refused: k.checkItem(), body: body, contentType: contentType, header: h, retry: o.writeRetry()}, http.StatusOK)
}

// PatchItem is the batch operation that applies a JSON Patch to k, as
// Patch does (the IfMatch option applies; a batch keeps the item's class
// name and expiry).
func PatchItem(k Key, patch any, opts ...CallOption) BatchOp {
	return BatchOp{Method: http.MethodPatch, Key: k, Data: patch, Options: opts, patchType: JSONPatchType}
}

// MergePatchItem is the batch operation that applies a JSON Merge Patch
// to k, as MergePatch does.
func MergePatchItem(k Key, patch any, opts ...CallOption) BatchOp {
	return BatchOp{Method: http.MethodPatch, Key: k, Data: patch, Options: opts, patchType: MergePatchType}
}
