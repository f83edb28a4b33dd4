package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// Export and import of an app's data: GET .../admin/apps/{app}/export
// pages through every owner's items, and POST .../admin/apps/{app}/import
// writes such records back. Records name no app, so an export can also be
// imported into another app.

// recordJSON is one exported item. Field order is part of the format: an
// export, imported and exported again, gives the same bytes.
type recordJSON struct {
	Namespace        string          `json:"namespace"`
	ID               string          `json:"id"`
	SortKey          string          `json:"sortKey,omitempty"`
	Private          bool            `json:"private,omitempty"`
	Owner            string          `json:"owner"`
	Data             json.RawMessage `json:"data"`
	ClassName        string          `json:"className,omitempty"`
	CreatedDate      string          `json:"createdDate,omitempty"`
	CreatedBySubject string          `json:"createdBySubject"`
	UpdatedDate      string          `json:"updatedDate,omitempty"`
	UpdatedBySubject string          `json:"updatedBySubject"`
	Version          int64           `json:"version"`
	ExpiresAt        string          `json:"expiresAt,omitempty"`
}

// recordFieldBytes is what a record adds to the payload beside its values
// (field names, quotes and separators, escaped once more), beyond what
// itemPayloadBytes counts for an item.
const recordFieldBytes = 40

func recordPayloadBytes(rec *uds.Record) int {
	return itemPayloadBytes(&rec.Item) + stringPayloadBytes(rec.Owner) + recordFieldBytes
}

func toRecordJSON(rec *uds.Record) recordJSON {
	it := toJSON(&rec.Item)
	return recordJSON{
		Namespace: it.Namespace, ID: it.ID, SortKey: it.SortKey, Private: rec.Key.Owner != "", Owner: rec.Owner,
		Data: it.Data, ClassName: it.ClassName,
		CreatedDate: it.CreatedDate, CreatedBySubject: it.CreatedBySubject,
		UpdatedDate: it.UpdatedDate, UpdatedBySubject: it.UpdatedBySubject,
		Version: it.Version, ExpiresAt: it.ExpiresAt,
	}
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
	page, err := a.store.Export(r.Context(), q)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	out := exportJSON{Records: make([]recordJSON, len(page.Records))}
	for i := range page.Records {
		out.Records[i] = toRecordJSON(&page.Records[i])
	}
	if page.Next != nil {
		pos, err := json.Marshal(page.Next)
		if err != nil {
			a.fail(w, r, err, nil)
			return
		}
		out.Cursor = a.cursors.Seal(exportBinding(app), string(pos))
	}
	observationFrom(r.Context()).noteExport(len(out.Records))
	writeJSON(w, http.StatusOK, out)
}

func exportBinding(app string) string { return "export\x00" + app }

// exportQuery parses limit (1..1000, default 1000) and cursor.
func (a *API) exportQuery(r *http.Request, app string) (store.ExportQuery, error) {
	q := store.ExportQuery{App: app, Limit: exportLimit, MaxBytes: maxPageBytes, RecordBytes: recordPayloadBytes}
	// Half the request's time goes to reading owners; the rest is margin
	// for the owner in hand, retries and the answer.
	if dl, ok := r.Context().Deadline(); ok {
		q.Deadline = time.Now().Add(time.Until(dl) / 2)
	}
	params, err := query(r)
	if err != nil {
		return q, err
	}
	if params.Get("limit") != "" {
		if q.Limit, err = pageLimit(params); err != nil {
			return q, err
		}
	}
	if c := params.Get("cursor"); c != "" {
		pos, err := a.cursors.Open(exportBinding(app), c)
		if err != nil || json.Unmarshal([]byte(pos), &q.After) != nil {
			return q, uds.Invalid("cursor", "was not issued for this app's export")
		}
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
}

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
	records, err := readRecords(r, app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	if err := a.checkKeySpaces(r.Context(), app, records); err != nil {
		a.fail(w, r, err, nil)
		return
	}
	res, err := a.store.Import(r.Context(), app, records)
	var batch *uds.BatchError
	if errors.As(err, &batch) {
		err = inRecord(batch.Index, batch.Err)
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	observationFrom(r.Context()).noteImport(res.Imported, res.Skipped, res.Expired, len(res.Conflicts))
	out := importJSON{Imported: res.Imported, Skipped: res.Skipped, Expired: res.Expired, Conflicts: []conflictJSON{}}
	for _, c := range res.Conflicts {
		out.Conflicts = append(out.Conflicts, conflictJSON{c.Index, c.Key.Namespace, c.Key.ID, c.Key.SortKey, c.Version})
	}
	writeJSON(w, http.StatusOK, out)
}

// readRecords parses and validates an import body.
func readRecords(r *http.Request, app string) ([]uds.Record, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxImportBodyBytes))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, &uds.TooLargeError{Reason: fmt.Sprintf("an import request holds at most %d bytes; send the records in smaller requests", maxImportBodyBytes)}
	}
	if err != nil {
		return nil, uds.Invalid("body", "could not be read")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var b struct {
		Records []recordJSON `json:"records"`
	}
	if err := dec.Decode(&b); err != nil {
		return nil, uds.Invalid("body", `is not {"records": [...]} of exported records: %s`, jsonProblem(err))
	}
	if dec.More() {
		return nil, uds.Invalid("body", "has content after the JSON object")
	}
	if len(b.Records) == 0 || len(b.Records) > uds.MaxImportRecords {
		return nil, uds.Invalid("records", "must hold 1 to %d records, got %d", uds.MaxImportRecords, len(b.Records))
	}
	out := make([]uds.Record, len(b.Records))
	for i := range b.Records {
		if err := parseRecord(app, &b.Records[i], &out[i]); err != nil {
			return nil, inRecord(i, err)
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
			return uds.Invalid(s.field, "must be at most %d bytes without control characters", uds.MaxSubjectBytes)
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
	if j.Version < 0 {
		return uds.Invalid("version", "must not be negative, got %d", j.Version)
	}
	rec.Key, rec.Owner, rec.ClassName, rec.Version = key, j.Owner, j.ClassName, j.Version
	rec.CreatedBy, rec.UpdatedBy = j.CreatedBySubject, j.UpdatedBySubject
	if rec.Data, err = compactData(j.Data); err != nil {
		return err
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
	return nil
}

// checkKeySpaces refuses records that would land outside the key space
// their namespace's policy gives: a private namespace's items sit in their
// owner's key space, every other namespace's in the shared one. Items in
// the wrong one could never be read. Policies are set before an import.
func (a *API) checkKeySpaces(ctx context.Context, app string, records []uds.Record) error {
	private := map[string]bool{}
	for i := range records {
		ns := records[i].Key.Namespace
		want, known := private[ns]
		if !known {
			p, err := a.store.Policy(ctx, app, ns)
			if err != nil {
				return err
			}
			want = p.Mode() == uds.AccessPrivate
			private[ns] = want
		}
		switch has := records[i].Key.Owner != ""; {
		case want && !has:
			return inRecord(i, uds.Invalid("private", "must be true: namespace %q is private here, and the record comes from a shared one", ns))
		case !want && has:
			return inRecord(i, uds.Invalid("private", "must be false: namespace %q is not private here; set its policy before the import", ns))
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
