package lambdahost_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/lambdahost"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// Body encodings of a fuzzed event: the text as it is, the text marked
// base64 as it is (so possibly not base64), or the text gzip compressed
// and then base64 encoded, as API Gateway sends binary bodies.
const (
	plainBody = iota
	markedBase64
	gzipBase64
	bodyModes
)

// FuzzLambdaEvent turns API Gateway events of any path, query, method,
// body and headers into requests. The adapter answers a path with
// malformed percent-encoding, and a body marked base64 that is not, with a
// JSON 400 and never calls the API; otherwise the API sees the method, the
// path decoded and the body decoded byte for byte, a body labelled gzip
// that is not a gzip stream without the label. Served by the API over a
// store that holds nothing, no event is answered 5xx, and every error is
// a JSON body that names it.
func FuzzLambdaEvent(f *testing.F) {
	const app = "d53065bd-f932-4841-83fb-849717d8df0f"
	for _, s := range []struct {
		method, path, query, body string
		mode                      uint8
		coding, header, value     string
	}{
		{"POST", "/rest/api/v1/data/" + app + "/ns/id", "", `{"data":{"a":1}}`, plainBody, "", "", ""},
		{"post", "/rest/api/v1/data/" + app + "/ns/id/2024%2F01", "", `{"data":1,"ttl":60}`, gzipBase64, "gzip", "", ""},
		{"POST", "/rest/api/v1/data/" + app + "/ns/id", "", base64.StdEncoding.EncodeToString([]byte(`{"data":1}`)), markedBase64, "gzip", "", ""},
		{"POST", "/rest/api/v1/data/" + app + "/ns/id", "", `{"data":1}`, plainBody, "gzip", "", ""},
		{"POST", "/rest/api/v1/data/" + app + "/ns/id", "", `{"data":1}`, gzipBase64, "", "", ""},
		{"POST", "/rest/api/v1/data/" + app + "/ns/id", "", "not base64!", markedBase64, "", "", ""},
		{"POST", "/rest/api/v1/data/" + app + "/ns/id", "", `{"data":1}`, gzipBase64, "x-gzip, identity", "", ""},
		{"POST", "/rest/api/v1/data/" + app + "/ns/id", "", `{"data":1}`, plainBody, "br", "", ""},
		{"POST", "/rest/api/v1/data/" + app + "/ns/id", "", `{"data":1}`, plainBody, "\tgzip ", "", ""},
		{"POST", "/rest/api/v1/data/" + app + "/ns/id", "", `{"data":1}`, plainBody, "\t", "", ""},
		{"PUT", "/rest/api/v1/data/" + app + "/ns/id", "", `{"data":1}`, plainBody, "", "if-match", `"1-lq2x0a", W/"x"`},
		{"PUT", "/rest/api/v1/data/" + app + "/ns/id", "", `{"data":1}`, plainBody, "", "if-match", `1-lq2x0a`},
		{"GET", "/rest/api/v1/data/" + app + "/ns/id", "", "", plainBody, "", "if-none-match", `*`},
		{"GET", "/rest/api/v1/data/" + app + "/ns/id/list", "limit=5&sortOrder=desc&startKey=a", "", plainBody, "", "accept-encoding", "gzip"},
		{"GET", "/rest/api/v1/data/" + app + "/ns/id/list", "limit=%zz", "", plainBody, "", "", ""},
		{"GET", "/rest/api/v1/data/" + app + "/ns", "index=byStatus&eq=open&limit=5", "", plainBody, "", "accept-encoding", "gzip"},
		{"GET", "/rest/api/v1/data/" + app + "/ns", "index=byStatus&prefix=%ff", "", plainBody, "", "", ""},
		{"POST", "/rest/api/v1/admin/apps/" + app + "/namespaces/ns/indexes/build", "", "", plainBody, "", "", ""},
		{"GET", "/rest/api/v1/data/" + app + "/ns/id/list", "cursor=abc.def", "", plainBody, "", "", ""},
		{"DELETE", "/rest/api/v1/data/" + app + "/ns/id/list/", "", "", plainBody, "", "x-uds-subject", "mallory"},
		{"HEAD", "/rest/api/v1/data/" + app + "/ns/id", "", "", plainBody, "", "", ""},
		{"HEAd", "rest/api/v1/data///0", "", "", plainBody, "", "", ""},
		{"PATCH", "/rest/api/v1/data/" + app + "/ns/id", "", "", plainBody, "", "", ""},
		{"GET", "/rest/api/v1/data/" + app + "/ns/a%2Fb\"", "", "", plainBody, "", "", ""},
		{"GET", "/rest/api/v1/data/" + app + "/ns/id/%zz", "", "", plainBody, "", "", ""},
		{"GET", "/rest/api/v1/data/" + app + "/ns/id/c%", "", "", plainBody, "", "", ""},
		{"GET", "rest/api/v1/data/" + app + "/ns/%ff", "", "", plainBody, "", "", ""},
		{"GET", "/rest/api/v1/data/" + app + "/ns/a b", "", "", plainBody, "", "", ""},
		{"GET", "/rest/api/v1/data/" + app + "/ns/a\x7fb", "", "", plainBody, "", "", ""},
		{"GET", "/rest/api/v1/data/" + app + "/ns/a?b", "c=d", "", plainBody, "", "", ""},
		{"POST", "/rest/api/v1/data/" + app + "/batch", "", `{"atomic":true,"operations":[{"method":"POST","path":"kv/a","body":{"data":1}},{"method":"DELETE","path":"kv/b"}]}`, plainBody, "", "", ""},
		{"POST", "/rest/api/v1/data/" + app + "/batch", "", `{"operations":[{"method":"GET","path":"kv/a","ifNoneMatch":"*"},{"method":"PUT","path":"kv/b","body":{"data":1}}]}`, gzipBase64, "gzip", "", ""},
		{"PUT", "/rest/api/v1/admin/apps/" + app + "/namespaces/posts", "", `{"access":"owner-write","schema":{"type":"object"}}`, plainBody, "", "", ""},
		{"PUT", "/rest/api/v1/admin/apps/" + app + "/quota", "", `{"limitBytes":-1}`, plainBody, "", "", ""},
		{"POST", "/rest/api/v1/admin/apps/" + app + "/import", "", `{"records":[{"namespace":"kv","id":"a","owner":"alice","data":1,"createdBySubject":"alice","updatedBySubject":"alice","version":1}]}`, plainBody, "", "", ""},
		{"GET", "/rest/api/v1/admin/apps/" + app + "/export", "limit=10", "", plainBody, "", "", ""},
		{"GET", "/rest/api/v1/admin/users/auth0%7Cabc/apps", "", "", plainBody, "", "", ""},
		{"POST", "/rest/api/v1/admin/apps/" + app + "/users/bob/quota/recompute", "", "", plainBody, "", "", ""},
		{"GET", "", "", "", plainBody, "", "", ""},
		{"", "/rest/api/v1/data/" + app + "/ns/id", "", "", plainBody, "", "", ""},
	} {
		f.Add(s.method, s.path, s.query, s.body, s.mode, s.coding, s.header, s.value)
	}
	var got received
	echo := lambdahost.Handler(http.HandlerFunc(got.record))
	api := lambdahost.Handler(httpapi.New(echoStores(), httpapi.GroupAll, httpapi.Config{
		Subject: lambdahost.Subject("sub"), RefuseSubjectHeader: lambdahost.AuthorizerOnly,
		CursorSecret: []byte("fuzz"), Logger: slog.New(slog.DiscardHandler),
	}))
	f.Fuzz(func(t *testing.T, method, path, query, text string, mode uint8, coding, header, value string) {
		ev := events.APIGatewayV2HTTPRequest{
			RawPath: path, RawQueryString: query, Body: text, Headers: map[string]string{},
			RequestContext: events.APIGatewayV2HTTPRequestContext{RequestID: "fuzz",
				HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}},
		}
		body, bodyErr := []byte(text), error(nil)
		switch mode % bodyModes {
		case markedBase64:
			ev.IsBase64Encoded = true
			body, bodyErr = base64.StdEncoding.DecodeString(text)
		case gzipBase64:
			body = gzipped(t, text)
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
		if header != "" {
			ev.Headers[strings.ToLower(header)] = value
		}
		if coding != "" {
			ev.Headers["content-encoding"] = coding
		}
		got = received{}
		res, err := echo(context.Background(), ev)
		_, pathErr := url.PathUnescape(path)
		switch {
		case err != nil:
			t.Fatalf("the adapter failed the invocation: %v", err)
		case pathErr != nil || bodyErr != nil:
			if got.called || res.StatusCode != http.StatusBadRequest {
				t.Fatalf("a malformed path (%v) or body (%v) was answered %d, the API called: %v", pathErr, bodyErr, res.StatusCode, got.called)
			}
			if details := checkError(t, res).Details; pathErr == nil && !strings.Contains(details, "base64") {
				t.Fatalf("a body marked base64 that is not was answered %q", details)
			}
		case !got.called:
			// The proxy library could not make a request of the event (a
			// raw control character in the path or query, a method that is
			// no token): the answer must not blame the body, which is fine.
			if res.StatusCode != http.StatusBadRequest || strings.Contains(checkError(t, res).Details, "body") {
				t.Fatalf("an event the adapter could not turn into a request was answered %d %s", res.StatusCode, res.Body)
			}
		default:
			checkReceived(t, &got, ev, body)
		}
		res, err = api(context.Background(), ev)
		if err != nil || res.StatusCode >= 500 {
			t.Fatalf("%s %s?%s answered %d (%v): %s", method, path, query, res.StatusCode, err, res.Body)
		}
		if res.StatusCode >= 400 && !strings.EqualFold(method, http.MethodHead) { // the library upper-cases the method
			checkError(t, res)
		}
	})
}

// received is what the API was handed of a request.
type received struct {
	called               bool
	method, path, coding string
	body                 []byte
	readErr              error
}

func (g *received) record(w http.ResponseWriter, r *http.Request) {
	g.called, g.method, g.path, g.coding = true, r.Method, r.URL.Path, r.Header.Get("Content-Encoding")
	g.body, g.readErr = io.ReadAll(r.Body)
	w.WriteHeader(http.StatusNoContent)
}

// checkReceived checks what the API was handed of an event whose body
// decodes to body.
func checkReceived(t *testing.T, got *received, ev events.APIGatewayV2HTTPRequest, body []byte) {
	t.Helper()
	if got.readErr != nil || !bytes.Equal(got.body, body) {
		t.Fatalf("the API read %q (%v), the event carried %q", got.body, got.readErr, body)
	}
	// Methods are case-sensitive; http.NewRequest reads no method as GET.
	want := ev.RequestContext.HTTP.Method
	if want == "" {
		want = http.MethodGet
	}
	if got.method != want {
		t.Fatalf("method %q arrived as %q", ev.RequestContext.HTTP.Method, got.method)
	}
	// A decoded path's # and ? are the path's too.
	if p, _ := url.PathUnescape(ev.RawPath); strings.HasPrefix(ev.RawPath, "/") && got.path != p {
		t.Fatalf("path %q arrived as %q", ev.RawPath, got.path)
	}
	// A header arrives as API Gateway sent it, one value: the proxy
	// library trims spaces off one without a comma, and one with a comma
	// (a list, or headers joined) is given back whole.
	labelled := ev.Headers["content-encoding"]
	if !strings.Contains(labelled, ",") {
		labelled = strings.Trim(labelled, " ")
	}
	switch coding := strings.TrimSpace(labelled); {
	case (strings.EqualFold(coding, "gzip") || strings.EqualFold(coding, "x-gzip")) && !bytes.HasPrefix(body, []byte{0x1f, 0x8b}):
		if got.coding != "" {
			t.Fatalf("a body labelled %q that is no gzip stream kept the label", labelled)
		}
	case got.coding != labelled:
		t.Fatalf("Content-Encoding %q arrived as %q", labelled, got.coding)
	}
}

// errorBody is an error answer's body.
type errorBody struct{ Error, Details string }

// checkError checks an error answer, a JSON body that names the error,
// and returns the body.
func checkError(t *testing.T, res events.APIGatewayV2HTTPResponse) errorBody {
	t.Helper()
	raw := []byte(res.Body)
	if res.IsBase64Encoded {
		var err error
		if raw, err = base64.StdEncoding.DecodeString(res.Body); err != nil {
			t.Fatalf("answer marked base64 is not: %v", err)
		}
	}
	var body errorBody
	if json.Unmarshal(raw, &body) != nil || body.Error == "" {
		t.Fatalf("%d answered with %q, not a JSON error", res.StatusCode, raw)
	}
	return body
}

// echoStore is a store that holds nothing and writes what it is given, so
// that every handler runs to its end without an engine.
type echoStore struct{}

// echoStores is echoStore as every capability.
func echoStores() httpapi.Stores {
	e := echoStore{}
	return httpapi.Stores{
		Items: e, Lists: e, Batches: e, History: e, Indexes: e, Uploads: e,
		Usage: e, QuotaModes: e, Registry: e, RateLimits: e,
		Policy: e, Policies: e, Transfer: e, Strays: e, Keys: e,
	}
}

func (echoStore) Get(context.Context, uds.Key) (uds.Item, error) { return uds.Item{}, uds.ErrNotFound }
func (echoStore) GetMany(_ context.Context, keys []uds.Key) ([]uds.Item, []error) {
	errs := make([]error, len(keys))
	for i := range errs {
		errs[i] = uds.ErrNotFound
	}
	return make([]uds.Item, len(keys)), errs
}
func (echoStore) Create(_ context.Context, w uds.Write) (uds.Item, error) { return written(w), nil }
func (echoStore) Update(_ context.Context, w uds.Write) (uds.Item, error) { return written(w), nil }

// Patch finds no item to patch, as Get finds none.
func (echoStore) Patch(context.Context, uds.Write, uds.Patcher) (uds.Item, error) {
	return uds.Item{}, uds.ErrNotFound
}
func (echoStore) Delete(context.Context, uds.Write) error { return nil }
func (echoStore) ListItems(context.Context, store.ListQuery) (store.ListPage, error) {
	return store.ListPage{}, nil
}
func (echoStore) DeleteList(context.Context, uds.Write) (int, error) { return 0, nil }
func (echoStore) Versions(context.Context, uds.Key, uds.History) ([]uds.Version, error) {
	return nil, uds.ErrNotFound
}
func (echoStore) Version(context.Context, uds.Key, uds.History, int64) (uds.Item, error) {
	return uds.Item{}, uds.ErrNotFound
}
func (echoStore) DropHistory(context.Context, uds.Write) (int, error) { return 0, nil }
func (echoStore) Restore(_ context.Context, w uds.Write) (uds.Item, bool, error) {
	return written(w), false, nil
}
func (echoStore) QueryIndex(context.Context, store.IndexQuery) (store.IndexPage, error) {
	return store.IndexPage{}, nil
}
func (echoStore) BuildIndexes(context.Context, string, string, time.Duration) (uds.Policy, error) {
	return echoPolicy, nil
}

// echoPolicy is every namespace's policy: the defaults, with a ready
// index, so that queries run to their end.
var echoPolicy = uds.Policy{Indexes: []uds.Index{{Name: "byStatus", Path: "/status", Type: uds.IndexString, ID: "byStatus.1", Ready: true}}}

func (echoStore) Quota(_ context.Context, app, user string) (uds.Quota, error) {
	return uds.Quota{App: app, User: user}, nil
}
func (echoStore) AppLimits(context.Context, string) (uds.Limits, error)           { return uds.Limits{}, nil }
func (echoStore) SetAppLimits(context.Context, string, uds.Limits) error          { return nil }
func (echoStore) SetUserLimits(context.Context, string, string, uds.Limits) error { return nil }
func (echoStore) QuotaMode(context.Context, string) (uds.QuotaMode, error) {
	return uds.QuotaStrict, nil
}
func (echoStore) SetQuotaMode(context.Context, string, uds.QuotaMode) error { return nil }
func (echoStore) AppUsers(context.Context, string, string, int) ([]uds.UserUsage, bool, error) {
	return nil, false, nil
}
func (echoStore) UserApps(context.Context, string, string, int) ([]uds.AppUsage, bool, error) {
	return nil, false, nil
}
func (echoStore) Recompute(_ context.Context, app, user string) (uds.Recomputed, error) {
	return uds.Recomputed{Quota: uds.Quota{App: app, User: user}, Applied: true}, nil
}
func (echoStore) RegisterApp(_ context.Context, app, name, description string) (uds.AppRegistration, error) {
	return uds.AppRegistration{App: app, Name: name, Description: description}, nil
}
func (echoStore) App(_ context.Context, app string) (uds.AppRegistration, error) {
	return uds.AppRegistration{App: app, Name: app}, nil
}
func (echoStore) UnregisterApp(context.Context, string) error { return nil }
func (echoStore) AppByName(_ context.Context, name string) (uds.AppRegistration, error) {
	return uds.AppRegistration{Name: name}, nil
}
func (echoStore) Apps(context.Context, uds.AppRegistration, int) ([]uds.AppRegistration, bool, error) {
	return nil, false, nil
}
func (echoStore) NamespaceKeys(context.Context, store.KeysQuery) (store.KeysPage, error) {
	return store.KeysPage{}, nil
}
func (echoStore) HeldApps(context.Context, string, int) ([]uds.AppRegistration, bool, error) {
	return nil, false, nil
}
func (echoStore) WriteAtomic(_ context.Context, ops []uds.BatchOp) ([]uds.Item, error) {
	items := make([]uds.Item, len(ops))
	for i, op := range ops {
		items[i] = written(op.Write)
	}
	return items, nil
}
func (echoStore) Policy(context.Context, string, string) (uds.Policy, error) {
	return echoPolicy, nil
}
func (echoStore) StoredPolicy(context.Context, string, string) (uds.Policy, error) {
	return echoPolicy, nil
}
func (echoStore) SetPolicy(_ context.Context, _, _ string, p uds.Policy) (uds.Policy, error) {
	return p, nil
}
func (echoStore) Policies(context.Context, string, string, int, bool) ([]uds.NamespacePolicy, bool, error) {
	return nil, false, nil
}
func (echoStore) RatesInEffect(context.Context, string, string) (uds.Rate, uds.Rate, error) {
	return uds.Rate{}, uds.Rate{}, nil
}
func (echoStore) AppRateLimits(context.Context, string) (uds.RateLimits, error) {
	return uds.RateLimits{}, nil
}
func (echoStore) SetAppRateLimits(context.Context, string, uds.RateLimits) error { return nil }
func (echoStore) UserRateLimits(context.Context, string, string) (uds.Rate, error) {
	return uds.Rate{}, nil
}
func (echoStore) SetUserRateLimits(context.Context, string, string, uds.Rate) error { return nil }
func (echoStore) Strays(context.Context, store.StrayQuery) (store.StrayPage, error) {
	return store.StrayPage{}, nil
}
func (echoStore) RemoveStrays(context.Context, string, string, bool) (int, error) { return 0, nil }
func (echoStore) Export(context.Context, store.ExportQuery) (store.ExportPage, error) {
	return store.ExportPage{}, nil
}
func (echoStore) ExportUser(context.Context, store.UserExportQuery) (store.UserExportPage, error) {
	return store.UserExportPage{}, nil
}
func (echoStore) Import(_ context.Context, _ string, records []uds.Record) (uds.ImportResult, error) {
	return uds.ImportResult{Imported: len(records)}, nil
}

func (echoStore) ReserveUpload(_ context.Context, w uds.Write) (uds.Upload, error) {
	return uds.Upload{ID: "0123456789abcdef0123456789abcdef"}, nil
}

func (echoStore) CommitUpload(context.Context, string, string, *uds.Key) (uds.Item, bool, error) {
	return uds.Item{}, false, uds.ErrNotFound
}

// written is the item a write makes of nothing.
func written(w uds.Write) uds.Item {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return uds.Item{Key: w.Key, Data: w.Data, ClassName: w.ClassName, CreatedDate: now, CreatedBy: w.Subject,
		UpdatedDate: now, UpdatedBy: w.Subject, Version: 1, ExpiresAt: w.ExpiresAt}
}

// gzipped is s gzip compressed.
func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
