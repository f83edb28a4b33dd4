package lambdahost

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestPanicIsAnswered checks that a panic while serving an event is
// answered 500 with a JSON body, and not returned to aws-lambda-go, which
// would report a failed invocation and end the process; the panic and its
// stack are logged at ERROR, and the next event is served.
func TestPanicIsAnswered(t *testing.T) {
	var logs bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, nil)))
	h := Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			var items []int
			_ = items[3] // an index out of range, as a defect raises
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	event := func(path string) events.APIGatewayV2HTTPRequest {
		return events.APIGatewayV2HTTPRequest{RawPath: path, RequestContext: events.APIGatewayV2HTTPRequestContext{
			RequestID: "gw-1", HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "GET", Path: path}}}
	}
	res, err := h(context.Background(), event("/boom"))
	if err != nil {
		t.Fatalf("the panic came back as an invocation error: %v", err)
	}
	var body map[string]any
	if res.StatusCode != 500 || json.Unmarshal([]byte(res.Body), &body) != nil || body["error"] != "Internal server error" ||
		strings.Contains(res.Body, "index out of range") {
		t.Errorf("answered %d %s", res.StatusCode, res.Body)
	}
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	if cause, _ := line["cause"].(string); line["level"] != "ERROR" || !strings.Contains(cause, "index out of range") ||
		!strings.Contains(line["stack"].(string), "recover_test.go") || line["apiRequestId"] != "gw-1" {
		t.Errorf("log line %v", line)
	}
	if res, err := h(context.Background(), event("/fine")); err != nil || res.StatusCode != 204 {
		t.Errorf("the next event answered %d, %v", res.StatusCode, err)
	}
}
