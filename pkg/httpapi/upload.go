package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// UploadStore reserves and commits uploads of large values.
type UploadStore interface {
	ReserveUpload(ctx context.Context, w uds.Write) (uds.Upload, error)
	CommitUpload(ctx context.Context, app, id string, key *uds.Key) (uds.Item, bool, error)
}

// Large values go straight between the client and the bucket: POST
// {item}?upload reserves the bytes in the owner's quota and answers a
// presigned S3 POST; the bucket's event, or POST {item}?commit, commits the
// item (store/upload.go); GET {item} answers 302 to a presigned S3 GET.

// Bucket is what the API needs of the bucket of large values, each object
// named by uds.ObjectName.
type Bucket interface {
	// PresignUpload answers the URL and form fields of an S3 POST that
	// stores exactly size bytes of contentType as the named object, valid
	// for ttl.
	PresignUpload(ctx context.Context, name, contentType string, size int64, ttl time.Duration) (uds.PresignedPost, error)
	// PresignGet answers a URL that reads the named object, answered with
	// the headers answer names, valid for ttl.
	PresignGet(ctx context.Context, name string, answer uds.DownloadHeaders, ttl time.Duration) (string, error)
	// Open streams the named object.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
}

// downloadLife is how long the URL of a 302 to a large value is valid.
const downloadLife = 5 * time.Minute

// errNoUpload answers a commit of an upload that is not (or no longer)
// pending for the item.
var errNoUpload = uds.NewError(uds.CodeNotFound, "upload not found")

// uploadBody is POST {item}?upload's body. size is read as sent, as the
// history's numbers are.
type uploadBody struct {
	Size        json.RawMessage `json:"size"`
	ContentType *string         `json:"contentType"`
	ClassName   *string         `json:"className"`
	TTL         json.RawMessage `json:"ttl"`
	ExpiresAt   json.RawMessage `json:"expiresAt"`
}

const uploadShape = `{"size": <bytes>, "contentType": "image/png", "className": "...", "ttl": <seconds> | "expiresAt": "<RFC 3339>"}`

// uploadAnswer is what an upload reserved answers.
type uploadAnswer struct {
	UploadID    string            `json:"uploadId"`
	URL         string            `json:"url"`
	Fields      map[string]string `json:"fields"`
	ExpiresAt   string            `json:"expiresAt"`
	LapsesAt    string            `json:"lapsesAt"`
	Size        int64             `json:"size"`
	ContentType string            `json:"contentType"`
	Commit      string            `json:"commit"`
}

// parseUpload reads an upload's declaration into w.
func parseUpload(body []byte, w *uds.Write, now time.Time) error {
	var b uploadBody
	if err := decodeBody(body, &b, uploadShape); err != nil {
		return err
	}
	if !present(b.Size) {
		return uds.Invalid("size", "is required: the value's length, a whole number of bytes from 0 to %d (5 GB)", int64(uds.MaxObjectBytes))
	}
	// ParseInt takes "-0" for 0, and JSON a leading zero nowhere: a size
	// is spelt as its digits alone, one way.
	size, err := strconv.ParseInt(string(b.Size), 10, 64)
	if err != nil || size < 0 || size > uds.MaxObjectBytes || b.Size[0] == '-' || (len(b.Size) > 1 && b.Size[0] == '0') {
		return uds.Invalid("size", "must be the value's length, a whole number of bytes from 0 to %d (5 GB) written without a sign, got %s", int64(uds.MaxObjectBytes), uds.Truncate(string(b.Size), 64))
	}
	if b.ContentType == nil {
		return uds.Invalid("contentType", "is required: the media type of the bytes, such as image/png")
	}
	contentType, err := uds.ParseContentType("contentType", *b.ContentType)
	if err != nil {
		return err
	}
	w.Binary = &uds.Binary{ContentType: contentType, Size: size}
	if b.ClassName != nil {
		if err := checkClassName(*b.ClassName); err != nil {
			return err
		}
		w.ClassName = *b.ClassName
	}
	w.ExpiresAt, err = expiry(&writeBody{TTL: b.TTL, ExpiresAt: b.ExpiresAt}, now)
	return err
}

// reserveUpload serves POST {item}?upload.
func (a *API) reserveUpload(w http.ResponseWriter, r *http.Request, key uds.Key, sc *scope) {
	write := uds.Write{Key: sc.key, Subject: sc.subject, IfMatch: sc.guard(uds.Precondition{})}
	now := a.now()
	err := noConditions(r, "POST ?upload, which reserves the item whatever its revision")
	if err == nil {
		err = a.refuseWithoutBucket()
	}
	var body []byte
	if err == nil {
		body, err = readUploadBody(r)
	}
	if err == nil {
		err = parseUpload(body, &write, now)
	}
	if err == nil {
		err = sc.writable(now)
	}
	if err == nil {
		err = a.checkValue(sc, &write)
	}
	if err == nil && sc.policy.History.On() {
		err = uds.Invalid("upload", "namespace %q keeps history, which keeps JSON and values of up to 350 KiB; large values go to namespaces without history", sc.key.Namespace)
	}
	var up uds.Upload
	if err == nil {
		up, err = a.stores.Uploads.ReserveUpload(r.Context(), write)
	}
	var post uds.PresignedPost
	if err == nil {
		post, err = a.bucket.PresignUpload(r.Context(), uds.ObjectName(sc.key.App, up.ID), write.Binary.ContentType, write.Binary.Size, uds.UploadWindow)
	}
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	writeJSON(w, http.StatusCreated, uploadAnswer{
		UploadID: up.ID, URL: post.URL, Fields: post.Fields,
		ExpiresAt: store.FormatTime(now.Add(uds.UploadWindow)), LapsesAt: store.FormatTime(up.Lapses),
		Size: write.Binary.Size, ContentType: write.Binary.ContentType, Commit: itemPath(key) + "?commit",
	})
}

// commitBody is POST {item}?commit's body.
type commitBody struct {
	UploadID *string `json:"uploadId"`
}

// parseCommit reads a commit's body: the upload it commits.
func parseCommit(body []byte) (string, error) {
	var b commitBody
	if err := decodeBody(body, &b, `{"uploadId": "..."}`); err != nil {
		return "", err
	}
	switch {
	case b.UploadID == nil:
		return "", uds.Invalid("uploadId", "is required: the uploadId that POST {item}?upload answered")
	case !uds.ValidUploadID(*b.UploadID):
		return "", uds.Invalid("uploadId", "is not one POST {item}?upload answers: 32 lower-case hexadecimal digits")
	}
	return *b.UploadID, nil
}

// commitUpload serves POST {item}?commit: 201 with the item created, 200
// with the item replaced or committed already.
func (a *API) commitUpload(w http.ResponseWriter, r *http.Request, key uds.Key, sc *scope) {
	err := noConditions(r, "POST ?commit, which makes the item its upload reserved")
	if err == nil {
		err = a.refuseWithoutBucket()
	}
	var body []byte
	if err == nil {
		body, err = readUploadBody(r)
	}
	var id string
	if err == nil {
		id, err = parseCommit(body)
	}
	var it uds.Item
	var created bool
	if err == nil {
		it, created, err = a.stores.Uploads.CommitUpload(r.Context(), sc.key.App, id, &sc.key)
		if errors.Is(err, uds.ErrNotFound) {
			err = errNoUpload
		}
	}
	if err != nil {
		a.fail(w, r, err, &key)
		return
	}
	it.Key = key
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	answerWritten(w, &it, status)
}

func (a *API) refuseWithoutBucket() error {
	if a.bucket == nil {
		return uds.ErrNoBucket
	}
	return nil
}

// answerLarge answers a GET of a large value: 302 to a presigned URL of
// its object, or with ?inline the bytes themselves where they fit a
// function's answer.
func (a *API) answerLarge(w http.ResponseWriter, r *http.Request, it *uds.Item) {
	if err := a.refuseWithoutBucket(); err != nil {
		a.fail(w, r, err, &it.Key)
		return
	}
	h := w.Header()
	setItemHeaders(h, it)
	if !r.URL.Query().Has("inline") {
		if err := a.setRedirect(r, h, it); err != nil {
			a.fail(w, r, err, &it.Key)
			return
		}
		w.WriteHeader(http.StatusFound)
		return
	}
	if it.Binary.Size > uds.MaxInlineRead {
		a.fail(w, r, &uds.TooLargeError{Reason: fmt.Sprintf("the value has %d bytes; ?inline answers at most %d (a function's answer is 6 MB): GET it without ?inline and follow the redirect", it.Binary.Size, uds.MaxInlineRead)}, &it.Key)
		return
	}
	rc, err := a.bucket.Open(r.Context(), it.Binary.Object)
	if err != nil {
		a.fail(w, r, err, &it.Key)
		return
	}
	defer rc.Close()
	bytes, err := io.ReadAll(io.LimitReader(rc, uds.MaxInlineRead+1))
	if err != nil {
		a.fail(w, r, err, &it.Key)
		return
	}
	inline := *it
	bin := *it.Binary
	bin.Bytes, inline.Binary = bytes, &bin
	answerBinary(w, r, &inline)
}

// setRedirect sets the headers of a 302 to a large value's object: a
// presigned URL, valid downloadLife, that a cache keeps a little less
// long. A 304 to a GET that names the value's ETag sends them too, so
// that a cache that revalidates the 302 it keeps takes the new URL with
// its new lifetime (RFC 9111, 4.3.4) rather than the expired one.
func (a *API) setRedirect(r *http.Request, h http.Header, it *uds.Item) error {
	url, err := a.bucket.PresignGet(r.Context(), it.Binary.Object, inertDownload(it.Binary.ContentType), downloadLife)
	if err != nil {
		return err
	}
	h.Set(headerLocation, url)
	h.Set(HeaderValueType, it.Binary.ContentType)
	h.Set(HeaderSize, strconv.FormatInt(it.Binary.Size, 10))
	h.Set("Cache-Control", "private, max-age="+strconv.Itoa(int(downloadLife/time.Second)-30))
	return nil
}

// readUploadBody reads the small JSON body of an upload route.
func readUploadBody(r *http.Request) ([]byte, error) {
	if isBinaryWrite(r) {
		// The value's own bytes, sent here instead of to the form the
		// declaration answers.
		return nil, uds.Invalid("Content-Type", "is %s: the body is JSON that declares the upload (%s), and the bytes go to the form POST {item}?upload answers",
			uds.Truncate(r.Header.Get(headerContentType), 64), uploadShape)
	}
	body, err := readBody(r, 64<<10, "the body exceeds 64 KiB: it declares an upload, the bytes go to the upload's url")
	if err == nil && len(bytes.TrimSpace(body)) == 0 {
		return nil, uds.Invalid("body", "is empty")
	}
	return body, err
}
