package blob

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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

// fakeMultipart answers a copy in parts as S3 does where the local engine
// cannot: its completion honours If-None-Match (completeErr is its
// answer). It records what was asked.
type fakeMultipart struct {
	objects
	completeErr error
	mu          sync.Mutex
	created     *s3.CreateMultipartUploadInput
	parts       []*s3.UploadPartCopyInput
	completed   *s3.CompleteMultipartUploadInput
	aborted     bool
}

// The source fakeMultipart holds: 12 MiB, copied in parts of 5 MiB.
const (
	fakeSourceSize = 12 << 20
	fakeSourceETag = `"source"`
)

func (f *fakeMultipart) HeadObject(_ context.Context, in *s3.HeadObjectInput, _ ...func(*s3.Options)) (*s3.HeadObjectOutput, error) {
	if strings.HasPrefix(aws.ToString(in.Key), uploadPrefix) {
		return &s3.HeadObjectOutput{ContentLength: aws.Int64(fakeSourceSize), ETag: aws.String(fakeSourceETag), ContentType: aws.String("video/mp4")}, nil
	}
	return nil, &types.NotFound{}
}

func (f *fakeMultipart) CreateMultipartUpload(_ context.Context, in *s3.CreateMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	f.created = in
	return &s3.CreateMultipartUploadOutput{UploadId: aws.String("upload")}, nil
}

func (f *fakeMultipart) UploadPartCopy(_ context.Context, in *s3.UploadPartCopyInput, _ ...func(*s3.Options)) (*s3.UploadPartCopyOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.parts = append(f.parts, in)
	return &s3.UploadPartCopyOutput{CopyPartResult: &types.CopyPartResult{ETag: aws.String(fmt.Sprintf(`"part%d"`, aws.ToInt32(in.PartNumber)))}}, nil
}

func (f *fakeMultipart) CompleteMultipartUpload(_ context.Context, in *s3.CompleteMultipartUploadInput, _ ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	f.completed = in
	return &s3.CompleteMultipartUploadOutput{}, f.completeErr
}

func (f *fakeMultipart) AbortMultipartUpload(context.Context, *s3.AbortMultipartUploadInput, ...func(*s3.Options)) (*s3.AbortMultipartUploadOutput, error) {
	f.aborted = true
	return &s3.AbortMultipartUploadOutput{}, nil
}

// TestCopyInPartsAsks checks what a copy in parts asks of S3: the upload
// with the source's type and no tags; parts that cover the source once,
// in order, each only from the source's ETag; the completion only where
// the target holds nothing, S3's 412 then meaning an earlier copy is
// there, which is kept; and S3's 409 (another completion under way) a
// commit to send again. Every completion that fails aborts the upload.
func TestCopyInPartsAsks(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want func(error) bool
	}{
		{"completed", nil, func(err error) bool { return err == nil }},
		{"copied before", &smithy.GenericAPIError{Code: "PreconditionFailed"}, func(err error) bool { return err == nil }},
		{"completed meanwhile", &smithy.GenericAPIError{Code: "ConditionalRequestConflict"}, func(err error) bool {
			return errors.As(err, new(*uds.UnavailableError))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeMultipart{completeErr: tc.err}
			o := Objects{Bucket: (&Bucket{name: "b", objects: f}).WithMultipartCopy(8<<20, 5<<20)}
			if err := o.Copy(context.Background(), uds.ObjectName("a", "1"), uds.ValueName("a", "1")); !tc.want(err) {
				t.Fatalf("Copy: %v", err)
			}
			if aws.ToString(f.created.ContentType) != "video/mp4" || f.created.Tagging != nil {
				t.Fatalf("the upload was created with type %q and tagging %v", aws.ToString(f.created.ContentType), f.created.Tagging)
			}
			slices.SortFunc(f.parts, func(a, b *s3.UploadPartCopyInput) int {
				return int(aws.ToInt32(a.PartNumber) - aws.ToInt32(b.PartNumber))
			})
			var ranges []string
			for _, p := range f.parts {
				if aws.ToString(p.CopySource) != "b/uploads/a/1" || aws.ToString(p.CopySourceIfMatch) != fakeSourceETag {
					t.Fatalf("part %d copied from %s if it matches %s", aws.ToInt32(p.PartNumber), aws.ToString(p.CopySource), aws.ToString(p.CopySourceIfMatch))
				}
				ranges = append(ranges, fmt.Sprintf("%d:%s", aws.ToInt32(p.PartNumber), aws.ToString(p.CopySourceRange)))
			}
			if want := []string{"1:bytes=0-5242879", "2:bytes=5242880-10485759", "3:bytes=10485760-12582911"}; !slices.Equal(ranges, want) {
				t.Fatalf("parts %v, want %v", ranges, want)
			}
			var listed []string
			for _, p := range f.completed.MultipartUpload.Parts {
				listed = append(listed, fmt.Sprintf("%d:%s", aws.ToInt32(p.PartNumber), aws.ToString(p.ETag)))
			}
			if want := []string{`1:"part1"`, `2:"part2"`, `3:"part3"`}; !slices.Equal(listed, want) || aws.ToString(f.completed.IfNoneMatch) != "*" {
				t.Fatalf("completed with parts %v and If-None-Match %q, want %v and *", listed, aws.ToString(f.completed.IfNoneMatch), want)
			}
			if f.aborted != (tc.err != nil) {
				t.Fatalf("aborted: %v, after the completion's %v", f.aborted, tc.err)
			}
		})
	}
}
