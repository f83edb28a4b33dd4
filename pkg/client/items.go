package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// Key names a key-value item (SortKey empty), a list (SortKey empty, with
// the list methods) or a list item.
type Key struct {
	App       string // the application's UUID
	Namespace string
	ID        string
	SortKey   string
}

// reservedSortKey is the sort key the API keeps for the list itself:
// .../{id}/list names the list, not an item.
const reservedSortKey = "list"

// checkItem refuses, before anything is sent, a key whose path would name
// something other than its item: with an empty app, namespace or id the
// path names another route (a namespace's query, a list's page), and the
// sort key "list" names the whole list, so that a Delete of it would
// delete every item of the list.
func (k Key) checkItem() error {
	switch {
	case k.App == "" || k.Namespace == "" || k.ID == "":
		return invalid("a key names its item by app, namespace and id, and none of them may be empty (app %q, namespace %q, id %q)", k.App, k.Namespace, k.ID)
	case k.SortKey == reservedSortKey:
		return invalid("the sort key %q is reserved for the list itself, and no item has it; List and DeleteList read and delete a list", reservedSortKey)
	}
	return nil
}

// checkList refuses a list's key that would name something else: the
// list is its app, namespace and id, and a sort key would make the path
// name an item.
func (k Key) checkList() error {
	switch {
	case k.App == "" || k.Namespace == "" || k.ID == "":
		return invalid("a list is named by app, namespace and id, and none of them may be empty (app %q, namespace %q, id %q)", k.App, k.Namespace, k.ID)
	case k.SortKey != "":
		return invalid("a list's key has no sort key (it has %q); to read or delete one item of the list, use Get or Delete", k.SortKey)
	}
	return nil
}

// path is the key's route below basePath.
func (k Key) path() string {
	p := "/data/" + url.PathEscape(k.App) + "/" + url.PathEscape(k.Namespace) + "/" + url.PathEscape(k.ID)
	if k.SortKey != "" {
		p += "/" + url.PathEscape(k.SortKey)
	}
	return p
}

// Item is a stored item as the API returns it, with its ETag (which the
// API sends as a header; encoded as "etag").
//
// Its value is JSON (Data) or bytes: then ContentType names their type
// and Size counts them, and Bytes holds them where the answer carried
// them (list pages, batch reads and Get answer a small value's bytes;
// write answers and GetBytes do not). A large value (over MaxInlineBytes,
// kept in S3) is read with GetBytes.
type Item struct {
	ApplicationUUID string          `json:"applicationUuid"`
	Namespace       string          `json:"namespace"`
	ID              string          `json:"id"`
	SortKey         string          `json:"sortKey,omitempty"`
	Data            json.RawMessage `json:"data,omitempty"`
	ContentType     string          `json:"contentType,omitempty"`
	// Size is omitted from the JSON when it is 0, an empty value's.
	Size  int64 `json:"size,omitempty"`
	Large bool  `json:"large,omitempty"`
	// Bytes is the API's dataBase64, decoded; encoded back as it came
	// (empty, for an empty value, is not left out).
	Bytes            []byte    `json:"dataBase64,omitzero"`
	ClassName        string    `json:"className,omitempty"`
	CreatedDate      time.Time `json:"createdDate,omitzero"`
	CreatedBySubject string    `json:"createdBySubject,omitempty"`
	UpdatedDate      time.Time `json:"updatedDate,omitzero"`
	UpdatedBySubject string    `json:"updatedBySubject,omitempty"`
	Version          int64     `json:"version"`
	ExpiresAt        time.Time `json:"expiresAt,omitzero"`
	// ETag is the item's revision, for IfMatch and IfNoneMatch.
	ETag string `json:"etag,omitempty"`
}

// Decode unmarshals the item's data into v.
func (it Item) Decode(v any) error {
	if it.IsBinary() {
		return fmt.Errorf("the item's value is bytes of type %q, not JSON", it.ContentType)
	}
	return json.Unmarshal(it.Data, v)
}

// IsBinary reports whether the item's value is bytes rather than JSON.
func (it Item) IsBinary() bool { return it.ContentType != "" || it.Large }

// CallOption adjusts one call: preconditions on item routes, and what a
// write stores beside its data.
type CallOption func(*callOptions)

type callOptions struct {
	ifMatch, ifNoneMatch string
	className            *string
	ttl                  time.Duration
	expiresAt            time.Time
	progress             func(done, total int64)
}

// IfMatch makes an update or delete conditional on the item being at the
// revision etag names ("*": any revision, the item must exist); otherwise
// it fails with ErrPreconditionFailed.
func IfMatch(etag string) CallOption { return func(o *callOptions) { o.ifMatch = etag } }

// IfNoneMatch makes a read answer ErrNotModified when the item is still at
// the revision etag names.
func IfNoneMatch(etag string) CallOption { return func(o *callOptions) { o.ifNoneMatch = etag } }

// ClassName stores a type name beside the data.
func ClassName(name string) CallOption { return func(o *callOptions) { o.className = &name } }

// TTL makes the written item expire after d (whole seconds, at least one).
func TTL(d time.Duration) CallOption { return func(o *callOptions) { o.ttl = d } }

// ExpiresAt makes the written item expire at t.
func ExpiresAt(t time.Time) CallOption { return func(o *callOptions) { o.expiresAt = t } }

func collect(opts []CallOption) callOptions {
	var o callOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

func (o callOptions) header() http.Header {
	h := http.Header{}
	if o.ifMatch != "" {
		h.Set("If-Match", o.ifMatch)
	}
	if o.ifNoneMatch != "" {
		h.Set("If-None-Match", o.ifNoneMatch)
	}
	return h
}

// fieldHeaders sets the headers that carry the fields a write stores
// beside its value, where the body is the value (bytes) or a patch.
func (o callOptions) fieldHeaders(h http.Header) {
	if o.className != nil {
		h.Set("Uds-Class-Name", uds.HeaderText(*o.className))
	}
	ttl, expiresAt := o.expiry()
	if ttl > 0 {
		h.Set("Uds-Ttl", strconv.FormatInt(ttl, 10))
	}
	if expiresAt != "" {
		h.Set("Uds-Expires-At", expiresAt)
	}
}

// writeBody is the body of a create or update.
func (o callOptions) writeBody(data any) ([]byte, error) {
	raw, err := marshalData(data)
	if err != nil {
		return nil, err
	}
	ttl, expiresAt := o.expiry()
	return jsonBody(struct {
		Data      json.RawMessage `json:"data"`
		ClassName *string         `json:"className,omitempty"`
		TTL       int64           `json:"ttl,omitempty"`
		ExpiresAt string          `json:"expiresAt,omitempty"`
	}{Data: raw, ClassName: o.className, TTL: ttl, ExpiresAt: expiresAt})
}

// expiry is the TTL and ExpiresAt options as a write sends them: whole
// seconds (rounded up; 0 for none) and RFC 3339 ("" for none).
func (o callOptions) expiry() (ttl int64, expiresAt string) {
	if o.ttl > 0 {
		ttl = int64((o.ttl + time.Second - 1) / time.Second)
	}
	if !o.expiresAt.IsZero() {
		expiresAt = o.expiresAt.UTC().Format(time.RFC3339Nano)
	}
	return ttl, expiresAt
}

// marshalData encodes data, taking json.RawMessage and []byte as JSON
// text already.
func marshalData(data any) (json.RawMessage, error) {
	switch d := data.(type) {
	case json.RawMessage:
		return d, nil
	case []byte:
		return d, nil
	}
	return jsonBody(data)
}

// Get reads an item. With IfNoneMatch it may fail with ErrNotModified.
// An item of bytes comes with its metadata and, if it is small, its
// bytes; of a large one (Large), GetBytes reads the bytes.
func (c *Client) Get(ctx context.Context, k Key, opts ...CallOption) (Item, error) {
	o := collect(opts)
	return c.read(ctx, k, request{method: http.MethodGet, path: k.path(), refused: k.checkItem(), header: o.header(), retry: always})
}

// read reads an item, whose value the API answers as JSON or, for bytes,
// as the body with the item's fields in headers (a large value's as a
// redirect to S3, not followed).
func (c *Client) read(ctx context.Context, k Key, r request) (Item, error) {
	res, err := c.do(ctx, r, http.StatusOK, http.StatusFound)
	if err != nil {
		return Item{}, err
	}
	if res.status == http.StatusOK && !bytesInBody(res.header) {
		var it Item
		if err := json.Unmarshal(res.body, &it); err != nil {
			return Item{}, fmt.Errorf("%s %s answered %d with a body that is not the expected JSON: %w", r.method, r.path, res.status, err)
		}
		it.ETag = res.header.Get("ETag")
		return it, nil
	}
	it := itemFromHeaders(k, res.header)
	if res.status == http.StatusFound {
		largeFromHeaders(&it, res.header)
		return it, nil
	}
	it.Bytes, it.Size = res.body, int64(len(res.body))
	return it, nil
}

// Create stores a new item: ErrConflict if the key is taken, ErrQuotaExceeded
// if it would take the caller past a limit. data is encoded with
// encoding/json (json.RawMessage and []byte are sent as they are).
func (c *Client) Create(ctx context.Context, k Key, data any, opts ...CallOption) (Item, error) {
	return c.write(ctx, http.MethodPost, k, data, collect(opts), unsent, http.StatusCreated)
}

// Update replaces an item's data: ErrNotFound if there is none; with
// IfMatch, ErrPreconditionFailed if it is at another revision.
//
// Without IfMatch an update is sent again only when it certainly did not
// reach UDS, as a create is: a repeat of one that took effect would bump
// the version again and could overwrite a write made in between. With
// IfMatch it is also retried after a 502, 503, 504 or a lost connection;
// a repeat of one that took effect then fails with ErrPreconditionFailed.
func (c *Client) Update(ctx context.Context, k Key, data any, opts ...CallOption) (Item, error) {
	o := collect(opts)
	return c.write(ctx, http.MethodPut, k, data, o, o.writeRetry(), http.StatusOK)
}

// writeRetry is how a write that replaces an item's current version
// (Update, Restore) is retried, as Update says.
func (o callOptions) writeRetry() retry {
	if o.ifMatch != "" {
		return always
	}
	return unsent
}

func (c *Client) write(ctx context.Context, method string, k Key, data any, o callOptions, r retry, status int) (Item, error) {
	body, err := o.writeBody(data)
	if err != nil {
		return Item{}, err
	}
	return c.item(ctx, request{method: method, path: k.path(), refused: k.checkItem(), body: body, header: o.header(), retry: r}, status)
}

func (c *Client) item(ctx context.Context, r request, status ...int) (Item, error) {
	var it Item
	res, err := c.call(ctx, r, &it, status...)
	it.ETag = res.header.Get("ETag")
	return it, err
}

// Delete removes an item; deleting one that is not there succeeds. With
// IfMatch it fails with ErrPreconditionFailed unless the item is at that
// revision.
func (c *Client) Delete(ctx context.Context, k Key, opts ...CallOption) error {
	o := collect(opts)
	_, err := c.do(ctx, request{method: http.MethodDelete, path: k.path(), refused: k.checkItem(), header: o.header(), retry: always}, http.StatusNoContent)
	return err
}

// Quota is an owner's usage in an app beside the limits in effect (nil:
// unlimited).
type Quota struct {
	ApplicationUUID string `json:"applicationUuid"`
	User            string `json:"user"`
	UsedBytes       int64  `json:"usedBytes"`
	UsedItems       int64  `json:"usedItems"`
	// HistoryBytes is the part of UsedBytes that the owner's kept versions
	// hold (they count in bytes, not in items).
	HistoryBytes int64  `json:"historyBytes"`
	LimitBytes   *int64 `json:"limitBytes"`
	LimitItems   *int64 `json:"limitItems"`
}

// Quota reads the caller's own usage and limits in app.
func (c *Client) Quota(ctx context.Context, app string) (Quota, error) {
	var q Quota
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/data/" + url.PathEscape(app) + "/quota", retry: always}, &q, http.StatusOK)
	return q, err
}

// limitQuery is the query of a page of a listing.
func limitQuery(cursor string, limit int) url.Values {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q
}
