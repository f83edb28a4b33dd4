package blob

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/udsproject/uds/pkg/uds"
)

// ErrSourceChanged is the answer of a copy in parts whose source was
// replaced while its parts were copied (a POST to the upload's form
// landing mid-copy): no part of the new object joins parts of the old
// one, and the copy is abandoned. A copy started again copies the object
// as it is then, whole.
var ErrSourceChanged = errors.New("the object changed during its copy")

// The multipart copy's defaults (multipartCopy). A CopyObject takes time
// in proportion to the object's size, and so does each part of a copy in
// parts; parts copied side by side take the time of one. An object of one
// part or less is copied with one CopyObject: a part of its size would
// take as long, and a multipart upload costs two requests more.
// Above that, parts of 256 MiB, 20 at a time, copy a value of
// uds.MaxObjectBytes (5 GiB, 20 parts) in one round.
const (
	defaultCopyThreshold   = 256 << 20
	defaultCopyPartSize    = 256 << 20
	defaultCopyConcurrency = 20
	// S3's limits: every part but the last has at least minPartSize
	// bytes, and an upload has at most maxParts parts.
	minPartSize = 5 << 20
	maxParts    = 10_000
	// abortTimeout bounds the abort of a failed copy in parts, which runs
	// after the commit's own time has ended as often as not (a copy cut
	// short by its budget).
	abortTimeout = 5 * time.Second
)

// multipartCopy says when and how Copy copies in parts: objects of more
// than threshold bytes, in parts of partSize bytes (the last one
// shorter), concurrency of them at a time. A zero field is its default.
type multipartCopy struct {
	threshold, partSize int64
	concurrency         int
}

// orDefaults is m with every zero field set to its default.
func (m multipartCopy) orDefaults() multipartCopy {
	if m.threshold == 0 {
		m.threshold = defaultCopyThreshold
	}
	if m.partSize == 0 {
		m.partSize = defaultCopyPartSize
	}
	if m.concurrency == 0 {
		m.concurrency = defaultCopyConcurrency
	}
	return m
}

// WithMultipartCopy is the bucket with copies of objects larger than
// threshold bytes made in parts of partSize bytes (at least S3's 5 MiB):
// tests copy values of a few MiB in parts, as a deployment copies values
// of gigabytes.
func (b *Bucket) WithMultipartCopy(threshold, partSize int64) *Bucket {
	c := *b
	c.multipart = multipartCopy{threshold: threshold, partSize: max(partSize, minPartSize)}
	return &c
}

// Copy copies the object at src to dst, with its type and without its
// tags, unless dst holds an object already. The copy is made once: a
// commit that runs again after its copy (a retry, or the bucket's event
// racing the client) keeps the first, and no later POST to src reaches
// dst through a copy. A src that holds no object is ErrNoObject.
//
// An object larger than the bucket's threshold is copied in parts
// (copyInParts): one CopyObject of gigabytes outlasts a request's budget.
func (b *Bucket) Copy(ctx context.Context, src, dst string) error {
	source, err := b.objects.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.name, Key: &src})
	if err != nil {
		return b.fail("copy to "+dst+" from", src, err)
	}
	if m := b.multipart.orDefaults(); aws.ToInt64(source.ContentLength) > m.threshold {
		return b.copyInParts(ctx, src, dst, source, m)
	}
	copySource := b.copySource(src)
	_, err = b.objects.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket: &b.name, Key: &dst, CopySource: &copySource,
		// S3 answers 412 when dst exists; engines that ignore the
		// condition copy again, from an upload the commit has not
		// claimed yet. One CopyObject copies a snapshot of src, so a
		// POST landing meanwhile cannot mix into it.
		IfNoneMatch: aws.String("*"),
		// Tags are replaced by none: the copy is not pending, and the
		// function needs no grant to read the source's tags.
		TaggingDirective: types.TaggingDirectiveReplace,
	})
	if err == nil || errorCode(err) == "PreconditionFailed" {
		return nil
	}
	return b.fail("copy to "+dst+" from", src, err)
}

// copySource is the x-amz-copy-source of the object at key: the bucket
// and key, escaped as a URL's path.
func (b *Bucket) copySource(key string) string {
	return (&url.URL{Path: b.name + "/" + key}).EscapedPath()
}

// copyInParts copies source, the object at src, to dst in one multipart
// upload: its parts copied side by side (UploadPartCopy), each only from
// the object source describes (its ETag), and completed only where dst
// holds nothing. The upload starts with source's Content-Type and no
// tags, and is aborted on any failure, cancellation included.
func (b *Bucket) copyInParts(ctx context.Context, src, dst string, source *s3.HeadObjectOutput, m multipartCopy) error {
	// A copy made before (a commit sent again after losing its answer) is
	// kept, as CopyObject's If-None-Match keeps it, without copying
	// gigabytes to learn it from the completion's 412.
	switch _, err := b.Head(ctx, dst); {
	case err == nil:
		return nil
	case !errors.Is(err, ErrNoObject):
		return err
	}
	op := "copy in parts to " + dst + " from"
	created, err := b.objects.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: &b.name, Key: &dst, ContentType: source.ContentType})
	if err != nil {
		return b.fail(op, src, err)
	}
	parts, err := b.copyParts(ctx, src, dst, created.UploadId, source, m)
	if err == nil {
		_, err = b.objects.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
			Bucket: &b.name, Key: &dst, UploadId: created.UploadId,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
			// As CopyObject's: S3's 412 means an earlier copy is there,
			// which is kept. gofakes3 ignores it.
			IfNoneMatch: aws.String("*"),
		})
		if err == nil {
			return nil
		}
		if errorCode(err) == "PreconditionFailed" {
			err = nil
		}
	}
	b.abort(ctx, dst, created.UploadId)
	if err != nil {
		return b.fail(op, src, err)
	}
	return nil
}

// copyParts copies source's bytes into the multipart upload uploadID, at
// most m.concurrency parts at a time, and returns the parts as
// CompleteMultipartUpload lists them. Every part is copied only from the
// object source describes (x-amz-copy-source-if-match: its ETag), so a POST
// replacing it mid-copy fails the parts copied after it (S3's 412,
// ErrSourceChanged) rather than mixing two objects' bytes. The first
// failure stops the rest.
func (b *Bucket) copyParts(ctx context.Context, src, dst string, uploadID *string, source *s3.HeadObjectOutput, m multipartCopy) ([]types.CompletedPart, error) {
	size := aws.ToInt64(source.ContentLength)
	partSize := max(m.partSize, (size+maxParts-1)/maxParts)
	parts := make([]types.CompletedPart, (size+partSize-1)/partSize)
	copySource := b.copySource(src)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(m.concurrency, len(parts)) {
		wg.Go(func() {
			for i := range next {
				first := int64(i) * partSize
				number := aws.Int32(int32(i + 1))
				out, err := b.objects.UploadPartCopy(ctx, &s3.UploadPartCopyInput{
					Bucket: &b.name, Key: &dst, UploadId: uploadID, PartNumber: number,
					CopySource:        &copySource,
					CopySourceRange:   aws.String(fmt.Sprintf("bytes=%d-%d", first, min(first+partSize, size)-1)),
					CopySourceIfMatch: source.ETag,
				})
				switch {
				case errorCode(err) == "PreconditionFailed":
					cancel(fmt.Errorf("%w: part %d: %w", ErrSourceChanged, *number, err))
				case err != nil:
					cancel(err)
				case out.CopyPartResult == nil || out.CopyPartResult.ETag == nil:
					cancel(fmt.Errorf("part %d: S3 answered no ETag", *number))
				default:
					parts[i] = types.CompletedPart{PartNumber: number, ETag: out.CopyPartResult.ETag}
				}
			}
		})
	}
feed:
	for i := range parts {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return parts, nil
}

// abort abandons the multipart upload uploadID and the parts it holds,
// even after ctx has ended. Its failure is not the copy's: the bucket's
// lifecycle rule (infra/bucket.go, IncompleteMultipartUploads) removes
// an upload left incomplete a day later, as it does one whose function
// was stopped mid-copy.
func (b *Bucket) abort(ctx context.Context, key string, uploadID *string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	_, _ = b.objects.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &b.name, Key: &key, UploadId: uploadID})
}

// engineCopyThreshold is the threshold of copies in parts on an
// S3-compatible engine (FromConfig): none is made, since every value
// fits one CopyObject. gofakes3 keeps a multipart upload's parts in
// memory and assembles the object there, where its CopyObject streams
// from file to file; the local server has no request budget a single
// copy could outlast. The tests lower it (WithMultipartCopy) to run copies
// in parts against the engine, which copies parts (localcopy.go).
const engineCopyThreshold = uds.MaxObjectBytes
