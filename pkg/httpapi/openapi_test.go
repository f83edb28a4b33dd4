package httpapi_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/httpapi"
)

// TestOpenAPIMatchesRoutes keeps docs/openapi.json true: every served route
// is documented and every documented operation is served.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi %q, want 3.1.x", doc.OpenAPI)
	}
	var documented []httpapi.Route
	for path, ops := range doc.Paths {
		for method := range ops {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
				documented = append(documented, httpapi.Route{Method: strings.ToUpper(method), Path: path})
			}
		}
	}
	served := httpapi.Routes(httpapi.GroupAll)
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("served but not documented: %s %s", r.Method, r.Path)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("documented but not served: %s %s", r.Method, r.Path)
		}
	}
	if len(served) < 19 {
		t.Errorf("only %d routes served; the route table lost some", len(served))
	}
}
