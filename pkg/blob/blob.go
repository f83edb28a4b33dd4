// Package blob keeps the bytes of large values in an S3 bucket: presigned
// POST uploads that the client sends straight to S3, the checks of what
// arrived, presigned downloads, streaming reads and removal. It knows
// nothing of items, quotas or owners; the store decides which key holds
// what and when an object may go.
//
// Every call goes to S3 through the SDK, on AWS or on an S3-compatible
// engine at an endpoint (the local server's, ServeLocal; the tests',
// blobtest).
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/udsproject/uds/internal/awsconf"
	"github.com/udsproject/uds/pkg/uds"
)

// ErrNoObject is the answer about a key that holds no object: an upload
// not (yet) made, or an object already deleted.
var ErrNoObject = errors.New("no such object")

// Object is what S3 says of a stored object.
type Object struct {
	// Size is the object's length in bytes.
	Size int64
	// ContentType is the Content-Type the object was stored with, as
	// the uploader sent it.
	ContentType string
}

// objects are the S3 calls a Bucket makes; *s3.Client has them. With
// presigner they are all a Bucket asks of S3, so they are the grants a
// function needs: s3:GetObject (HEAD and GET, the presigned GETs it signs,
// and the source of a copy), s3:PutObject (the POSTs it signs, and the
// target of a copy, in parts too), s3:AbortMultipartUpload (a copy in
// parts that failed), s3:GetObjectTagging (an upload's pending tag) and
// s3:DeleteObject; and s3:ListBucket on the bucket, without which S3
// answers a missing key 403 rather than 404, and ErrNoObject would be an
// access error.
type objects interface {
	HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	CopyObject(context.Context, *s3.CopyObjectInput, ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
	CreateMultipartUpload(context.Context, *s3.CreateMultipartUploadInput, ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error)
	UploadPartCopy(context.Context, *s3.UploadPartCopyInput, ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error)
	CompleteMultipartUpload(context.Context, *s3.CompleteMultipartUploadInput, ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error)
	AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error)
	DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	GetObjectTagging(context.Context, *s3.GetObjectTaggingInput, ...func(*s3.Options)) (*s3.GetObjectTaggingOutput, error)
}

// presigner signs the requests a Bucket hands out rather than sends;
// *s3.PresignClient has them.
type presigner interface {
	PresignPostObject(context.Context, *s3.PutObjectInput, ...func(*s3.PresignPostOptions)) (*s3.PresignedPostRequest, error)
	PresignGetObject(context.Context, *s3.GetObjectInput, ...func(*s3.PresignOptions)) (*v4.PresignedHTTPRequest, error)
}

// Bucket is one S3 bucket that holds large values.
type Bucket struct {
	name    string
	objects objects
	presign presigner
	// tagPending marks uploads pending (pendingTagging), for the bucket's
	// rule for abandoned uploads; a commit copies the value without the
	// tag. It is off on S3-compatible engines (an endpoint of its own):
	// gofakes3 has no tagging API, and takes a tagging request for a
	// write of the object (PUT ?tagging) or its deletion (DELETE
	// ?tagging). There, abandoned uploads go when their reservations
	// lapse (store/upload.go).
	tagPending bool
	// multipart says which copies go in parts, and how (copy.go).
	multipart multipartCopy
}

// New is the bucket named name, reached through client.
func New(client *s3.Client, name string) *Bucket {
	return &Bucket{name: name, objects: client, presign: s3.NewPresignClient(client)}
}

// Name is the bucket's name.
func (b *Bucket) Name() string { return b.name }

// NewClient is an S3 client of the default AWS configuration. With an
// endpoint (an S3-compatible engine) it addresses buckets by path, as such
// engines expect, rather than by host name, and signs with placeholder
// credentials where none are configured (awsconf.Load).
func NewClient(ctx context.Context, endpoint string) (*s3.Client, error) {
	cfg, err := awsconf.Load(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
			// S3-compatible engines (gofakes3) answer without the
			// checksums S3 sends, and the SDK would log a line about
			// each answer on the server's output.
			o.DisableLogOutputChecksumValidationSkipped = true
		}
	}), nil
}

// FromConfig is the bucket the configuration names (config.Config's
// Bucket and S3Endpoint), or nil when it names none: large values are then
// not available.
func FromConfig(ctx context.Context, bucket, endpoint string) (*Bucket, error) {
	if bucket == "" {
		return nil, nil
	}
	client, err := NewClient(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("the S3 client for bucket %s: %w", bucket, err)
	}
	b := New(client, bucket)
	b.tagPending = endpoint == ""
	if endpoint != "" {
		b.multipart.threshold = engineCopyThreshold
	}
	return b, nil
}

// Head says what the object at key is, or ErrNoObject. S3 answers a HEAD
// without a body, so a missing bucket is ErrNoObject too.
func (b *Bucket) Head(ctx context.Context, key string) (Object, error) {
	out, err := b.objects.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.name, Key: &key})
	if err != nil {
		return Object{}, b.fail("head", key, err)
	}
	return Object{Size: aws.ToInt64(out.ContentLength), ContentType: aws.ToString(out.ContentType)}, nil
}

// Open streams the object at key; the caller closes the reader. A key
// that holds no object is ErrNoObject.
func (b *Bucket) Open(ctx context.Context, key string) (io.ReadCloser, Object, error) {
	out, err := b.objects.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.name, Key: &key})
	if err != nil {
		return nil, Object{}, b.fail("get", key, err)
	}
	return out.Body, Object{Size: aws.ToInt64(out.ContentLength), ContentType: aws.ToString(out.ContentType)}, nil
}

// Delete removes the object at key. A key that holds none is not an
// error: removal is repeated after failures and races, and the end state
// is the same.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	_, err := b.objects.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.name, Key: &key})
	if err == nil {
		return nil
	}
	if err = b.fail("delete", key, err); errors.Is(err, ErrNoObject) {
		return nil
	}
	return err
}

// PresignGet is a URL that downloads the object at key for ttl, with no
// other credentials. It is signed locally, so it is handed out whether or
// not the object exists; fetching a missing one answers 404. S3 answers
// the bytes with the headers answer names, each part of the signature.
func (b *Bucket) PresignGet(ctx context.Context, key string, answer uds.DownloadHeaders, ttl time.Duration) (string, error) {
	in := &s3.GetObjectInput{Bucket: &b.name, Key: &key}
	if answer.ContentType != "" {
		in.ResponseContentType = &answer.ContentType
	}
	if answer.ContentDisposition != "" {
		in.ResponseContentDisposition = &answer.ContentDisposition
	}
	req, err := b.presign.PresignGetObject(ctx, in, s3.WithPresignExpires(ttl))
	if err != nil {
		return "", fmt.Errorf("presigning a download of %s: %w", key, err)
	}
	return req.URL, nil
}

// fail names the call and key in err, and turns S3's answers about a
// missing key into ErrNoObject: HEAD has no body, so its 404 is NotFound;
// the other calls say NoSuchKey, which the SDK models as its own type for
// some calls (GetObject) and leaves a generic error for others
// (CopyObject, whose missing source it is).
func (b *Bucket) fail(op, key string, err error) error {
	var notFound *types.NotFound
	if errors.As(err, &notFound) || errorCode(err) == "NoSuchKey" {
		return fmt.Errorf("%s s3://%s/%s: %w", op, b.name, key, ErrNoObject)
	}
	return fmt.Errorf("%s s3://%s/%s: %w", op, b.name, key, err)
}

// errorCode is the code of S3's error answer in err, or "" for another
// error.
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}
