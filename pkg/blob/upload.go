package blob

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Upload is a presigned S3 POST: the client sends a multipart/form-data
// POST to URL with every field of Fields, then the bytes last, as the form
// field "file". Until ExpiresAt S3 takes it without other credentials, and
// only as the policy says: to the one key, with the one Content-Type, of
// exactly the announced size.
type Upload struct {
	URL       string
	Fields    map[string]string
	ExpiresAt time.Time
}

// PresignUpload signs a POST of exactly size bytes of contentType to key,
// valid for ttl. It is signed locally: nothing reaches S3 until the client
// posts.
func (b *Bucket) PresignUpload(ctx context.Context, key, contentType string, size int64, ttl time.Duration) (Upload, error) {
	if ttl <= 0 {
		// The SDK would read 0 as its default of 15 minutes, and
		// ExpiresAt would then be wrong.
		return Upload{}, fmt.Errorf("presigning an upload to %s: the time to live %v is not positive", key, ttl)
	}
	// The policy expires at the signing time plus ttl, written to the
	// second below. The time taken before signing, cut the same way, is
	// never later, so ExpiresAt never promises more than S3 grants.
	expires := time.Now().Add(ttl).Truncate(time.Second)
	req, err := b.presign.PresignPostObject(ctx, &s3.PutObjectInput{Bucket: &b.name, Key: &key}, func(o *s3.PresignPostOptions) {
		o.Expires = ttl
		// The SDK's policy pins the key already. S3 refuses a form with
		// a field the policy does not cover, so Content-Type is both a
		// condition and a field.
		o.Conditions = []any{
			map[string]string{contentTypeField: contentType},
			[]any{"content-length-range", size, size},
		}
	})
	if err != nil {
		return Upload{}, fmt.Errorf("presigning an upload to %s: %w", key, err)
	}
	fields := maps.Clone(req.Values)
	fields[contentTypeField] = contentType
	return Upload{URL: req.URL, Fields: fields, ExpiresAt: expires}, nil
}

// contentTypeField is the form field, and the policy condition, that sets
// an uploaded object's Content-Type.
const contentTypeField = "Content-Type"

// uploadPrefix is where uploads land in the bucket; the bucket's event
// notification and its lifecycle rule for abandoned uploads filter on it.
const uploadPrefix = "uploads/"

// UploadKey is the key of the object an upload sends.
func UploadKey(uploadID string) string { return uploadPrefix + uploadID }

// ParseUploadKey is UploadKey's inverse: the upload ID of a key under
// uploads/, if it is one NewUploadID could have made.
func ParseUploadKey(key string) (string, bool) {
	id, ok := strings.CutPrefix(key, uploadPrefix)
	if !ok || !ValidUploadID(id) {
		return "", false
	}
	return id, true
}

// uploadIDBytes is an upload ID's randomness: 128 bits, so IDs are never
// guessed or repeated.
const uploadIDBytes = 16

// NewUploadID is a fresh upload ID: random, URL- and key-safe.
func NewUploadID() string {
	b := make([]byte, uploadIDBytes)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// ValidUploadID reports whether id has NewUploadID's form. An upload ID
// comes back from clients (a commit) and from S3 events; one of another
// form names no upload, and checking it first keeps arbitrary text out of
// keys and lookups.
func ValidUploadID(id string) bool {
	if len(id) != base64.RawURLEncoding.EncodedLen(uploadIDBytes) {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(id)
	return err == nil
}
