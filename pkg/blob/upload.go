package blob

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/udsproject/uds/pkg/uds"
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
		if b.tagPending {
			o.Conditions = append(o.Conditions, map[string]string{taggingField: pendingTagging})
		}
	})
	if err != nil {
		return Upload{}, fmt.Errorf("presigning an upload to %s: %w", key, err)
	}
	fields := maps.Clone(req.Values)
	fields[contentTypeField] = contentType
	if b.tagPending {
		fields[taggingField] = pendingTagging
	}
	return Upload{URL: req.URL, Fields: fields, ExpiresAt: expires}, nil
}

// taggingField is the form field, and the policy condition, that tags an
// uploaded object; pendingTagging tags it pending (uds-pending=1), which
// the bucket's lifecycle rule expires after two days. A commit copies the
// value without the tag (Copy), so the rule never removes a value an item
// names.
const (
	taggingField   = "tagging"
	pendingTagging = "<Tagging><TagSet><Tag><Key>uds-pending</Key><Value>1</Value></Tag></TagSet></Tagging>"
	pendingTagKey  = "uds-pending"
)

// Pending reports whether the object at key still carries the pending tag
// of an upload never committed; a key that holds no object is
// ErrNoObject. On an engine that tags nothing every object counts as
// pending: such an engine sends no bucket events, whose commits are what
// asks (Objects.RemoveUnclaimed), so only tests ask it there.
func (b *Bucket) Pending(ctx context.Context, key string) (bool, error) {
	if !b.tagPending {
		return true, nil
	}
	out, err := b.objects.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &b.name, Key: &key})
	if err != nil {
		return false, b.fail("read the tags of", key, err)
	}
	for _, tag := range out.TagSet {
		if aws.ToString(tag.Key) == pendingTagKey {
			return true, nil
		}
	}
	return false, nil
}

// contentTypeField is the form field, and the policy condition, that sets
// an uploaded object's Content-Type.
const contentTypeField = "Content-Type"

// uploadPrefix is where uploads land in the bucket; the bucket's event
// notification and its lifecycle rule for abandoned uploads filter on it.
const uploadPrefix = "uploads/"

// UploadKey is the key of the object an upload sends, named as UDS names
// it (uds.ObjectName: its app and upload ID).
func UploadKey(name string) string { return uploadPrefix + name }

// ParseUploadKey is UploadKey's inverse: the object name of a key under
// uploads/, if it is one UDS could have made.
func ParseUploadKey(key string) (string, bool) {
	name, ok := strings.CutPrefix(key, uploadPrefix)
	if _, _, valid := uds.ParseObjectName(name); !ok || !valid {
		return "", false
	}
	return name, true
}
