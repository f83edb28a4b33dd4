package httpapi_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/uds"
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

// TestOpenAPIQueryParameters keeps the documented query parameters of
// every operation equal to those its route takes: the server refuses any
// other, so a document that listed one more would send clients into 400s.
func TestOpenAPIQueryParameters(t *testing.T) {
	raw, err := os.ReadFile("../../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	type parameter struct {
		Ref  string `json:"$ref"`
		Name string `json:"name"`
		In   string `json:"in"`
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]parameter `json:"parameters"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	resolve := func(p parameter) parameter {
		if p.Ref == "" {
			return p
		}
		name := p.Ref[strings.LastIndexByte(p.Ref, '/')+1:]
		got, ok := doc.Components.Parameters[name]
		if !ok {
			t.Fatalf("parameter %s is not in components", p.Ref)
		}
		return got
	}
	queryOf := func(raws ...json.RawMessage) []string {
		var names []string
		for _, r := range raws {
			var op struct {
				Parameters []parameter `json:"parameters"`
			}
			if len(r) == 0 {
				continue
			}
			if err := json.Unmarshal(r, &op); err != nil {
				t.Fatal(err)
			}
			for _, p := range op.Parameters {
				if p = resolve(p); p.In == "query" {
					names = append(names, p.Name)
				}
			}
		}
		slices.Sort(names)
		return names
	}
	for route, takes := range httpapi.QueryParams(httpapi.GroupAll) {
		ops := doc.Paths[route.Path]
		// Parameters may sit on the path (for every operation) or on the
		// operation.
		pathLevel, _ := json.Marshal(map[string]json.RawMessage{"parameters": ops["parameters"]})
		if ops["parameters"] == nil {
			pathLevel = nil
		}
		documented := queryOf(pathLevel, ops[strings.ToLower(route.Method)])
		want := slices.Sorted(slices.Values(takes))
		if !slices.Equal(documented, want) {
			t.Errorf("%s %s: documented query parameters %v, served %v", route.Method, route.Path, documented, want)
		}
	}
}

// TestOpenAPIRateLimits keeps the document's word on 429s true of every
// operation: a data route's may come from UDS's rate limits or from API
// Gateway's throttles, and its answers carry the limits' state headers
// (RateLimit-Policy, RateLimit); an admin route's comes from the gateway
// alone, since UDS does not limit the admin routes.
func TestOpenAPIRateLimits(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	type response struct {
		Ref     string                     `json:"$ref"`
		Headers map[string]json.RawMessage `json:"headers"`
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Responses map[string]response `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	resolve := func(r response) response {
		if r.Ref == "" {
			return r
		}
		got, ok := doc.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")]
		if !ok {
			t.Fatalf("response %s is not in components", r.Ref)
		}
		return got
	}
	hasHeaders := func(r response, names ...string) bool {
		for _, n := range names {
			if r.Headers[n] == nil {
				return false
			}
		}
		return true
	}
	if r := doc.Components.Responses["TooManyRequests"]; !hasHeaders(r, "Retry-After", "RateLimit-Policy", "RateLimit") {
		t.Errorf("TooManyRequests lacks Retry-After, RateLimit-Policy or RateLimit: %v", r.Headers)
	}
	for _, route := range httpapi.Routes(httpapi.GroupAll) {
		var op struct {
			Responses map[string]response `json:"responses"`
		}
		if err := json.Unmarshal(doc.Paths[route.Path][strings.ToLower(route.Method)], &op); err != nil {
			t.Fatalf("%s %s: %v", route.Method, route.Path, err)
		}
		data := strings.HasPrefix(route.Path, httpapi.BasePath+"/data/")
		want := "#/components/responses/Throttled"
		if data {
			want = "#/components/responses/TooManyRequests"
		}
		if got := op.Responses["429"].Ref; got != want {
			t.Errorf("%s %s: 429 is %q, want %s", route.Method, route.Path, got, want)
		}
		for code, r := range op.Responses {
			if !data || !(strings.HasPrefix(code, "2") || code == "304") {
				continue
			}
			if !hasHeaders(resolve(r), "RateLimit-Policy", "RateLimit") {
				t.Errorf("%s %s: the %s answer does not document RateLimit-Policy and RateLimit", route.Method, route.Path, code)
			}
		}
	}
}

// TestOpenAPIErrorCodes keeps the Error schema's code enum equal to the
// codes the server answers (uds.Codes): a code missing from the enum
// would fail clients generated from the document, one too many would
// promise a kind that never comes.
func TestOpenAPIErrorCodes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas struct {
				Error struct {
					Required   []string `json:"required"`
					Properties struct {
						Code struct {
							Enum []string `json:"enum"`
						} `json:"code"`
					} `json:"properties"`
				} `json:"Error"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	schema := doc.Components.Schemas.Error
	var codes []string
	for _, c := range uds.Codes() {
		codes = append(codes, string(c))
	}
	documented := slices.Clone(schema.Properties.Code.Enum)
	slices.Sort(codes)
	slices.Sort(documented)
	if !slices.Equal(codes, documented) {
		t.Errorf("Error.code enum %v, want the codes %v", documented, codes)
	}
	if !slices.Contains(schema.Required, "code") {
		t.Errorf("Error requires %v, not code: every error body has one", schema.Required)
	}
}
