package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// itemJSON is an item as the API returns it (seed 002's DataStoreResponse
// plus className and version).
type itemJSON struct {
	ApplicationUUID  string          `json:"applicationUuid"`
	Namespace        string          `json:"namespace"`
	ID               string          `json:"id"`
	SortKey          string          `json:"sortKey,omitempty"`
	Data             json.RawMessage `json:"data,omitempty"`
	ContentType      string          `json:"contentType,omitempty"`
	Size             *int64          `json:"size,omitempty"`
	Large            bool            `json:"large,omitempty"`
	DataBase64       *[]byte         `json:"dataBase64,omitempty"`
	ClassName        string          `json:"className,omitempty"`
	CreatedDate      string          `json:"createdDate,omitempty"`
	CreatedBySubject string          `json:"createdBySubject,omitempty"`
	UpdatedDate      string          `json:"updatedDate,omitempty"`
	UpdatedBySubject string          `json:"updatedBySubject,omitempty"`
	Version          int64           `json:"version"`
	ExpiresAt        string          `json:"expiresAt,omitempty"`
}

func toJSON(it *uds.Item) itemJSON {
	j := itemJSON{
		ApplicationUUID: it.App, Namespace: it.Namespace, ID: it.ID, SortKey: it.SortKey,
		Data: it.Data, ClassName: it.ClassName,
		CreatedBySubject: it.CreatedBy, UpdatedBySubject: it.UpdatedBy, Version: it.Version,
	}
	if b := it.Binary; b != nil {
		j.ContentType, j.Size, j.Large = b.ContentType, &b.Size, b.Large()
		if !b.Large() && b.Bytes != nil {
			j.DataBase64 = &b.Bytes
		}
	}
	// Items written before UDS may lack audit dates; omit rather than
	// invent them.
	if !it.CreatedDate.IsZero() {
		j.CreatedDate = store.FormatTime(it.CreatedDate)
	}
	if !it.UpdatedDate.IsZero() {
		j.UpdatedDate = store.FormatTime(it.UpdatedDate)
	}
	if !it.ExpiresAt.IsZero() {
		j.ExpiresAt = store.FormatTime(it.ExpiresAt)
	}
	return j
}

var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// writeJSON encodes v fully before writing, so an encoding failure is still
// a clean 500 and never a truncated 200. HTML escaping is off: stored JSON
// goes back byte for byte.
func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := buffers.Get().(*bytes.Buffer)
	buf.Reset()
	defer buffers.Put(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"code":"internal","error":"Internal server error","timestamp":"` + now() + `"}` + "\n")
	}
	answerBody(w, status, buf.Bytes())
}

// answerBody answers a whole JSON body.
func answerBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h[headerContentType] = jsonContentType
	h[headerContentLength] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// The values of the headers every answer sets alike, shared by all
// answers: a header's value is replaced (Set) or added to (Add, which
// copies a full slice), never written into.
var (
	jsonContentType = []string{"application/json"}
	noSniff         = []string{"nosniff"}
)
