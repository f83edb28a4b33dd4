package blob

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// Objects is the bucket with its objects named as UDS names them
// (uds.ObjectName), each under uploads/: what the store (store.Objects)
// and the API (httpapi.Bucket) ask of it.
type Objects struct{ Bucket *Bucket }

// Stat is the named object's size and type, uds.ErrUploadPending when it
// has not arrived.
func (o Objects) Stat(ctx context.Context, name string) (int64, string, error) {
	obj, err := o.Bucket.Head(ctx, UploadKey(name))
	if errors.Is(err, ErrNoObject) {
		return 0, "", uds.ErrUploadPending
	}
	return obj.Size, obj.ContentType, err
}

// Keep marks the named object committed.
func (o Objects) Keep(ctx context.Context, name string) error {
	return o.Bucket.Keep(ctx, UploadKey(name))
}

// Remove deletes the named object; one already gone is no error.
func (o Objects) Remove(ctx context.Context, name string) error {
	return o.Bucket.Delete(ctx, UploadKey(name))
}

// PresignUpload signs the POST that uploads the named object.
func (o Objects) PresignUpload(ctx context.Context, name, contentType string, size int64, ttl time.Duration) (uds.PresignedPost, error) {
	up, err := o.Bucket.PresignUpload(ctx, UploadKey(name), contentType, size, ttl)
	return uds.PresignedPost{URL: up.URL, Fields: up.Fields}, err
}

// PresignGet signs a download of the named object, answered with the
// headers answer names.
func (o Objects) PresignGet(ctx context.Context, name string, answer uds.DownloadHeaders, ttl time.Duration) (string, error) {
	return o.Bucket.PresignGet(ctx, UploadKey(name), answer, ttl)
}

// Open streams the named object.
func (o Objects) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, _, err := o.Bucket.Open(ctx, UploadKey(name))
	return rc, err
}
