package blob_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/uds"
)

// devOrigin is the origin of a front end under development that the
// engine of these tests allows.
const devOrigin = "http://localhost:3000"

// s3Answer is what the engine answered: the status, S3's error code (from
// its error XML), and the CORS headers.
type s3Answer struct {
	status      int
	code        string
	allowOrigin string
}

// send sends req to the engine and reads its answer.
func send(t *testing.T, req *http.Request) s3Answer {
	t.Helper()
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var e struct{ Code string }
	_ = xml.Unmarshal(body, &e)
	return s3Answer{res.StatusCode, e.Code, res.Header.Get("Access-Control-Allow-Origin")}
}

// formRequest is the POST of an upload's form with fields and the bytes.
func formRequest(t *testing.T, up blob.Upload, fields map[string]string, value []byte) *http.Request {
	t.Helper()
	form, contentType := blobtest.Form(t, fields, value)
	req, err := http.NewRequest(http.MethodPost, up.URL, form)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	return req
}

// TestLocalEngineEnforcesPolicy: the engine refuses, as S3 does, every
// form that is not the one the policy allows, and stores nothing of it.
// Before it checked policies each of these was stored as sent.
func TestLocalEngineEnforcesPolicy(t *testing.T) {
	const announced, contentType = 1000, "image/png"
	otherKey := blob.UploadKey(newName())
	for _, tc := range []struct {
		name string
		// alter changes the form or the bytes from what the policy
		// allows.
		alter  func(fields map[string]string, value []byte) []byte
		ttl    time.Duration
		status int
		code   string
	}{
		{name: "more bytes than the content-length-range",
			alter:  func(_ map[string]string, v []byte) []byte { return append(v, 'x') },
			status: http.StatusBadRequest, code: "EntityTooLarge"},
		{name: "fewer bytes than the content-length-range",
			alter:  func(_ map[string]string, v []byte) []byte { return v[:1] },
			status: http.StatusBadRequest, code: "EntityTooSmall"},
		{name: "another Content-Type than the policy's",
			alter:  func(f map[string]string, v []byte) []byte { f["Content-Type"] = "text/html"; return v },
			status: http.StatusForbidden, code: "AccessDenied"},
		{name: "another key than the policy's",
			alter:  func(f map[string]string, v []byte) []byte { f["key"] = otherKey; return v },
			status: http.StatusForbidden, code: "AccessDenied"},
		{name: "a field the policy does not cover",
			alter:  func(f map[string]string, v []byte) []byte { f["x-amz-meta-owner"] = "mallory"; return v },
			status: http.StatusForbidden, code: "AccessDenied"},
		{name: "a field of the policy left out",
			alter:  func(f map[string]string, v []byte) []byte { delete(f, "Content-Type"); return v },
			status: http.StatusForbidden, code: "AccessDenied"},
		{name: "a forged signature",
			alter: func(f map[string]string, v []byte) []byte {
				f["X-Amz-Signature"] = strings.Repeat("0", 64)
				return v
			},
			status: http.StatusForbidden, code: "SignatureDoesNotMatch"},
		{name: "a policy rewritten to allow anything",
			alter: func(f map[string]string, v []byte) []byte {
				f["policy"] = base64.StdEncoding.EncodeToString([]byte(`{"expiration":"2100-01-01T00:00:00Z","conditions":[]}`))
				return v
			},
			status: http.StatusForbidden, code: "SignatureDoesNotMatch"},
		{name: "no signature at all",
			alter: func(f map[string]string, v []byte) []byte {
				for k := range f {
					if k != "key" && k != "Content-Type" {
						delete(f, k)
					}
				}
				return v
			},
			status: http.StatusForbidden, code: "AccessDenied"},
		{name: "an expired form", ttl: time.Second,
			alter: func(_ map[string]string, v []byte) []byte {
				time.Sleep(2 * time.Second)
				return v
			},
			status: http.StatusForbidden, code: "AccessDenied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := blobtest.New(t)
			key := blob.UploadKey(newName())
			ttl := tc.ttl
			if ttl == 0 {
				ttl = time.Minute
			}
			up, err := b.PresignUpload(ctx, key, contentType, announced, ttl)
			if err != nil {
				t.Fatal(err)
			}
			value := tc.alter(up.Fields, make([]byte, announced))
			if got := send(t, formRequest(t, up, up.Fields, value)); got.status != tc.status || got.code != tc.code {
				t.Errorf("answered %d %s, want %d %s", got.status, got.code, tc.status, tc.code)
			}
			for _, at := range []string{key, otherKey} {
				if obj, err := b.Head(ctx, at); err == nil {
					t.Errorf("stored at %s: %+v", at, obj)
				}
			}
		})
	}
}

// TestLocalEngineChecksSignatures: a presigned GET works as issued until
// it expires, and not once its key, signature or date is changed; an
// unsigned or wrongly signed list, read or delete is refused with S3's
// error XML; and the SDK's own calls, signed with the engine's
// credentials, all pass, CopyObject and PutObject included.
func TestLocalEngineChecksSignatures(t *testing.T) {
	ctx := context.Background()
	b, endpoint := blobtest.Serve(t, nil)
	key, other := blob.UploadKey(newName()), blob.UploadKey(newName())
	up, err := b.PresignUpload(ctx, key, "image/png", 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	blobtest.Post(t, up, []byte("png")).Body.Close()
	get, err := b.PresignGet(ctx, key, uds.DownloadHeaders{ContentType: "text/html", ContentDisposition: "attachment"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	brief, err := b.PresignGet(ctx, key, uds.DownloadHeaders{}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	object := endpoint + "/" + blobtest.Name + "/" + key
	for _, tc := range []struct {
		name, method, url string
		status            int
		code              string
	}{
		{"the presigned GET as issued", "GET", get, 200, ""},
		{"its key changed", "GET", strings.Replace(get, key, other, 1), 403, "SignatureDoesNotMatch"},
		{"its signature changed", "GET", strings.Replace(get, "X-Amz-Signature=", "X-Amz-Signature=00", 1), 403, "SignatureDoesNotMatch"},
		{"its lifetime lengthened", "GET", strings.Replace(get, "X-Amz-Expires=60", "X-Amz-Expires=600", 1), 403, "SignatureDoesNotMatch"},
		{"expired", "GET", brief, 403, "AccessDenied"},
		{"a date changed", "GET", dateChanged(t, get), 403, "SignatureDoesNotMatch"},
		{"an unsigned read", "GET", object, 403, "AccessDenied"},
		{"an unsigned list", "GET", endpoint + "/" + blobtest.Name, 403, "AccessDenied"},
		{"an unsigned list of the buckets", "GET", endpoint + "/", 403, "AccessDenied"},
		{"an unsigned delete", "DELETE", object, 403, "AccessDenied"},
		{"an unsigned batch delete", "POST", endpoint + "/" + blobtest.Name + "?delete", 403, "AccessDenied"},
		{"an unsigned write", "PUT", object, 403, "AccessDenied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, tc.url, strings.NewReader(""))
			if err != nil {
				t.Fatal(err)
			}
			if got := send(t, req); got.status != tc.status || got.code != tc.code {
				t.Errorf("answered %d %s, want %d %s", got.status, got.code, tc.status, tc.code)
			}
		})
	}
	t.Run("another key's SDK calls", func(t *testing.T) {
		for _, creds := range []aws.Credentials{
			{AccessKeyID: "other", SecretAccessKey: "local"},
			{AccessKeyID: "local", SecretAccessKey: "guessed"},
		} {
			c := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: &endpoint, UsePathStyle: true,
				Credentials: credentials.StaticCredentialsProvider{Value: creds}})
			bucket := blobtest.Name
			for _, call := range []func() error{
				func() error { _, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket}); return err },
				func() error { _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key}); return err },
				func() error {
					_, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key})
					return err
				},
			} {
				if err := call(); err == nil || !strings.Contains(err.Error(), "403") {
					t.Errorf("%s: %v, want 403", creds.AccessKeyID, err)
				}
			}
		}
	})
	t.Run("the SDK's calls with the engine's credentials", func(t *testing.T) {
		c, err := blob.NewClient(ctx, endpoint)
		if err != nil {
			t.Fatal(err)
		}
		bucket, source := blobtest.Name, blobtest.Name+"/"+key
		copied := blob.UploadKey(newName()) + " a/b+c%d"
		if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: &bucket, Key: &copied, CopySource: &source}); err != nil {
			t.Fatalf("CopyObject: %v", err)
		}
		blobtest.Put(t, blob.Upload{URL: endpoint + "/" + bucket, Fields: map[string]string{"key": other}}, "image/gif", []byte("gif"))
		out, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &bucket})
		if err != nil || len(out.Contents) != 3 {
			t.Fatalf("ListObjectsV2: %v, %d objects, want 3", err, len(out.Contents))
		}
		if obj, err := b.Head(ctx, copied); err != nil || obj.Size != 3 {
			t.Errorf("the copy: %+v, %v", obj, err)
		}
		if err := b.Delete(ctx, copied); err != nil {
			t.Error(err)
		}
	})
}

// dateChanged is a presigned URL signed a second later than it says.
func dateChanged(t *testing.T, presigned string) string {
	t.Helper()
	u, err := url.Parse(presigned)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	at, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		t.Fatal(err)
	}
	q.Set("X-Amz-Date", at.Add(time.Second).Format("20060102T150405Z"))
	u.RawQuery = q.Encode()
	return u.String()
}

// TestLocalEngineOrigins: the engine answers no other Host (a DNS
// rebinding page's), and no page of another origin but for a presigned
// GET, which is a capability (as the deployment's bucket lets any origin
// read); the allowed origin's preflight and upload get CORS with that
// origin, never "*". Before, every answer said "Access-Control-Allow-
// Origin: *", to unsigned lists, reads and deletes too.
func TestLocalEngineOrigins(t *testing.T) {
	ctx := context.Background()
	b, endpoint := blobtest.Serve(t, []string{devOrigin})
	key := blob.UploadKey(newName())
	up, err := b.PresignUpload(ctx, key, "image/png", 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	get, err := b.PresignGet(ctx, key, uds.DownloadHeaders{}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	evil := "http://evil.example"
	// form stands for the upload's form POST in the table.
	const form = "FORM"
	for _, tc := range []struct {
		name, method, url string
		headers           []string // names and values; Host sets the request's
		status            int
		origin            string // the Access-Control-Allow-Origin answered
		created           bool
	}{
		{"another site's form", form, up.URL, []string{"Origin", evil}, 403, "", false},
		{"another site's page, by Sec-Fetch-Site", form, up.URL, []string{"Sec-Fetch-Site", "cross-site"}, 403, "", false},
		{"another site's preflight", "OPTIONS", up.URL, []string{"Origin", evil, "Access-Control-Request-Method", "POST"}, 403, "", false},
		{"another site's list", "GET", endpoint + "/" + blobtest.Name, []string{"Origin", evil}, 403, "", false},
		{"another Host, as DNS rebinding sends it", form, up.URL, []string{"Host", "evil.example:" + strings.Split(endpoint, ":")[2]}, 403, "", false},
		{"the allowed origin's preflight", "OPTIONS", up.URL, []string{"Origin", devOrigin, "Access-Control-Request-Method", "POST"}, 200, devOrigin, false},
		{"the allowed origin's upload", form, up.URL, []string{"Origin", devOrigin, "Sec-Fetch-Site", "same-site"}, 200, devOrigin, true},
		{"a presigned GET followed from the API's redirect", "GET", get, []string{"Origin", "null", "Sec-Fetch-Site", "cross-site"}, 200, "null", true},
		{"another site's presigned GET changed", "GET", strings.Replace(get, "X-Amz-Signature=", "X-Amz-Signature=0", 1), []string{"Origin", evil}, 403, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := formRequest(t, up, up.Fields, []byte("png"))
			if tc.method != form {
				var err error
				if req, err = http.NewRequest(tc.method, tc.url, nil); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < len(tc.headers); i += 2 {
				req.Header.Set(tc.headers[i], tc.headers[i+1])
			}
			if host := req.Header.Get("Host"); host != "" {
				req.Host = host
			}
			if got := send(t, req); got.status != tc.status || got.allowOrigin != tc.origin {
				t.Errorf("answered %d %s, Access-Control-Allow-Origin %q; want %d, %q", got.status, got.code, got.allowOrigin, tc.status, tc.origin)
			}
			if _, err := b.Head(ctx, key); (err == nil) != tc.created {
				t.Errorf("the object: %v, want it stored: %v", err, tc.created)
			}
		})
	}
}

// TestPutBoundByNoPolicy: blobtest.Put stores what a form could not.
func TestPutBoundByNoPolicy(t *testing.T) {
	ctx := context.Background()
	b := blobtest.New(t)
	key := blob.UploadKey(newName())
	up, err := b.PresignUpload(ctx, key, "image/png", 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	blobtest.Put(t, up, "text/html", bytes.Repeat([]byte("x"), 5))
	if obj, err := b.Head(ctx, key); err != nil || obj != (blob.Object{Size: 5, ContentType: "text/html"}) {
		t.Errorf("%+v, %v", obj, err)
	}
}
