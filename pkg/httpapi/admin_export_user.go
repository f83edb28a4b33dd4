package httpapi

import (
	"net/http"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// A person's data: GET .../admin/users/{user}/export pages through every
// record the user owns in every app (store/export_user.go), each record in
// the format an app's import reads plus its applicationUuid, and, for each
// app a page begins, what the user's usage record there holds: usage and
// the overrides set for them, in the bodies that PUT .../users/{user}/quota
// and .../rate-limits take, so that they can be set again.

// userExportJSON is one page of a user's export.
type userExportJSON struct {
	Apps    []userAppJSON `json:"apps"`
	Records []recordJSON  `json:"records"`
	Cursor  string        `json:"cursor,omitempty"`
}

// userAppJSON is a user's state in one app: usage, and the limits (0: not
// set, -1: unlimited, as PUT .../quota takes them) and caller rate (null:
// not set) an operator set for them there.
type userAppJSON struct {
	ApplicationUUID string    `json:"applicationUuid"`
	UsedBytes       int64     `json:"usedBytes"`
	UsedItems       int64     `json:"usedItems"`
	HistoryBytes    int64     `json:"historyBytes"`
	LimitBytes      int64     `json:"limitBytes"`
	LimitItems      int64     `json:"limitItems"`
	PerCaller       *rateJSON `json:"perCaller"`
}

// exportDownloadLife is how long the download URL of a large value in a
// user's export is valid: long enough to fetch a page's values one after
// another.
const exportDownloadLife = time.Hour

// userRecordBytes is what a record of a user's export adds to an app
// export's (its applicationUuid member), and downloadURLBytes what a large
// value's presigned URL adds at most.
const (
	userRecordBytes  = 60
	downloadURLBytes = 2048
)

func userRecordPayloadBytes(rec *uds.Record) int {
	n := recordPayloadBytes(rec) + userRecordBytes
	if rec.Binary != nil && rec.Binary.Large() {
		n += downloadURLBytes
	}
	return n
}

// exportUser answers one page of a user's records in every app. The
// cursor carries the position of the page's last record, sealed to the
// user.
func (a *API) exportUser(w http.ResponseWriter, r *http.Request, p params) {
	user, err := uds.ParseUser(p.user)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	q := store.UserExportQuery{User: user, MaxBytes: maxPageBytes, RecordBytes: userRecordPayloadBytes}
	binding := "export-user\x00" + user
	q.Limit, q.Deadline, err = a.recordsQuery(r, binding, "this user's export", &q.After)
	if err == nil && q.After.App != "" && q.After.Owner != user {
		err = uds.Invalid("cursor", "was not issued for this user's export")
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	page, err := a.stores.Transfer.ExportUser(r.Context(), q)
	out := userExportJSON{Apps: make([]userAppJSON, len(page.Apps)), Records: make([]recordJSON, len(page.Records))}
	if err == nil && page.Next != nil {
		out.Cursor, err = a.sealPosition(binding, page.Next)
	}
	for i := 0; err == nil && i < len(page.Records); i++ {
		rec := &page.Records[i]
		out.Records[i] = toRecordJSON(rec)
		out.Records[i].ApplicationUUID = rec.Key.App
		if rec.Binary != nil && rec.Binary.Large() {
			out.Records[i].DownloadURL, err = a.presignExported(r, rec.Binary)
		}
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	for i, st := range page.Apps {
		out.Apps[i] = userAppJSON{ApplicationUUID: st.App, UsedBytes: st.Usage.Bytes, UsedItems: st.Usage.Items, HistoryBytes: st.Usage.History,
			LimitBytes: st.Limits.Bytes, LimitItems: st.Limits.Items, PerCaller: rateBody(st.Rate)}
	}
	observationFrom(r.Context()).noteExport(len(out.Records))
	writeJSON(w, http.StatusOK, out)
}

// presignExported signs the download of a large value in an export, served
// as a GET of it is (inertDownload).
func (a *API) presignExported(r *http.Request, b *uds.Binary) (string, error) {
	if err := a.refuseWithoutBucket(); err != nil {
		return "", err
	}
	return a.bucket.PresignGet(r.Context(), b.Object, inertDownload(b.ContentType), exportDownloadLife)
}
