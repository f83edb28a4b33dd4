package httpapi

import (
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/udsproject/uds/internal/gzsplice"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"

	"github.com/udsproject/uds/internal/jsontext"
)

// Items are the bulk of what UDS answers, and encoding/json spends most of
// a list page re-validating and compacting stored values that were
// validated when they were written (or, for values UDS did not write, when
// they were read: store.decodeItem). Items are therefore encoded by hand,
// byte for byte as encoding/json encodes itemJSON (the tests compare the
// two), with the stored value copied as it is.

// appendItem appends the JSON of it, as encoding/json encodes toJSON(it).
func appendItem(b []byte, it *uds.Item) []byte {
	return appendItemTail(append(appendItemHead(b, it), it.Data...), it)
}

// appendItemHead appends the JSON of it up to its value: `{..."data":`.
func appendItemHead(b []byte, it *uds.Item) []byte {
	b = append(b, `{"applicationUuid":`...)
	b = jsontext.AppendString(b, it.App)
	b = append(b, `,"namespace":`...)
	b = jsontext.AppendString(b, it.Namespace)
	b = append(b, `,"id":`...)
	b = jsontext.AppendString(b, it.ID)
	if it.SortKey != "" {
		b = append(b, `,"sortKey":`...)
		b = jsontext.AppendString(b, it.SortKey)
	}
	if it.Binary != nil {
		return appendBinary(b, it.Binary)
	}
	return append(b, `,"data":`...)
}

// appendBinary appends a binary value's members in place of data: its
// content type, its size, and its bytes in base64 where the item holds
// them and they are shown (not in write answers), or that it is large.
func appendBinary(b []byte, bin *uds.Binary) []byte {
	b = append(b, `,"contentType":`...)
	b = jsontext.AppendString(b, bin.ContentType)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, bin.Size, 10)
	switch {
	case bin.Large():
		b = append(b, `,"large":true`...)
	case bin.Bytes != nil:
		b = append(b, `,"dataBase64":"`...)
		b = base64.StdEncoding.AppendEncode(b, bin.Bytes)
		b = append(b, '"')
	}
	return b
}

// appendItemTail appends the JSON of it after its value, to its end.
func appendItemTail(b []byte, it *uds.Item) []byte {
	if it.ClassName != "" {
		b = append(b, `,"className":`...)
		b = jsontext.AppendString(b, it.ClassName)
	}
	// Items written before UDS may lack audit dates; they are omitted
	// rather than invented.
	if !it.CreatedDate.IsZero() {
		b = append(b, `,"createdDate":"`...)
		b = append(store.AppendTime(b, it.CreatedDate), '"')
	}
	if it.CreatedBy != "" {
		b = append(b, `,"createdBySubject":`...)
		b = jsontext.AppendString(b, it.CreatedBy)
	}
	if !it.UpdatedDate.IsZero() {
		b = append(b, `,"updatedDate":"`...)
		b = append(store.AppendTime(b, it.UpdatedDate), '"')
	}
	if it.UpdatedBy != "" {
		b = append(b, `,"updatedBySubject":`...)
		b = jsontext.AppendString(b, it.UpdatedBy)
	}
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, it.Version, 10)
	if !it.ExpiresAt.IsZero() {
		b = append(b, `,"expiresAt":"`...)
		b = append(store.AppendTime(b, it.ExpiresAt), '"')
	}
	return append(b, '}')
}

// itemJSONBytes estimates the encoded size of an item, to size buffers;
// a compressed value counts as what it adds to a gzip answer.
func itemJSONBytes(it *uds.Item) int {
	data := len(it.Data)
	switch {
	case it.Compressed != nil:
		data = it.Compressed.CompressedSize()
	case it.Binary != nil:
		data = base64.StdEncoding.EncodedLen(len(it.Binary.Bytes)) + len(it.Binary.ContentType) + 60
	}
	return data + len(it.App) + len(it.Namespace) + len(it.ID) + len(it.SortKey) +
		len(it.ClassName) + len(it.CreatedBy) + len(it.UpdatedBy) + 220
}

// writeItem answers one item.
func writeItem(w http.ResponseWriter, status int, it *uds.Item) {
	bp := pageBuffers.Get().(*[]byte)
	defer pageBuffers.Put(bp)
	buf := append(appendItem(slices.Grow((*bp)[:0], itemJSONBytes(it)+1), it), '\n')
	answerBody(w, status, buf)
	*bp = buf[:0]
}

// pageBuffers keeps the buffers of answers between requests, items' and
// list pages' (up to 5 MB): the response writer copies what it is given.
var pageBuffers = sync.Pool{New: func() any { return new([]byte) }}

// writeItemsPage answers a page of items as encoding/json would encode
// {member: [items], "cursor": cursor} (cursor omitted when empty): "list"
// for a list page, "items" for a query's. A page
// holding compressed values (read for a client that accepts gzip) goes
// gzip encoded, the values' stored streams spliced in as they are.
func writeItemsPage(w http.ResponseWriter, member string, items []uds.Item, cursor string) {
	n := len(cursor) + 32
	compressed := false
	for i := range items {
		n += itemJSONBytes(&items[i]) + 1
		compressed = compressed || items[i].Compressed != nil
	}
	bp := pageBuffers.Get().(*[]byte)
	defer pageBuffers.Put(bp)
	buf := slices.Grow((*bp)[:0], n)
	defer func() { *bp = buf[:0] }()
	var gz *gzsplice.Writer
	var gzp *[]byte
	if compressed {
		gz = new(gzsplice.Writer)
		gzp = pageBuffers.Get().(*[]byte)
		defer pageBuffers.Put(gzp)
		gz.Start(slices.Grow((*gzp)[:0], n))
	}
	buf = append(append(append(buf, `{"`...), member...), `":[`...)
	for i := range items {
		it := &items[i]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendItemHead(buf, it)
		if it.Compressed != nil {
			gz.Splice(buf, *it.Compressed)
			buf = buf[:0]
		} else {
			buf = append(buf, it.Data...)
		}
		buf = appendItemTail(buf, it)
	}
	buf = append(buf, ']')
	if cursor != "" {
		buf = append(buf, `,"cursor":`...)
		buf = jsontext.AppendString(buf, cursor)
	}
	buf = append(buf, "}\n"...)
	if gz != nil {
		body := gz.Close(buf)
		*gzp = body[:0]
		h := w.Header()
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		answerBody(w, http.StatusOK, body)
		return
	}
	answerBody(w, http.StatusOK, buf)
}
