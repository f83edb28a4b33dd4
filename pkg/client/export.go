package client

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
)

// Record is one item of an export, or a version its namespace's history
// kept (KeptAt set; a delete marker has Deleted and no Data), as the
// server writes it; import takes it back. Fields keep the server's text
// (dates and base64 included), so a record decoded and encoded again
// gives the same bytes. A value of bytes has ContentType and Size in place
// of Data, and DataBase64 (a small one) or Large (one kept in S3, which an
// import does not take: upload it again with PutBytes). A record of a
// user's export (ExportUserPage) also names its app (ApplicationUUID) and,
// for a large value, a link to its bytes (DownloadURL); an import reads
// both and writes the record into the app it is sent to.
type Record struct {
	ApplicationUUID  string          `json:"applicationUuid,omitempty"`
	Namespace        string          `json:"namespace"`
	ID               string          `json:"id"`
	SortKey          string          `json:"sortKey,omitempty"`
	Private          bool            `json:"private,omitempty"`
	Owner            string          `json:"owner"`
	Data             json.RawMessage `json:"data,omitempty"`
	ContentType      string          `json:"contentType,omitempty"`
	Size             *int64          `json:"size,omitempty"`
	Large            bool            `json:"large,omitempty"`
	DownloadURL      string          `json:"downloadUrl,omitempty"`
	DataBase64       *string         `json:"dataBase64,omitempty"`
	ClassName        string          `json:"className,omitempty"`
	CreatedDate      string          `json:"createdDate,omitempty"`
	CreatedBySubject string          `json:"createdBySubject"`
	UpdatedDate      string          `json:"updatedDate,omitempty"`
	UpdatedBySubject string          `json:"updatedBySubject"`
	Version          int64           `json:"version"`
	ExpiresAt        string          `json:"expiresAt,omitempty"`
	KeptAt           string          `json:"keptAt,omitempty"`
	Deleted          bool            `json:"deleted,omitempty"`
}

// ExportOption changes what an export carries.
type ExportOption func(url.Values)

// WithoutHistory leaves kept versions and delete markers out of an
// export; by default it carries them after each owner's items.
func WithoutHistory() ExportOption { return func(q url.Values) { q.Set("history", "false") } }

// InNamespace exports one namespace's records (every owner's, in every
// key space) rather than the whole app's. It still reads each owner's
// index entries, so it is no cheaper than the whole export to the tables.
func InNamespace(namespace string) ExportOption {
	return func(q url.Values) { q.Set("namespace", namespace) }
}

// MaxImportRecords is the most records one import request takes.
const MaxImportRecords = 1000

// MaxImportBytes is the most JSON one import request takes: its records'
// RecordBytes added up. Import sends the body gzip compressed, and on
// Lambda a compressed body travels base64 encoded, so the event carries 4/3
// of the compressed size; gzip never makes JSON more than a few bytes per
// 64 KB larger, however little it compresses. 4.5 MB thus stays within
// Lambda's 6 MB request whatever the records hold (a plain body would have
// every quote and backslash escaped once more in the event), with room
// for the event's other fields, and within the server's 6 MiB limit on
// the expanded body.
const MaxImportBytes = 4_500_000

// RecordBytes is what rec adds to the JSON of an import request.
func RecordBytes(rec Record) (int, error) {
	b, err := jsonBody(rec)
	return len(b) + 1, err // and the comma that follows it
}

// ExportPage reads the page of app's records after cursor ("" for the
// first; limit 0: the server's 1000) and the cursor of the next page (""
// after the last).
func (c *Client) ExportPage(ctx context.Context, app, cursor string, limit int, opts ...ExportOption) ([]Record, string, error) {
	var p struct {
		Records []Record `json:"records"`
		Cursor  string   `json:"cursor"`
	}
	q := limitQuery(cursor, limit)
	for _, o := range opts {
		o(q)
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: adminApp(app) + "/export", query: q, retry: always}, &p, http.StatusOK)
	return p.Records, p.Cursor, err
}

// Export iterates over every record of app: owner by owner, each owner's
// key-value items, then list items, then (unless WithoutHistory) the
// versions their histories kept.
func (c *Client) Export(ctx context.Context, app string, opts ...ExportOption) iter.Seq2[Record, error] {
	return pages(ctx, func(ctx context.Context, cursor string) ([]Record, string, error) {
		return c.ExportPage(ctx, app, cursor, 0, opts...)
	})
}

// UserExportPage is one page of a user's export: the apps it begins, each
// with the user's usage and overrides there, and the user's records, app by
// app; Cursor is "" after the last page.
type UserExportPage struct {
	Apps    []UserApp `json:"apps"`
	Records []Record  `json:"records"`
	Cursor  string    `json:"cursor,omitempty"`
}

// UserApp is what a user's usage record in one app holds: usage, and the
// limits (0: not set, -1: unlimited) and caller rate limit (nil: not set)
// an operator set for them there, as SetUserLimits and SetUserRateLimits
// take them.
type UserApp struct {
	ApplicationUUID string `json:"applicationUuid"`
	UsedBytes       int64  `json:"usedBytes"`
	UsedItems       int64  `json:"usedItems"`
	HistoryBytes    int64  `json:"historyBytes"`
	LimitBytes      int64  `json:"limitBytes"`
	LimitItems      int64  `json:"limitItems"`
	PerCaller       *Rate  `json:"perCaller"`
}

// ExportUserPage reads the page of everything user stores, in every app,
// after cursor ("" for the first; limit 0: the server's 1000).
func (c *Client) ExportUserPage(ctx context.Context, user, cursor string, limit int) (UserExportPage, error) {
	var p UserExportPage
	_, err := c.call(ctx, request{method: http.MethodGet, path: acrossApps(user) + "/export", query: limitQuery(cursor, limit), retry: always}, &p, http.StatusOK)
	return p, err
}

// Download writes the bytes of a large value of a user's export (its
// record's DownloadURL, valid one hour) to w, and answers how many.
func (c *Client) Download(ctx context.Context, downloadURL string, w io.Writer, opts ...CallOption) (int64, error) {
	var it Item
	err := c.download(ctx, downloadURL, w, &it, collect(opts))
	return it.Size, err
}

// ImportResult says what an import did with its records.
type ImportResult struct {
	Imported  int        `json:"imported"`
	Skipped   int        `json:"skipped"`
	Expired   int        `json:"expired"`
	Conflicts []Conflict `json:"conflicts"`
	// NotImported are the records left out, each with why, while the
	// others were written: a large value's, whose bytes are in the
	// exporting deployment's bucket.
	NotImported []NotImported `json:"notImported"`
}

// NotImported is a record an import left out. Index is the record's place
// in the request.
type NotImported struct {
	Index     int    `json:"index"`
	Namespace string `json:"namespace"`
	ID        string `json:"id"`
	SortKey   string `json:"sortKey,omitempty"`
	Reason    string `json:"reason"`
}

// Conflict is a record that was not imported because a different item, at
// Version, holds its key. Index is the record's place in the request.
type Conflict struct {
	Index     int    `json:"index"`
	Namespace string `json:"namespace"`
	ID        string `json:"id"`
	SortKey   string `json:"sortKey,omitempty"`
	Version   int64  `json:"version"`
}

// Import writes records into app: at most MaxImportRecords records and
// MaxImportBytes of JSON (more fails before anything is sent). Records
// already present and identical are skipped, so an import may be
// repeated: it is retried like a read.
func (c *Client) Import(ctx context.Context, app string, records []Record) (ImportResult, error) {
	body, err := importBody(records)
	if err != nil {
		return ImportResult{}, err
	}
	var r ImportResult
	_, err = c.call(ctx, request{
		method: http.MethodPost, path: adminApp(app) + "/import", body: body,
		header: http.Header{"Content-Encoding": {"gzip"}}, retry: always,
	}, &r, http.StatusOK)
	return r, err
}

// importBody is the body of an import request, {"records": [...]}, gzip
// compressed.
func importBody(records []Record) ([]byte, error) {
	var js bytes.Buffer
	js.WriteString(`{"records":[`)
	size := 0
	for i, rec := range records {
		b, err := jsonBody(rec)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			js.WriteByte(',')
		}
		js.Write(b)
		size += len(b) + 1 // as RecordBytes counts it
	}
	js.WriteString("]}")
	if size > MaxImportBytes {
		return nil, fmt.Errorf("%d records take %d bytes of JSON, more than one import request takes (MaxImportBytes, %d): send fewer at a time", len(records), size, MaxImportBytes)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	// Writes to a bytes.Buffer cannot fail.
	_, _ = zw.Write(js.Bytes())
	_ = zw.Close()
	return z.Bytes(), nil
}
