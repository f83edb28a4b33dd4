package blob

import (
	"encoding/hex"
	"encoding/xml"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// The headers of an UploadPartCopy: the object copied from, the range of
// its bytes, and the ETag it must have.
const (
	headerCopySource        = "X-Amz-Copy-Source"
	headerCopySourceRange   = "X-Amz-Copy-Source-Range"
	headerCopySourceIfMatch = "X-Amz-Copy-Source-If-Match"
)

// unsupportedCopyConditions are the copy source's conditions the engine
// does not check; it refuses them rather than copy as if they held.
var unsupportedCopyConditions = []string{
	"X-Amz-Copy-Source-If-None-Match", "X-Amz-Copy-Source-If-Modified-Since", "X-Amz-Copy-Source-If-Unmodified-Since",
}

// isPartCopy reports whether r is an UploadPartCopy: a part's PUT that
// names a source rather than sending the bytes.
func isPartCopy(r *http.Request) bool {
	q := r.URL.Query()
	return r.Method == http.MethodPut && q.Has("uploadId") && q.Has("partNumber") && r.Header.Get(headerCopySource) != ""
}

// copySourceRequest is what an UploadPartCopy asks to copy: the object
// at key in bucket, its bytes first to last (all of them without a
// range), if its ETag is ifMatch (any ETag without one).
type copySourceRequest struct {
	bucket, key string
	ranged      bool
	first, last int64
	ifMatch     string
}

// parseCopySource reads an UploadPartCopy's source from its headers, as
// S3 spells them: x-amz-copy-source is bucket/key, URL-escaped, with or
// without a leading slash; x-amz-copy-source-range is bytes=first-last.
func parseCopySource(h http.Header) (copySourceRequest, *engineError) {
	for _, name := range unsupportedCopyConditions {
		if h.Get(name) != "" {
			return copySourceRequest{}, &engineError{http.StatusNotImplemented, "NotImplemented", "the local S3 engine does not check " + name}
		}
	}
	source := strings.TrimPrefix(h.Get(headerCopySource), "/")
	if strings.Contains(source, "?") {
		return copySourceRequest{}, &engineError{http.StatusNotImplemented, "NotImplemented", "the local S3 engine keeps no versions to copy from"}
	}
	unescaped, err := url.PathUnescape(source)
	bucket, key, _ := strings.Cut(unescaped, "/")
	if err != nil || bucket == "" || key == "" {
		return copySourceRequest{}, invalidArgument("x-amz-copy-source " + strconv.Quote(source) + " is not bucket/key, URL-escaped")
	}
	req := copySourceRequest{bucket: bucket, key: key, ifMatch: h.Get(headerCopySourceIfMatch)}
	if spec := h.Get(headerCopySourceRange); spec != "" {
		if req.first, req.last, req.ranged = parseByteRange(spec); !req.ranged {
			return copySourceRequest{}, invalidArgument("x-amz-copy-source-range " + strconv.Quote(spec) + " is not bytes=first-last, first no greater than last")
		}
	}
	return req, nil
}

// parseByteRange reads bytes=first-last, two decimal offsets without
// signs, first no greater than last.
func parseByteRange(spec string) (first, last int64, ok bool) {
	offsets, found := strings.CutPrefix(spec, "bytes=")
	from, to, dash := strings.Cut(offsets, "-")
	a, errFirst := strconv.ParseUint(from, 10, 63)
	b, errLast := strconv.ParseUint(to, 10, 63)
	if !found || !dash || errFirst != nil || errLast != nil || a > b {
		return 0, 0, false
	}
	return int64(a), int64(b), true
}

// copyPartResult is S3's answer to an UploadPartCopy.
type copyPartResult struct {
	XMLName      xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ CopyPartResult"`
	ETag         string   `xml:"ETag"`
	LastModified string   `xml:"LastModified"`
}

// copyPart answers an UploadPartCopy, which gofakes3 would take for a
// part's upload and store its empty body: the engine reads the source's
// range from the backend and hands gofakes3 a part's upload of those
// bytes, then answers as S3 does. A source whose ETag is not the one
// x-amz-copy-source-if-match names is S3's 412.
func (e *localEngine) copyPart(w http.ResponseWriter, r *http.Request) {
	src, fail := parseCopySource(r.Header)
	if fail != nil {
		fail.write(w, r)
		return
	}
	var rangeRequest *gofakes3.ObjectRangeRequest
	if src.ranged {
		rangeRequest = &gofakes3.ObjectRangeRequest{Start: src.first, End: src.last}
	}
	obj, err := e.backend.GetObject(src.bucket, src.key, rangeRequest)
	if err != nil {
		backendError(err).write(w, r)
		return
	}
	defer obj.Contents.Close()
	length := obj.Size
	if obj.Range != nil {
		length = obj.Range.Length
	}
	switch etag := hex.EncodeToString(obj.Hash); {
	case src.ifMatch != "" && strings.Trim(src.ifMatch, `"`) != etag:
		(&engineError{http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold"}).write(w, r)
		return
	case src.ranged && src.last >= obj.Size:
		// gofakes3 cuts a range short at the object's end; S3 refuses it.
		invalidArgument("Range specified is not valid for source object of size: "+strconv.FormatInt(obj.Size, 10)).write(w, r)
		return
	}
	part := r.Clone(r.Context())
	for name := range part.Header {
		if strings.HasPrefix(name, headerCopySource) {
			delete(part.Header, name)
		}
	}
	part.Body, part.ContentLength = obj.Contents, length
	part.Header.Set("Content-Length", strconv.FormatInt(length, 10))
	// gofakes3's answer is held, to be answered in S3's words for a
	// part's copy.
	answer := httptest.NewRecorder()
	e.s3.ServeHTTP(answer, part)
	if answer.Code != http.StatusOK {
		maps.Copy(w.Header(), answer.Header())
		w.WriteHeader(answer.Code)
		_, _ = w.Write(answer.Body.Bytes())
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	_, _ = w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(copyPartResult{ETag: answer.Header().Get("ETag"), LastModified: e.now().UTC().Format(time.RFC3339Nano)})
}

// backendError is the S3 error XML of an error gofakes3's backend
// returned: its S3 code where it has one (NoSuchKey, NoSuchBucket,
// InvalidRange), else an internal error.
func backendError(err error) *engineError {
	var coded interface{ ErrorCode() gofakes3.ErrorCode }
	if errors.As(err, &coded) {
		code := coded.ErrorCode()
		return &engineError{code.Status(), string(code), err.Error()}
	}
	return &engineError{http.StatusInternalServerError, "InternalError", err.Error()}
}
