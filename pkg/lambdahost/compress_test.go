package lambdahost_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestCompressionThroughLambda checks gzip both ways through the Lambda
// handler: a gzip request body arrives base64 encoded, as API Gateway
// sends binary bodies, and a compressed answer leaves base64 encoded and
// decodes to the plain one.
func TestCompressionThroughLambda(t *testing.T) {
	ctx := context.Background()
	h, _ := listFunction(t)
	const list = "/rest/api/v1/data/d53065bd-f932-4841-83fb-849717d8df0f/gzip/feed"
	event := func(method, path, query, body string, base64Body bool, headers ...string) events.APIGatewayV2HTTPRequest {
		ev := events.APIGatewayV2HTTPRequest{
			RawPath: path, RawQueryString: query, Body: body, IsBase64Encoded: base64Body, Headers: map[string]string{},
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}},
		}
		for i := 0; i+1 < len(headers); i += 2 {
			ev.Headers[headers[i]] = headers[i+1]
		}
		return ev
	}
	for i := range 50 {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		fmt.Fprintf(w, `{"data":{"title":"entry %d","body":"%s"}}`, i, strings.Repeat("text ", 40))
		_ = w.Close()
		res, err := h(ctx, event("POST", fmt.Sprintf("%s/k%02d", list, i), "", base64.StdEncoding.EncodeToString(z.Bytes()), true,
			"content-encoding", "gzip", "content-type", "application/json"))
		if err != nil || res.StatusCode != 201 {
			t.Fatalf("POST of a gzip body: %d %v %s", res.StatusCode, err, res.Body)
		}
	}
	// A value large enough to be stored compressed: the gzip page
	// carries its stored stream on.
	big := `{"data":{"title":"long entry","body":"` + strings.Repeat("a longer text ", 600) + `"}}`
	if res, err := h(ctx, event("POST", list+"/k99", "", big, false, "content-type", "application/json")); err != nil || res.StatusCode != 201 {
		t.Fatalf("POST of a large value: %d %v %s", res.StatusCode, err, res.Body)
	}
	// A body labelled gzip that is not a gzip stream was expanded on the
	// way (API Gateway may decompress what it recognises): it is read as
	// it came, as text or base64, not refused as a broken stream.
	expanded := `{"data":{"title":"expanded"}}`
	for i, body := range []string{expanded, base64.StdEncoding.EncodeToString([]byte(expanded))} {
		res, err := h(ctx, event("POST", fmt.Sprintf("%s/e%d", list, i), "", body, i == 1,
			"content-encoding", "gzip", "content-type", "application/json"))
		if err != nil || res.StatusCode != 201 {
			t.Fatalf("POST of a body the gateway expanded (base64 %v): %d %v %s", i == 1, res.StatusCode, err, res.Body)
		}
	}
	plain, err := h(ctx, event("GET", list+"/list", "limit=100", "", false))
	if err != nil || plain.StatusCode != 200 || plain.IsBase64Encoded {
		t.Fatalf("plain page: %d %v base64=%v", plain.StatusCode, err, plain.IsBase64Encoded)
	}
	res, err := h(ctx, event("GET", list+"/list", "limit=100", "", false, "accept-encoding", "gzip, br"))
	if err != nil || res.StatusCode != 200 || !res.IsBase64Encoded || res.Headers["Content-Encoding"] != "gzip" {
		t.Fatalf("compressed page: %d %v base64=%v headers %v", res.StatusCode, err, res.IsBase64Encoded, res.Headers)
	}
	z, err := base64.StdEncoding.DecodeString(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	if err != nil || string(body) != plain.Body {
		t.Errorf("the compressed page decodes to %d bytes (%v), not the %d-byte plain page", len(body), err, len(plain.Body))
	}
	t.Logf("a page of %d bytes went out as %d bytes of gzip, %d in base64", len(plain.Body), len(z), len(res.Body))
}
