package blob

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/johannesboyne/gofakes3"

	"github.com/udsproject/uds/internal/awsconf"
	"github.com/udsproject/uds/internal/sameorigin"
)

// localEngine is the local S3 engine as ServeLocal serves it: gofakes3
// behind the checks S3 makes and gofakes3 does not. It answers only a
// Host of its own and the pages the local server answers (sameorigin),
// and only requests signed with its credentials: header-signed SDK calls,
// presigned GETs until they expire, and POST forms whose policy it signed
// and whose every field the policy allows. Everything else gets S3's
// error XML. It copies the parts of a multipart upload, which gofakes3
// does not (copyPart). It drops gofakes3's "Access-Control-Allow-Origin: *" and
// answers CORS to the allowed origins only.
type localEngine struct {
	s3 http.Handler
	// backend is the store s3 serves, which copyPart reads parts from.
	backend gofakes3.Backend
	guard   *sameorigin.Guard
	creds   aws.Credentials
	signer  *v4.Signer
	now     func() time.Time
}

// engineCredentials are the credentials UDS's S3 clients sign with against
// an engine at endpoint (awsconf.Load): the environment's static ones, or
// the placeholder pair. They are the local engine's own: it takes no
// others, as a bucket takes only its account's.
func engineCredentials(endpoint string) (aws.Credentials, error) {
	ctx := context.Background()
	cfg, err := awsconf.Load(ctx, endpoint)
	if err != nil {
		return aws.Credentials{}, err
	}
	creds, err := cfg.Credentials.Retrieve(ctx)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("the local S3 engine's credentials: %w", err)
	}
	return creds, nil
}

// engineCORS is what the local engine answers an allowed origin: the
// deployment's bucket's CORS (infra/bucket.go, bucketCORS), its uploads'
// and its reads' together.
var engineCORS = sameorigin.CORS{
	Methods: []string{"GET", "HEAD", "POST"},
	Headers: []string{"Range", "If-Match", "If-None-Match"},
	Expose:  []string{"ETag", "Location", "Content-Range", "Accept-Ranges"},
}

func (e *localEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if refusal := e.guard.CheckHost(r); refusal != nil {
		accessDenied(refusal.Why+"; "+refusal.Remedy).write(w, r)
		return
	}
	// A presigned GET is a capability the API handed out, and a page
	// that holds one may read it, as the deployment's bucket lets any
	// origin read (infra/bucket.go, bucketCORS): a browser that follows
	// the API's redirect to it sends "Origin: null", which no list
	// matches. Its signature is checked below like any other.
	presignedRead := (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.URL.Query().Has(querySignature)
	if refusal := e.guard.CheckOrigin(r); refusal != nil && !presignedRead {
		accessDenied(refusal.Why+"; "+refusal.Remedy).write(w, r)
		return
	}
	if sameorigin.Preflight(r) {
		// Only an allowed origin's reaches here.
		e.guard.Answer(w.Header(), r, engineCORS, true)
		w.WriteHeader(http.StatusOK)
		return
	}
	if err := e.authenticate(r); err != nil {
		err.write(w, r)
		return
	}
	answer := &answerWriter{ResponseWriter: w, set: func(h http.Header) {
		e.guard.Answer(h, r, engineCORS, false)
		if origin := r.Header.Get("Origin"); presignedRead && origin != "" && h.Get("Access-Control-Allow-Origin") == "" {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Expose-Headers", strings.Join(engineCORS.Expose, ", "))
			h.Add("Vary", "Origin")
		}
	}}
	if isPartCopy(r) {
		// gofakes3 has no UploadPartCopy.
		e.copyPart(answer, r)
	} else {
		e.s3.ServeHTTP(answer, r)
	}
	// An answer the handler wrote nothing of is sent after it returns,
	// with the headers as they are then.
	answer.replace()
}

// answerWriter replaces, before an answer is sent, the headers gofakes3
// sets that S3 would not: its CORS headers on every answer
// ("Access-Control-Allow-Origin: *"), replaced with the engine's, and on a
// GET or HEAD of an object the signing fields of the form that stored it
// (X-Amz-Signature among them), which gofakes3 keeps as the object's
// metadata and answers with, removed.
type answerWriter struct {
	http.ResponseWriter
	set      func(http.Header)
	replaced bool
}

// signingFields are the fields of a signed request or form that S3 never
// answers with.
var signingFields = []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Signature", "X-Amz-Security-Token", "Policy"}

func (c *answerWriter) replace() {
	if c.replaced {
		return
	}
	c.replaced = true
	h := c.Header()
	for name := range h {
		if strings.HasPrefix(name, "Access-Control-") {
			delete(h, name)
		}
	}
	for _, name := range signingFields {
		h.Del(name)
	}
	c.set(h)
}

func (c *answerWriter) WriteHeader(status int) {
	c.replace()
	c.ResponseWriter.WriteHeader(status)
}

func (c *answerWriter) Write(b []byte) (int, error) {
	c.replace()
	return c.ResponseWriter.Write(b)
}

// The signature's spelling in SigV4: the algorithm, and the query
// parameters of a presigned request.
const (
	sigV4Algorithm  = "AWS4-HMAC-SHA256"
	querySignature  = "X-Amz-Signature"
	queryCredential = "X-Amz-Credential"
	amzDateLayout   = "20060102T150405Z"
	// maxClockSkew is how far S3 lets a request's time be from its own.
	maxClockSkew = 15 * time.Minute
)

// authenticate checks r's signature as S3 would: in its Authorization
// header (the SDK's calls), in its query (a presigned GET), or in its
// policy (a POST form); a request with none is anonymous, and the bucket
// is private.
func (e *localEngine) authenticate(r *http.Request) *engineError {
	switch {
	case r.Header.Get("Authorization") != "":
		return e.checkHeaderSignature(r)
	case r.URL.Query().Has(querySignature) || r.URL.Query().Has(queryCredential):
		return e.checkPresigned(r)
	case r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data"):
		return e.checkForm(r)
	}
	return accessDenied("anonymous access: the request is not signed, and the bucket is private")
}

// checkHeaderSignature signs again what r's Authorization header says was
// signed, with the engine's credentials, at the time and in the region it
// names, and wants the same signature. The payload's hash is taken as
// X-Amz-Content-Sha256 declares it, not computed: the engine's callers are
// UDS's own SDK clients on this machine, whose requests have no body
// (HEAD, GET, DELETE, a CopyObject) that anyone on the way could change.
func (e *localEngine) checkHeaderSignature(r *http.Request) *engineError {
	params, ok := strings.CutPrefix(r.Header.Get("Authorization"), sigV4Algorithm+" ")
	if !ok {
		return invalidArgument("the Authorization header is not " + sigV4Algorithm)
	}
	var credential, signedHeaders, signature string
	for _, p := range strings.Split(params, ",") {
		name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
		switch name {
		case "Credential":
			credential = value
		case "SignedHeaders":
			signedHeaders = value
		case "Signature":
			signature = value
		}
	}
	scope, fail := e.scope(credential, r.Header.Get("X-Amz-Date"))
	if fail != nil {
		return fail
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		return &engineError{http.StatusBadRequest, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256"}
	}
	req := signable(r, signedHeaders, r.URL.RawQuery)
	if err := e.signer.SignHTTP(r.Context(), e.creds, req, payload, "s3", scope.region, scope.at, pathAsIs); err != nil {
		return signatureMismatch()
	}
	want := req.Header.Get("Authorization")
	if !strings.Contains(want, "SignedHeaders="+signedHeaders+",") || !hmac.Equal([]byte(want[strings.LastIndex(want, "Signature=")+len("Signature="):]), []byte(signature)) {
		return signatureMismatch()
	}
	return nil
}

// checkPresigned checks a presigned request: signed with the engine's
// credentials, as its query says, and not expired.
func (e *localEngine) checkPresigned(r *http.Request) *engineError {
	q := r.URL.Query()
	if q.Get("X-Amz-Algorithm") != sigV4Algorithm {
		return &engineError{http.StatusBadRequest, "AuthorizationQueryParametersError", "X-Amz-Algorithm only supports " + sigV4Algorithm}
	}
	scope, fail := e.scope(q.Get(queryCredential), q.Get("X-Amz-Date"))
	if fail != nil {
		return fail
	}
	expires, err := strconv.Atoi(q.Get("X-Amz-Expires"))
	if err != nil || expires < 1 || expires > 7*24*3600 {
		return &engineError{http.StatusBadRequest, "AuthorizationQueryParametersError", "X-Amz-Expires must be a number of seconds from 1 to 604800"}
	}
	if e.now().After(scope.at.Add(time.Duration(expires) * time.Second)) {
		return accessDenied("Request has expired")
	}
	signature := q.Get(querySignature)
	q.Del(querySignature)
	req := signable(r, q.Get("X-Amz-SignedHeaders"), q.Encode())
	signed, _, err := e.signer.PresignHTTP(r.Context(), e.creds, req, "UNSIGNED-PAYLOAD", "s3", scope.region, scope.at, pathAsIs)
	if err != nil {
		return signatureMismatch()
	}
	u, err := url.Parse(signed)
	if err != nil || !hmac.Equal([]byte(u.Query().Get(querySignature)), []byte(signature)) {
		return signatureMismatch()
	}
	return nil
}

// pathAsIs signs the path as S3 does, escaped once, as the SDK's S3 client
// signs it.
func pathAsIs(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }

// signable is the part of r its signature covers: its method, path and
// query (rawQuery), and the headers signedHeaders names (host and
// content-length are the signer's own), for the signer to sign again.
func signable(r *http.Request, signedHeaders, rawQuery string) *http.Request {
	req := &http.Request{
		Method: r.Method, Host: r.Host, Header: http.Header{},
		URL: &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: rawQuery},
	}
	for _, name := range strings.Split(signedHeaders, ";") {
		switch name {
		case "host":
		case "content-length":
			req.ContentLength = r.ContentLength
		default:
			req.Header[textproto.CanonicalMIMEHeaderKey(name)] = r.Header.Values(name)
		}
	}
	return req.WithContext(r.Context())
}

// signingScope is what a SigV4 credential scope names: the region signed
// for, and the signing time.
type signingScope struct {
	region string
	at     time.Time
}

// scope reads a credential (key/date/region/s3/aws4_request) and the
// signing time (X-Amz-Date): the key must be the engine's, the service
// S3, and the date the time's.
func (e *localEngine) scope(credential, date string) (signingScope, *engineError) {
	parts := strings.Split(credential, "/")
	at, err := time.Parse(amzDateLayout, date)
	switch {
	case len(parts) != 5 || parts[3] != "s3" || parts[4] != "aws4_request":
		return signingScope{}, &engineError{http.StatusBadRequest, "AuthorizationHeaderMalformed", "the credential " + strconv.Quote(credential) + " is not key/date/region/s3/aws4_request"}
	case parts[0] != e.creds.AccessKeyID:
		return signingScope{}, &engineError{http.StatusForbidden, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records."}
	case err != nil || parts[1] != at.Format("20060102"):
		return signingScope{}, &engineError{http.StatusBadRequest, "AuthorizationHeaderMalformed", "X-Amz-Date " + strconv.Quote(date) + " is not the credential's date, written " + amzDateLayout}
	case at.After(e.now().Add(maxClockSkew)):
		return signingScope{}, accessDenied("the request is signed for a time still to come")
	}
	return signingScope{region: parts[2], at: at}, nil
}

// engineError is an answer in S3's error XML.
type engineError struct {
	status        int
	code, message string
}

func accessDenied(message string) *engineError {
	return &engineError{http.StatusForbidden, "AccessDenied", message}
}

func signatureMismatch() *engineError {
	return &engineError{http.StatusForbidden, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method."}
}

func invalidArgument(message string) *engineError {
	return &engineError{http.StatusBadRequest, "InvalidArgument", message}
}

func (e *engineError) write(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(e.status)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(gofakes3.ErrorResponse{Code: gofakes3.ErrorCode(e.code), Message: e.message})
}

// hmacSHA256 is one link of SigV4's chain of keys.
func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// postSignature is the signature of a POST form's policy: SigV4's signing
// key for the day, region and S3, over the policy as sent (base64). The
// SDK's signer has no call for it (the SDK's S3 client has its own copy).
func postSignature(secret, day, region, policy string) string {
	key := []byte("AWS4" + secret)
	for _, part := range []string{day, region, "s3", "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	return hex.EncodeToString(hmacSHA256(key, policy))
}
