package blob

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/udsproject/uds/internal/sameorigin"
)

// FuzzPostPolicy reads any policy document and checks a form of one field
// against it: reading never fails but with an error, and a form admitted
// met every condition and had no field a condition did not name.
func FuzzPostPolicy(f *testing.F) {
	for _, seed := range []string{
		`{"expiration":"2100-01-01T00:00:00Z","conditions":[{"key":"k"},["content-length-range",3,3],{"Content-Type":"image/png"}]}`,
		`{"expiration":"2100-01-01T00:00:00Z","conditions":[["starts-with","$key",""],["eq","$bucket","b"]]}`,
		`{"expiration":"2100-01-01T00:00:00Z","conditions":[["content-length-range",-1,3]]}`,
		`{"expiration":"2100-01-01T00:00:00Z","conditions":[{"key":"k","other":"x"}]}`,
		`{"expiration":"2100-01-01T00:00:00Z","conditions":[["eq","key","k"]]}`,
		`{"expiration":"2100-01-01T00:00:00Z","conditions":[["content-length-range","1","2"]]}`,
		`{"expiration":"2100-01-01T00:00:00Z","conditions":[],"extra":1}`,
		`{"conditions":[]}`,
		`[]`,
	} {
		f.Add(base64.StdEncoding.EncodeToString([]byte(seed)), "key", "k", int64(3))
	}
	f.Fuzz(func(t *testing.T, policy, field, value string, size int64) {
		p, err := parsePolicy(policy)
		if err != nil {
			return
		}
		fields := map[string]string{strings.ToLower(field): value}
		if p.admit("b", fields, size) != nil {
			return
		}
		for _, c := range p.Conditions {
			if c.op == opLength && (size < c.min || size > c.max) {
				t.Fatalf("size %d admitted outside %+v", size, c)
			}
		}
		name := strings.ToLower(field)
		named := uncoveredField(name)
		for _, c := range p.Conditions {
			named = named || c.field == name
		}
		if !named {
			t.Fatalf("field %q admitted without a condition: %+v", field, p)
		}
	})
}

// FuzzSignatures sends the engine requests with any Authorization header
// or presigned query: none is admitted, since none carries a signature
// made with the engine's secret, and each is refused with S3's error,
// never a panic.
func FuzzSignatures(f *testing.F) {
	e := &localEngine{guard: sameorigin.New("127.0.0.1:8081", "", nil), signer: v4.NewSigner(), now: time.Now,
		creds: aws.Credentials{AccessKeyID: "local", SecretAccessKey: "local"}}
	day := time.Now().UTC().Format("20060102")
	for _, seed := range [][2]string{
		{"AWS4-HMAC-SHA256 Credential=local/" + day + "/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=00", ""},
		{"AWS4-HMAC-SHA256 Credential=other/" + day + "/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00", ""},
		{"AWS4-HMAC-SHA256 Credential=local/x, SignedHeaders=, Signature=", ""},
		{"Bearer x", ""},
		{"", "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=local%2F" + day + "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=" + day + "T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=00"},
		{"", "X-Amz-Signature=00&X-Amz-Expires=-1"},
	} {
		f.Add(seed[0], seed[1], day+"T000000Z")
	}
	f.Fuzz(func(t *testing.T, authorization, query, date string) {
		r := httptest.NewRequest("GET", "http://127.0.0.1:8081/uds-local/uploads/x", nil)
		r.URL.RawQuery = query
		if authorization != "" {
			r.Header.Set("Authorization", authorization)
		}
		r.Header.Set("X-Amz-Date", date)
		r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
		err := e.authenticate(r)
		if err == nil {
			t.Fatalf("admitted Authorization %q, query %q", authorization, query)
		}
		if err.status != 400 && err.status != 403 || err.code == "" {
			t.Fatalf("answered %+v", err)
		}
	})
}

// FuzzCopySource reads any x-amz-copy-source and its range as the local
// engine's UploadPartCopy does: reading never panics, and a source read
// names a bucket and a key, and a range of first no greater than last
// that prints back as it was sent.
func FuzzCopySource(f *testing.F) {
	for _, seed := range [][2]string{
		{"uds-test/uploads/a/1", "bytes=0-5242879"},
		{"/uds-test/uploads/a%2F1", ""},
		{"uds-test/uploads/a/1?versionId=2", "bytes=1-1"},
		{"uds-test", "bytes=5-4"},
		{"uds-test/%zz", "bytes=-5"},
		{"b/k", "bytes=+1-2"},
		{"b/k", "bytes=0-9223372036854775808"},
		{"b/k", "items=0-1"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, source, spec string) {
		h := http.Header{}
		h.Set(headerCopySource, source)
		h.Set(headerCopySourceRange, spec)
		req, fail := parseCopySource(h)
		if fail != nil {
			if fail.status/100 != 4 && fail.status != http.StatusNotImplemented {
				t.Fatalf("refused with %d", fail.status)
			}
			return
		}
		if req.bucket == "" || req.key == "" {
			t.Fatalf("%q read as bucket %q and key %q", source, req.bucket, req.key)
		}
		if spec == "" {
			return
		}
		from, to, _ := strings.Cut(strings.TrimPrefix(spec, "bytes="), "-")
		if canonical := "bytes=" + withoutLeadingZeros(from) + "-" + withoutLeadingZeros(to); !req.ranged || req.first > req.last || fmt.Sprintf("bytes=%d-%d", req.first, req.last) != canonical {
			t.Fatalf("range %q read as %v %d-%d", spec, req.ranged, req.first, req.last)
		}
	})
}

// withoutLeadingZeros is a decimal number as fmt prints it.
func withoutLeadingZeros(digits string) string {
	if trimmed := strings.TrimLeft(digits, "0"); trimmed != "" {
		return trimmed
	}
	return "0"
}
