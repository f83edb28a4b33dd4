package blob

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// Objects is the bucket with its objects named as UDS names them: an
// upload's object (uds.ObjectName) under uploads/, where its presigned
// POST sends it, and a committed value (uds.ValueName) at its name, under
// values/, where no POST reaches. It is what the store (store.Objects) and
// the API (httpapi.Bucket) ask of the bucket.
type Objects struct{ Bucket *Bucket }

// objectKey is the key of the named object.
func objectKey(name string) string {
	if uds.IsValueName(name) {
		return name
	}
	return UploadKey(name)
}

// Stat is the named object's size and type, uds.ErrUploadPending when it
// has not arrived.
func (o Objects) Stat(ctx context.Context, name string) (int64, string, error) {
	obj, err := o.Bucket.Head(ctx, objectKey(name))
	if errors.Is(err, ErrNoObject) {
		return 0, "", uds.ErrUploadPending
	}
	return obj.Size, obj.ContentType, err
}

// Copy copies the object named from to the name to, once (Bucket.Copy),
// uds.ErrUploadPending when from has not arrived. The commit is
// unavailable for now, to be sent again, while another copy to the same
// key is under way (S3's 409 ConditionalRequestConflict: the bucket's
// event and the client committing at once; the one sent again finds the
// copy), and when a POST replaced from during a copy in parts
// (ErrSourceChanged: the one sent again copies the new object whole).
func (o Objects) Copy(ctx context.Context, from, to string) error {
	err := o.Bucket.Copy(ctx, objectKey(from), objectKey(to))
	switch {
	case errors.Is(err, ErrNoObject):
		return uds.ErrUploadPending
	case errorCode(err) == "ConditionalRequestConflict":
		return &uds.UnavailableError{Op: "copy " + from, Err: err}
	case errors.Is(err, ErrSourceChanged):
		return &uds.UnavailableError{Op: "copy " + from, Err: err,
			Reason: "the upload's object was replaced (its form was posted again) while the commit copied it; nothing was committed: commit again to commit the object as it is now"}
	}
	return err
}

// Remove deletes the named object; one already gone is no error.
func (o Objects) Remove(ctx context.Context, name string) error {
	return o.Bucket.Delete(ctx, objectKey(name))
}

// RemoveUnclaimed deletes the named upload's object, which no reservation
// awaits any more, unless it lost its pending tag: an item committed
// before commits copied values names that object where it is. One
// already gone is no error.
func (o Objects) RemoveUnclaimed(ctx context.Context, name string) error {
	key := UploadKey(name)
	pending, err := o.Bucket.Pending(ctx, key)
	switch {
	case errors.Is(err, ErrNoObject) || err == nil && !pending:
		return nil
	case err != nil:
		return err
	}
	return o.Bucket.Delete(ctx, key)
}

// PresignUpload signs the POST that uploads the named object, always
// under uploads/: no form ever names a committed value's key.
func (o Objects) PresignUpload(ctx context.Context, name, contentType string, size int64, ttl time.Duration) (uds.PresignedPost, error) {
	up, err := o.Bucket.PresignUpload(ctx, UploadKey(name), contentType, size, ttl)
	return uds.PresignedPost{URL: up.URL, Fields: up.Fields}, err
}

// PresignGet signs a download of the named object, answered with the
// headers answer names.
func (o Objects) PresignGet(ctx context.Context, name string, answer uds.DownloadHeaders, ttl time.Duration) (string, error) {
	return o.Bucket.PresignGet(ctx, objectKey(name), answer, ttl)
}

// Open streams the named object.
func (o Objects) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, _, err := o.Bucket.Open(ctx, objectKey(name))
	return rc, err
}
