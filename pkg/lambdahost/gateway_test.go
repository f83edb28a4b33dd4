package lambdahost_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/udsproject/uds/pkg/httpapi"
)

// TestEventsAsHTTPAPIsSendThem sends the functions events shaped as an
// HTTP API delivers them, which the proxy library read otherwise than the
// client meant:
//   - rawPath decoded: a key's # became a URL fragment, so that the
//     DELETE of victim#x removed victim; an IAM user's ARN, whose / came
//     decoded, made the admin routes 404;
//   - the method upper-cased: a "delete" deleted, where the local server
//     answers 405;
//   - a header sent on several lines joined into one by commas, and a
//     header whose one value holds a comma, which the library split: a
//     class name with a comma was refused as sent twice, a multi-range
//     Range too; a Content-Type sent twice was refused as malformed.
func TestEventsAsHTTPAPIsSendThem(t *testing.T) {
	const app = "d53065bd-f932-4841-83fb-849717d8df0f"
	const data = "/rest/api/v1/data/" + app + "/gw/"
	ctx := context.Background()
	h, _ := function(t, httpapi.GroupAll)
	send := func(method, path, body string, headers ...string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		ev := events.APIGatewayV2HTTPRequest{
			RawPath: path, Body: body, Headers: map[string]string{},
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}},
		}
		for i := 0; i+1 < len(headers); i += 2 {
			ev.Headers[headers[i]] = headers[i+1]
		}
		res, err := h(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	expect := func(res events.APIGatewayV2HTTPResponse, status int, what string) {
		t.Helper()
		if res.StatusCode != status {
			t.Errorf("%s: %d %s, want %d", what, res.StatusCode, res.Body, status)
		}
	}
	jsonType := "application/json"

	expect(send("POST", data+"victim", `{"data":"kept"}`, "content-type", jsonType), 201, "POST victim")
	expect(send("POST", data+"victim#x", `{"data":"gone"}`, "content-type", jsonType), 201, "POST victim#x")
	expect(send("DELETE", data+"victim#x", ""), 204, "DELETE victim#x")
	expect(send("GET", data+"victim", ""), 200, "GET victim after the DELETE of victim#x")
	expect(send("GET", data+"victim#x", ""), 404, "GET victim#x after its DELETE")
	expect(send("delete", data+"victim", ""), 405, "a lower-case delete")
	expect(send("GET", data+"victim", ""), 200, "GET victim after the lower-case delete")

	expect(send("POST", data+"pair", "xy", "content-type", "application/octet-stream", "uds-class-name", "Pair<A, B>"), 201, "a class name with a comma")
	if res := send("GET", data+"pair", "", "range", "bytes=0-0,1-1"); res.StatusCode != 200 || res.Headers["Uds-Class-Name"] != "Pair<A, B>" {
		t.Errorf("a multi-range GET of it: %d %v, want the whole value (200) and its class name", res.StatusCode, res.Headers)
	}
	if res := send("POST", data+"ct", `{"data":1}`, "content-type", jsonType+","+jsonType); res.StatusCode != 400 || !strings.Contains(res.Body, "sent more than once") {
		t.Errorf("Content-Type sent twice: %d %s", res.StatusCode, res.Body)
	}

	const arn = "arn:aws:iam::123456789012:user/ops/alice"
	res := send("PUT", "/rest/api/v1/admin/apps/"+app+"/users/"+arn+"/quota", `{"limitBytes": 1000}`, "content-type", jsonType)
	expect(res, 200, "PUT the quota of an IAM user")
	var quota struct{ User string }
	if res = send("GET", "/rest/api/v1/admin/apps/"+app+"/users/"+arn+"/quota", ""); res.StatusCode != 200 || decode(res.Body, &quota) != nil || quota.User != arn {
		t.Errorf("GET the quota of an IAM user: %d %s", res.StatusCode, res.Body)
	}
	expect(send("GET", "/rest/api/v1/admin/users/"+arn+"/apps", ""), 200, "GET the apps of an IAM user")
}

func decode(body string, v any) error { return json.Unmarshal([]byte(body), v) }
