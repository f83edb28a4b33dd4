package blob

import (
	"encoding/base64"
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
