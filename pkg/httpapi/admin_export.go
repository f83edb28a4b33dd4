package httpapi

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// TransferStore exports an app's data, or a user's in every app, and
// imports an app's.
type TransferStore interface {
	Export(context.Context, store.ExportQuery) (store.ExportPage, error)
	ExportUser(context.Context, store.UserExportQuery) (store.UserExportPage, error)
	Import(ctx context.Context, app string, records []uds.Record) (uds.ImportResult, error)
}

// Export and import of an app's data: GET .../admin/apps/{app}/export
// pages through every owner's items, and POST .../admin/apps/{app}/import
// writes such records back. Records name no app, so an export can also be
// imported into another app.

// recordJSON is one exported item, or a version an item's history kept
// (keptAt set; a delete marker has deleted and no data). Field order is
// part of the format: an export, imported and exported again, gives the
// same bytes.
type recordJSON struct {
	// ApplicationUUID names the app of a record of a user's export
	// (admin_export_user.go), which spans apps; an app's export leaves it
	// out. An import writes records into the app its path names, so it
	// reads this member and writes nothing of it.
	ApplicationUUID string          `json:"applicationUuid,omitempty"`
	Namespace       string          `json:"namespace"`
	ID              string          `json:"id"`
	SortKey         string          `json:"sortKey,omitempty"`
	Private         bool            `json:"private,omitempty"`
	Owner           string          `json:"owner"`
	Data            json.RawMessage `json:"data,omitempty"`
	ContentType     *string         `json:"contentType,omitempty"`
	Size            *int64          `json:"size,omitempty"`
	Large           bool            `json:"large,omitempty"`
	// DownloadURL reads a large value's bytes, in a user's export: a
	// presigned GET valid exportDownloadLife. An import leaves large
	// values out whatever it holds.
	DownloadURL      string  `json:"downloadUrl,omitempty"`
	DataBase64       *string `json:"dataBase64,omitempty"`
	ClassName        string  `json:"className,omitempty"`
	CreatedDate      string  `json:"createdDate,omitempty"`
	CreatedBySubject string  `json:"createdBySubject"`
	UpdatedDate      string  `json:"updatedDate,omitempty"`
	UpdatedBySubject string  `json:"updatedBySubject"`
	Version          int64   `json:"version"`
	ExpiresAt        string  `json:"expiresAt,omitempty"`
	KeptAt           string  `json:"keptAt,omitempty"`
	Deleted          bool    `json:"deleted,omitempty"`
}

// recordFieldBytes is what a record adds to the payload beside its values
// (field names, quotes and separators, escaped once more), beyond what
// itemPayloadBytes counts for an item.
const recordFieldBytes = 40

func recordPayloadBytes(rec *uds.Record) int {
	n := itemPayloadBytes(&rec.Item) + stringPayloadBytes(rec.Owner) + recordFieldBytes
	if rec.Kept() {
		n += keptFieldBytes
	}
	return n
}

// keptFieldBytes is what a kept version's keptAt and deleted members add.
const keptFieldBytes = 56

func toRecordJSON(rec *uds.Record) recordJSON {
	it := toJSON(&rec.Item)
	j := recordJSON{
		Namespace: it.Namespace, ID: it.ID, SortKey: it.SortKey, Private: rec.Key.Owner != "", Owner: rec.Owner,
		Data: it.Data, ClassName: it.ClassName,
		CreatedDate: it.CreatedDate, CreatedBySubject: it.CreatedBySubject,
		UpdatedDate: it.UpdatedDate, UpdatedBySubject: it.UpdatedBySubject,
		Version: it.Version, ExpiresAt: it.ExpiresAt,
	}
	if b := rec.Binary; b != nil {
		j.ContentType, j.Size, j.Large = &b.ContentType, &b.Size, b.Large()
		if !b.Large() {
			text := base64.StdEncoding.EncodeToString(b.Bytes)
			j.DataBase64 = &text
		}
	}
	if rec.Kept() {
		j.KeptAt, j.Deleted = store.FormatTime(rec.KeptAt), rec.Deleted
	}
	return j
}

// exportLimit is the default and largest number of records of a page.
const exportLimit = 1000

type exportJSON struct {
	Records []recordJSON `json:"records"`
	Cursor  string       `json:"cursor,omitempty"`
}

// export answers one page of an app's records. The cursor carries the
// position of the page's last record, sealed to the app.
func (a *API) export(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	q, err := a.exportQuery(r, app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	page, err := a.stores.Transfer.Export(r.Context(), q)
	var cursor string
	if err == nil && page.Next != nil {
		cursor, err = a.sealPosition(exportBinding(app, q.Namespace), page.Next)
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	answerRecords(w, r, page.Records, cursor)
}

// answerRecords answers a page of records (an export's, a namespace's
// strays) with its sealed cursor, "" on the last page.
func answerRecords(w http.ResponseWriter, r *http.Request, records []uds.Record, cursor string) {
	out := exportJSON{Records: make([]recordJSON, len(records)), Cursor: cursor}
	for i := range records {
		out.Records[i] = toRecordJSON(&records[i])
	}
	observationFrom(r.Context()).noteExport(len(out.Records))
	writeJSON(w, http.StatusOK, out)
}

// sealPosition seals a paged read's position into its cursor.
func (a *API) sealPosition(binding string, pos any) (string, error) {
	b, err := json.Marshal(pos)
	if err != nil {
		return "", err
	}
	return a.cursors.Seal(binding, string(b)), nil
}

// recordsQuery parses a paged read of records: limit (1..1000, default
// 1000) and a cursor sealed to binding, whose position goes into after;
// and the instant half the request's time is gone, when the page should
// end (the rest is margin for the work in hand, retries and the answer).
func (a *API) recordsQuery(r *http.Request, binding, what string, after any) (limit int, deadline time.Time, err error) {
	limit = exportLimit
	if dl, ok := r.Context().Deadline(); ok {
		deadline = time.Now().Add(time.Until(dl) / 2)
	}
	params, err := query(r)
	if err != nil {
		return 0, deadline, err
	}
	if params.Get("limit") != "" {
		if limit, err = pageLimit(params); err != nil {
			return 0, deadline, err
		}
	}
	if c := params.Get("cursor"); c != "" {
		pos, err := a.cursors.Open(binding, c)
		if err != nil || json.Unmarshal([]byte(pos), after) != nil {
			return 0, deadline, uds.Invalid("cursor", "was not issued for %s", what)
		}
	}
	return limit, deadline, nil
}

// exportBinding binds an export's cursor to its app, and to its namespace
// where it has one: a filtered export's position may sit past records of
// other namespaces that an unfiltered one must still give, and the other
// way round, so neither continues the other.
func exportBinding(app, namespace string) string {
	if namespace == "" {
		return "export\x00" + app
	}
	return "export\x00" + app + "\x00namespace\x00" + namespace
}

// exportQuery parses limit (1..1000, default 1000), cursor, history (true,
// the default, carries kept versions; false leaves them out) and namespace
// (only that namespace's records); half the request's time goes to reading
// owners.
func (a *API) exportQuery(r *http.Request, app string) (store.ExportQuery, error) {
	q := store.ExportQuery{App: app, MaxBytes: maxPageBytes, RecordBytes: recordPayloadBytes, History: true}
	params, err := query(r)
	if err != nil {
		return q, err
	}
	what := "this app's export"
	if params.Has("namespace") {
		if q.Namespace, err = uds.ParseNamespace(params.Get("namespace")); err != nil {
			return q, err
		}
		what = fmt.Sprintf("this app's export of namespace %q", uds.Truncate(q.Namespace, 64))
	}
	q.Limit, q.Deadline, err = a.recordsQuery(r, exportBinding(app, q.Namespace), what, &q.After)
	if err != nil {
		return q, err
	}
	switch h := params.Get("history"); h {
	case "", "true":
	case "false":
		q.History = false
	default:
		return q, uds.Invalid("history", `must be "true" or "false", got %q`, uds.Truncate(h, 64))
	}
	return q, nil
}

// maxImportBodyBytes bounds an import request: Lambda takes at most 6 MB.
const maxImportBodyBytes = 6 << 20

type importJSON struct {
	Imported  int            `json:"imported"`
	Skipped   int            `json:"skipped"`
	Expired   int            `json:"expired"`
	Conflicts []conflictJSON `json:"conflicts"`
	// NotImported are the records the import left out, each with why,
	// while it wrote the others.
	NotImported []notImportedJSON `json:"notImported"`
}

// notImportedJSON is a record an import left out: its place among the
// records sent, its key, and why.
type notImportedJSON struct {
	Index     int    `json:"index"`
	Namespace string `json:"namespace"`
	ID        string `json:"id"`
	SortKey   string `json:"sortKey,omitempty"`
	Reason    string `json:"reason"`
}

// errLargeRecord is a record of a large value: its bytes are in the
// exporting deployment's bucket, which an import cannot reach, so the
// import leaves it out and says so rather than refuse every record sent
// with it.
var errLargeRecord = errors.New("a large value: its bytes are in the exporting deployment's bucket, which an import cannot reach; " +
	"upload them again with POST {item}?upload")

type conflictJSON struct {
	Index     int    `json:"index"`
	Namespace string `json:"namespace"`
	ID        string `json:"id"`
	SortKey   string `json:"sortKey,omitempty"`
	Version   int64  `json:"version"`
}

// importRecords writes records back into an app (POST .../import with
// {"records": [...]}). Every record is checked before anything is
// written; a bad one is a 400 naming it. Records already present and
// identical are skipped, so a repeated or resumed import is harmless;
// records whose key holds another item are reported as conflicts.
func (a *API) importRecords(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	b, err := readRecords(r, app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	if err := a.checkPolicies(r.Context(), app, b.records, b.at); err != nil {
		a.fail(w, r, err, nil)
		return
	}
	var res uds.ImportResult
	if len(b.records) > 0 {
		res, err = a.stores.Transfer.Import(r.Context(), app, b.records)
	}
	var batch *uds.BatchError
	if errors.As(err, &batch) {
		err = inRecord(b.at[batch.Index], batch.Err)
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	observationFrom(r.Context()).noteImport(res.Imported, res.Skipped, res.Expired, len(res.Conflicts))
	out := importJSON{Imported: res.Imported, Skipped: res.Skipped, Expired: res.Expired, Conflicts: []conflictJSON{}, NotImported: b.left}
	for _, c := range res.Conflicts {
		out.Conflicts = append(out.Conflicts, conflictJSON{b.at[c.Index], c.Key.Namespace, c.Key.ID, c.Key.SortKey, c.Version})
	}
	if len(res.Left) > 0 {
		for _, l := range res.Left {
			out.NotImported = append(out.NotImported, notImportedJSON{b.at[l.Index], l.Key.Namespace, l.Key.ID, l.Key.SortKey, l.Reason})
		}
		slices.SortFunc(out.NotImported, func(a, b notImportedJSON) int { return cmp.Compare(a.Index, b.Index) })
	}
	writeJSON(w, http.StatusOK, out)
}

// importBatch is an import request's records: those to write, the place
// of each among the records sent (at), and those left out, with why.
type importBatch struct {
	records []uds.Record
	at      []int
	left    []notImportedJSON
}

// readRecords reads an import body and parses its records (parseRecords).
func readRecords(r *http.Request, app string) (importBatch, error) {
	body, err := readBody(r, maxImportBodyBytes, fmt.Sprintf("an import request holds at most %d bytes; send the records in smaller requests", maxImportBodyBytes))
	if err != nil {
		return importBatch{}, err
	}
	return parseRecords(body, app)
}

// parseRecords parses and validates an import body's records. A bad
// record refuses the request; a record that is valid but cannot be
// written here (errLargeRecord) is left out and reported.
func parseRecords(body []byte, app string) (importBatch, error) {
	// An export's page imports as it is: its cursor (its place in the
	// export) and a person's export's apps (their usage and limits) are
	// read and left: an import writes records.
	var b struct {
		Records []recordJSON      `json:"records"`
		Cursor  *string           `json:"cursor"`
		Apps    []json.RawMessage `json:"apps"`
	}
	var out importBatch
	if err := decodeBody(body, &b, `{"records": [...]} of exported records`); err != nil {
		return out, err
	}
	if len(b.Records) == 0 || len(b.Records) > uds.MaxImportRecords {
		return out, uds.Invalid("records", "must hold 1 to %d records, got %d", uds.MaxImportRecords, len(b.Records))
	}
	out.records, out.at, out.left = make([]uds.Record, 0, len(b.Records)), make([]int, 0, len(b.Records)), []notImportedJSON{}
	for i := range b.Records {
		var rec uds.Record
		err := parseRecord(app, &b.Records[i], &rec)
		switch {
		case errors.Is(err, errLargeRecord):
			j := &b.Records[i]
			out.left = append(out.left, notImportedJSON{Index: i, Namespace: j.Namespace, ID: j.ID, SortKey: j.SortKey, Reason: err.Error()})
		case err != nil:
			return out, inRecord(i, err)
		default:
			out.records, out.at = append(out.records, rec), append(out.at, i)
		}
	}
	return out, nil
}

// parseRecord validates one record as the write routes validate an item,
// plus the fields only import sets.
func parseRecord(app string, j *recordJSON, rec *uds.Record) error {
	key, err := uds.NewKey(app, j.Namespace, j.ID)
	if err != nil {
		return err
	}
	if j.SortKey != "" {
		if key, err = key.WithSortKey(j.SortKey); err != nil {
			return err
		}
	}
	for _, s := range []struct{ field, value string }{
		{"owner", j.Owner}, {"createdBySubject", j.CreatedBySubject}, {"updatedBySubject", j.UpdatedBySubject},
	} {
		if !uds.ValidSubject(s.value) {
			return uds.Invalid(s.field, "must be valid UTF-8 of at most %d bytes without control characters, as callers are", uds.MaxSubjectBytes)
		}
	}
	if j.Owner == "" {
		return uds.Invalid("owner", "is required")
	}
	if j.Private {
		if key, err = key.InSpaceOf(j.Owner); err != nil {
			return err
		}
	}
	if err := checkClassName(j.ClassName); err != nil {
		return err
	}
	if j.KeptAt != "" {
		if rec.KeptAt, err = uds.ParseInstant("keptAt", j.KeptAt); err != nil {
			return err
		}
	}
	if j.Deleted && j.KeptAt == "" {
		return uds.Invalid("deleted", "marks a delete marker kept in an item's history, and needs its keptAt")
	}
	rec.Deleted = j.Deleted
	if j.Version < 0 || j.Version > uds.MaxVersion {
		return uds.Invalid("version", "must be a whole number from 0 to %d (2^53-1), got %d", uds.MaxVersion, j.Version)
	}
	rec.Key, rec.Owner, rec.ClassName, rec.Version = key, j.Owner, j.ClassName, j.Version
	rec.CreatedBy, rec.UpdatedBy = j.CreatedBySubject, j.UpdatedBySubject
	binary := j.DataBase64 != nil || j.ContentType != nil || j.Large
	switch {
	case j.Deleted && (len(j.Data) > 0 || binary):
		return uds.Invalid("data", "has no place in a delete marker")
	case j.Large:
		return errLargeRecord
	case binary:
		if rec.Binary, err = inlineBinary(&writeBody{Data: j.Data, DataBase64: j.DataBase64, ContentType: j.ContentType}); err != nil {
			return err
		}
		if j.Size != nil && *j.Size != rec.Binary.Size {
			return uds.Invalid("size", "is %d, and dataBase64 holds %d bytes", *j.Size, rec.Binary.Size)
		}
	case j.Size != nil:
		return uds.Invalid("size", "belongs to a binary value (with dataBase64 and contentType)")
	case !j.Deleted:
		if err := checkDataValue(j.Data); err != nil {
			return err
		}
		rec.Data = j.Data
	}
	for _, t := range []struct {
		field, value string
		out          *time.Time
	}{
		{"createdDate", j.CreatedDate, &rec.CreatedDate},
		{"updatedDate", j.UpdatedDate, &rec.UpdatedDate},
		{"expiresAt", j.ExpiresAt, &rec.ExpiresAt},
	} {
		if t.value == "" {
			continue
		}
		if *t.out, err = uds.ParseInstant(t.field, t.value); err != nil {
			return err
		}
	}
	// An expiry is bounded as a write's is; one already past is skipped
	// as expired, not refused.
	if rec.ExpiresAt.Sub(time.Now()) > uds.MaxTTL {
		return uds.Invalid("expiresAt", "must be at most ten years ahead, as a write's expiry, got %s", j.ExpiresAt)
	}
	return nil
}

// checkPolicies gives every record the checks its namespace's policy
// gives a write through the API. A private namespace's items sit in their
// owner's key space, every other namespace's in the shared one: items in
// the wrong one could never be read, so policies are set before an import.
// The anonymous caller has no key space of a private namespace, so it owns
// none of its items either. Data is checked against the namespace's JSON
// Schema; a refusal names the record by its place among those sent (at).
func (a *API) checkPolicies(ctx context.Context, app string, records []uds.Record, at []int) error {
	policies := map[string]*scope{}
	for n := range records {
		rec, i := &records[n], at[n]
		ns := rec.Key.Namespace
		sc := policies[ns]
		if sc == nil {
			p, err := a.stores.Policy.Policy(ctx, app, ns)
			if err != nil {
				return err
			}
			sc = &scope{key: rec.Key, policy: p}
			policies[ns] = sc
		}
		private := sc.policy.Mode() == uds.AccessPrivate
		switch has := rec.Key.Owner != ""; {
		case private && !has:
			return inRecord(i, uds.Invalid("private", "must be true: namespace %q is private here, and the record comes from a shared one", ns))
		case !private && has:
			return inRecord(i, uds.Invalid("private", "must be false: namespace %q is not private here; set its policy before the import", ns))
		case private && rec.Owner == Anonymous:
			return inRecord(i, uds.Invalid("owner", "is %q, who has no key space in private namespace %q", Anonymous, ns))
		}
		if err := sc.writable(a.now()); err != nil {
			return &uds.BatchError{Index: i, Err: err}
		}
		if rec.Kept() {
			// A kept version is history: it met the schema of its day.
			continue
		}
		if err := a.checkValue(sc, &uds.Write{Data: rec.Data, Binary: rec.Binary}); err != nil {
			return &uds.BatchError{Index: i, Err: err}
		}
	}
	return nil
}

// inRecord names the record an error is about: "records[3].data".
func inRecord(i int, err error) error {
	var invalid *uds.InvalidError
	var tooLarge *uds.TooLargeError
	switch {
	case errors.As(err, &invalid):
		return &uds.InvalidError{Field: fmt.Sprintf("records[%d].%s", i, invalid.Field), Reason: invalid.Reason}
	case errors.As(err, &tooLarge):
		return &uds.TooLargeError{Reason: fmt.Sprintf("records[%d]: %s", i, tooLarge.Reason)}
	}
	return err
}
