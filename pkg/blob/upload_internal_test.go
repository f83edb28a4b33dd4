package blob

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/udsproject/uds/pkg/uds"
)

// fakeS3 answers the copies and tag reads of the tests below as S3 does,
// which the local engine cannot: it ignores a copy's condition and has no
// tags.
type fakeS3 struct {
	objects
	copyErr error
	copied  *s3.CopyObjectInput
	tags    []types.Tag
}

// HeadObject answers a small source, which Copy copies in one CopyObject.
func (f *fakeS3) HeadObject(context.Context, *s3.HeadObjectInput, ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	return &s3.HeadObjectOutput{ContentLength: aws.Int64(9)}, nil
}

func (f *fakeS3) CopyObject(_ context.Context, in *s3.CopyObjectInput, _ ...func(*s3.Options)) (*s3.CopyObjectOutput, error) {
	f.copied = in
	return &s3.CopyObjectOutput{}, f.copyErr
}

func (f *fakeS3) GetObjectTagging(context.Context, *s3.GetObjectTaggingInput, ...func(*s3.Options)) (*s3.GetObjectTaggingOutput, error) {
	return &s3.GetObjectTaggingOutput{TagSet: f.tags}, nil
}

// TestCopyOnce checks what a commit's copy asks of S3: the copy only where
// the target holds nothing (S3's 412 then means an earlier copy is there,
// which is kept), without the upload's tags, and a missing source read as
// an upload not arrived.
func TestCopyOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"copied", nil, nil},
		{"copied before", &smithy.GenericAPIError{Code: "PreconditionFailed"}, nil},
		{"no source", &smithy.GenericAPIError{Code: "NoSuchKey"}, ErrNoObject},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeS3{copyErr: tc.err}
			b := &Bucket{name: "b", objects: f, tagPending: true}
			if err := b.Copy(context.Background(), "uploads/a/1", "values/a/1"); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Copy: %v, want %v", err, tc.want)
			}
			in := f.copied
			if aws.ToString(in.CopySource) != "b/uploads/a/1" || aws.ToString(in.Key) != "values/a/1" ||
				aws.ToString(in.IfNoneMatch) != "*" || in.TaggingDirective != types.TaggingDirectiveReplace {
				t.Fatalf("CopyObject asked with source %s, key %s, If-None-Match %s, tagging %s",
					aws.ToString(in.CopySource), aws.ToString(in.Key), aws.ToString(in.IfNoneMatch), in.TaggingDirective)
			}
		})
	}
}

// TestPendingReadsTheTag: where the bucket tags uploads, only an object
// still tagged pending counts as an upload no commit took; an untagged one
// may be the value of an item committed in place.
func TestPendingReadsTheTag(t *testing.T) {
	for _, tc := range []struct {
		name string
		tags []types.Tag
		want bool
	}{
		{"tagged", []types.Tag{{Key: aws.String(pendingTagKey), Value: aws.String("1")}}, true},
		{"untagged", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Bucket{name: "b", objects: &fakeS3{tags: tc.tags}, tagPending: true}
			if got, err := b.Pending(context.Background(), "uploads/a/1"); err != nil || got != tc.want {
				t.Fatalf("Pending: %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// TestCopyUnderWay: S3's 409 while another copy to the key is under way
// makes the commit unavailable for now (503), to be sent again.
func TestCopyUnderWay(t *testing.T) {
	o := Objects{Bucket: &Bucket{name: "b", objects: &fakeS3{copyErr: &smithy.GenericAPIError{Code: "ConditionalRequestConflict"}}}}
	var unavailable *uds.UnavailableError
	if err := o.Copy(context.Background(), uds.ObjectName("a", "1"), uds.ValueName("a", "1")); !errors.As(err, &unavailable) {
		t.Fatalf("Copy: %v, want a *uds.UnavailableError", err)
	}
}
