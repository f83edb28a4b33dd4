package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/expiry"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/streampoll"
	"github.com/udsproject/uds/pkg/uds"
)

// The crossing matrix (docs/decisions/write-engine.md, "A crossing matrix test"): the
// defects of the third release sat where two capabilities met on one
// write path, each correct alone. TestCrossings sets a namespace up with
// every pair of capabilities, runs every write path that meets both on
// values that make them meet, and then holds the tables and the bucket to
// the design's invariants (storetest's checks, and every kept version
// read back through the API). A new capability adds its entry to
// capabilities; a new write path its entry to crossingPaths.

var crossingFull = flag.Bool("crossing-full", false,
	"TestCrossings: run every pair of capabilities on every write path that meets both, not the representative subset")

// capability is one thing a namespace (or its app) may combine with the
// others: what it adds to the namespace's policy, if anything, and
// whether that part of the policy is set late, after the uploads are
// reserved, so that their commits meet a policy set since (as a namespace
// that keeps history takes no reservation at all).
type capability struct {
	name   string
	policy func(p map[string]any)
	late   bool
}

// The capabilities the matrix crosses, in the order their pairs are named.
var capabilities = []capability{
	// Two versions, so that the scripts' updates prune.
	{"history", func(p map[string]any) { p["history"] = map[string]any{"versions": 2} }, true},
	{"indexes", func(p map[string]any) {
		p["indexes"] = []any{map[string]any{"name": "byTitle", "path": "/title", "type": "string"},
			map[string]any{"name": "byRank", "path": "/rank", "type": "number"}}
	}, false},
	// Large values: values uploaded to the bucket, alternating with JSON.
	{"large", nil, false},
	// A binary rule that takes the inline binary values the scripts write
	// and not their large ones: set after the uploads were reserved, it
	// must refuse their commits.
	{"binary", func(p map[string]any) {
		p["binary"] = map[string]any{"contentTypes": []any{"image/*"}, "maxBytes": binaryMax}
	}, true},
	// A schema takes JSON only (without a binary rule): set after the
	// uploads were reserved, it must refuse their commits.
	{"schema", func(p map[string]any) {
		p["schema"] = map[string]any{"type": "object", "required": []any{"title"}}
	}, true},
	// Expiry: every value written expires, and the scripts expire them.
	{"expiry", nil, false},
	{"owner", func(p map[string]any) { p["access"] = "owner-write" }, false},
	// The streamed quota mode: the app's usage counted from the tables'
	// streams, which a poller hands to the stream function's handler.
	{"streamed", nil, false},
	// A change into private pending while a write and a commit arrive.
	{"pending", nil, false},
	// An erase of the owner's data once the path has run: their writes
	// refused while it runs, and then nothing of theirs left (eraseOwner).
	{"erase", nil, false},
}

// binaryMax is the binary rule's cap: above the inline binary values the
// scripts write, below their large ones.
const binaryMax = 1000

// crossingPath is a write path: the capabilities it needs to be met at
// all (reclaim needs items that expire), and the script that runs it.
type crossingPath struct {
	name  string
	needs []string
	run   func(x *crossing)
}

var crossingPaths = []crossingPath{
	{"create", nil, (*crossing).create},
	{"update", nil, (*crossing).update},
	{"delete", nil, (*crossing).remove},
	{"restore", nil, (*crossing).restore},
	{"commit", nil, (*crossing).commitPath},
	{"import", nil, (*crossing).importPath},
	{"atomic", nil, (*crossing).atomic},
	{"patch", nil, (*crossing).patchPath},
	{"delete-all", nil, (*crossing).deleteAll},
	{"reclaim", []string{"expiry"}, (*crossing).reclaimPath},
	{"sweep", []string{"expiry"}, (*crossing).sweep},
	{"stream-release", []string{"expiry"}, (*crossing).streamRelease},
	{"history-drop", []string{"history"}, (*crossing).drop},
}

// crossingSubset is the default run: the crossings of the third release's
// defects and a few more of each capability, small enough for make test.
// -crossing-full runs every pair.
var crossingSubset = map[string]bool{
	"history×large/update":         true,
	"history×large/restore":        true,
	"history×large/history-drop":   true,
	"history×owner/delete":         true,
	"indexes×expiry/reclaim":       true,
	"large×expiry/reclaim":         true,
	"large×pending/commit":         true,
	"large×schema/commit":          true,
	"large×binary/commit":          true,
	"large×owner/restore":          true,
	"history×schema/restore":       true,
	"history×indexes/atomic":       true,
	"expiry×streamed/reclaim":      true,
	"history×streamed/update":      true,
	"history×expiry/sweep":         true,
	"indexes×owner/stream-release": true,
	"large×owner/import":           true,
	"history×binary/delete-all":    true,
	"history×large/patch":          true,
	"indexes×streamed/patch":       true,
	"binary×schema/patch":          true,
	"expiry×owner/patch":           true,
	"history×erase/restore":        true,
	"large×erase/commit":           true,
	"indexes×erase/atomic":         true,
	"expiry×erase/reclaim":         true,
	"owner×erase/import":           true,
	"streamed×erase/patch":         true,
}

// TestCrossings runs the matrix: one subtest capA×capB/path per pair and
// path that meets both (the subset unless -crossing-full).
func TestCrossings(t *testing.T) {
	t.Parallel()
	for i, a := range capabilities {
		for _, b := range capabilities[i+1:] {
			for _, p := range crossingPaths {
				name := a.name + "×" + b.name + "/" + p.name
				if !meets(p, a, b) || !*crossingFull && !crossingSubset[name] {
					continue
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					x := newCrossing(t, a, b)
					p.run(x)
					if x.has["owner"] {
						x.ownerProbe()
					}
					if x.has["erase"] {
						x.eraseOwner()
					}
					x.check()
				})
			}
		}
	}
}

// meets reports whether a path meets both capabilities: it runs for a
// pair unless it needs a capability the pair lacks.
func meets(p crossingPath, a, b capability) bool {
	for _, need := range p.needs {
		if need != a.name && need != b.name {
			return false
		}
	}
	return true
}

// crossingNS is the namespace the matrix writes.
const crossingNS = "x"

// crossing is one subtest's world: an API over fresh tables and a bucket
// of its own, a namespace set up with two capabilities, and the values
// written so far.
type crossing struct {
	*env
	has map[string]bool
	// policy is the namespace's policy as the pair sets it.
	policy map[string]any
	s3     *s3.Client
	// poller reads the streams of a streamed app.
	poller *streampoll.Poller
	// uploads are the large values reserved for each item path before
	// the late capabilities' policy was set, to be committed in turn.
	uploads map[string][]string
	// etags are the items' last ETags, for If-Match.
	etags map[string]string
	// written counts the values written, so each differs in size;
	// writes counts the calls of write, whose kinds alternate.
	written, writes int
}

// owner writes the matrix's items.
const owner = "alice"

// crossingKeys are the item paths the scripts write: two key-value items
// and two items of one list.
var crossingKeys = []string{"a", "b", "l/s1", "l/s2"}

// newCrossing sets up a subtest's world with the capabilities a and b.
func newCrossing(t *testing.T, a, b capability) *crossing {
	t.Helper()
	x := &crossing{has: map[string]bool{a.name: true, b.name: true}, policy: map[string]any{"access": "shared"},
		uploads: map[string][]string{}, etags: map[string]string{}}
	tables := storetest.NewTables(t)
	if x.has["streamed"] {
		tables = storetest.NewStreamedTables(t)
	}
	bucket, endpoint := blobtest.Serve(t, nil)
	var err error
	if x.s3, err = blob.NewClient(context.Background(), endpoint); err != nil {
		t.Fatal(err)
	}
	x.env = newEnvOver(t, tables, bucket)
	for _, c := range []capability{a, b} {
		if c.policy != nil && !c.late {
			c.policy(x.policy)
		}
	}
	if x.has["streamed"] {
		x.streamed(tables)
	}
	x.setPolicy()
	if x.has["pending"] {
		x.pendingChange()
	}
	// Uploads are reserved before the history is switched on: the
	// pair's large values for every key, and the two the commit path
	// commits whatever the pair.
	keys := []string{"a"}
	if x.has["large"] {
		keys = crossingKeys
	}
	for _, k := range keys {
		for range 2 {
			x.uploads[k] = append(x.uploads[k], x.reserve(k))
		}
	}
	late := false
	for _, c := range []capability{a, b} {
		if c.policy != nil && c.late {
			c.policy(x.policy)
			late = true
		}
	}
	if late {
		x.setPolicy()
	}
	return x
}

// setPolicy sets the pair's policy on the namespace, in the app and in
// the one the import path imports into.
func (x *crossing) setPolicy() {
	x.t.Helper()
	body, err := json.Marshal(x.policy)
	if err != nil {
		x.t.Fatal(err)
	}
	for _, a := range []string{app, otherApp} {
		completePolicy(x.t, x.now, 200, func() response {
			return x.do("PUT", admin+"/apps/"+a+"/namespaces/"+crossingNS, string(body))
		})
	}
}

// streamed switches both apps to the streamed quota mode and reads the
// tables' streams into the stream function's handler, as deployed.
func (x *crossing) streamed(tables store.Tables) {
	for _, a := range []string{app, otherApp} {
		x.do("PUT", admin+"/apps/"+a+"/quota-mode", `{"mode": "streamed"}`).expect(x.t, 200)
	}
	x.poller = pollStreams(x.t, x.env, tables)
}

// pollStreams reads the streams of tables (streamed tables) into the
// stream function's handler over e's store, as deployed; drainStreams
// hands it what is written so far.
func pollStreams(t *testing.T, e *env, tables store.Tables) *streampoll.Poller {
	ctx := context.Background()
	found, err := streampoll.Streams(ctx, e.client, tables.Data, tables.List, tables.History)
	if err != nil {
		t.Fatal(err)
	}
	streams, err := streampoll.NewClient(ctx, os.Getenv(config.EnvDynamoDBEndpoint))
	if err != nil {
		t.Fatal(err)
	}
	handle := expiry.Handler(e.st, slog.New(slog.DiscardHandler), emf.NewWriter(io.Discard))
	p, err := streampoll.New(streams, found, handle, streampoll.WithInterval(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// pendingChange announces a change of the namespace into private while
// it is empty, and holds writes to what a pending change means: a write
// waits (503), and so does the commit of an upload reserved before the
// change; then the change completes. The rest of the script runs in
// the private namespace.
func (x *crossing) pendingChange() {
	t := x.t
	held := x.reserve("held")
	private := maps.Clone(x.policy)
	private["access"] = "private"
	body, _ := json.Marshal(private)
	path := admin + "/apps/" + app + "/namespaces/" + crossingNS
	x.do("PUT", path, string(body)).expect(t, http.StatusAccepted)
	if r := x.as(owner, "POST", x.item("c"), `{"data":{"title":"t","rank":1}}`); r.status != http.StatusServiceUnavailable {
		t.Errorf("a create while the change into private was pending answered %d, want 503: %s", r.status, r.raw)
	}
	if r := x.commit(x.item("held"), held, x.subject()...); r.status != http.StatusServiceUnavailable {
		t.Errorf("a commit while the change into private was pending answered %d, want 503 (it is a write, judged when it is made): %s", r.status, r.raw)
	}
	time.Sleep(2 * testSettle)
	if r := x.do("PUT", path, string(body)); r.status != http.StatusOK {
		t.Errorf("the change into private completed with %d, want 200: %s", r.status, r.raw)
		return
	}
	x.policy = private
	// The app the import path imports into follows.
	completePolicy(t, x.now, 200, func() response {
		return x.do("PUT", admin+"/apps/"+otherApp+"/namespaces/"+crossingNS, string(body))
	})
}

// item is the route of one of the namespace's items.
func (x *crossing) item(key string) string { return dataRoute(app, key) }

// dataRoute is the route of an item of the namespace in an app.
func dataRoute(appID, key string) string {
	return "/rest/api/v1/data/" + appID + "/" + crossingNS + "/" + key
}

// subject is the header that makes the owner the caller.
func (x *crossing) subject() []string { return []string{"X-Uds-Subject", owner} }

// ttl is how long the pair's values live, in seconds: 0 (for ever)
// unless the pair has expiry.
func (x *crossing) ttl() int {
	if x.has["expiry"] {
		return int(lifetime / time.Second)
	}
	return 0
}

// reserve reserves an upload of a large value of the item at key and
// sends its bytes; it returns the upload's ID.
func (x *crossing) reserve(key string) string {
	x.written++
	size := 2000 + 100*x.written
	body := fmt.Sprintf(`{"size": %d, "contentType": "image/png"`, size)
	if ttl := x.ttl(); ttl > 0 {
		body += fmt.Sprintf(`, "ttl": %d`, ttl)
	}
	r := x.do("POST", x.item(key)+"?upload", body+"}", x.subject()...).expect(x.t, http.StatusCreated)
	res := blobtest.Post(x.t, presignedPost(r), pngOf(size))
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		x.t.Fatalf("the S3 POST answered %d", res.StatusCode)
	}
	return r.body["uploadId"].(string)
}

// pngOf is size bytes that start as a PNG does.
func pngOf(size int) []byte {
	b := bytes.Repeat([]byte{0x7f}, size)
	copy(b, png)
	return b
}

// kind is what the nth value written to an item is, for the pair: large
// values and inline binary ones alternate with JSON (or with each other),
// so that each kind replaces the other and is kept as a version.
func (x *crossing) kind(n int) string {
	var kinds []string
	for _, k := range []string{"large", "binary"} {
		if x.has[k] {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) < 2 {
		kinds = append(kinds, "json")
	}
	return kinds[n%len(kinds)]
}

// write writes the next value of the item at key: created (POST) or
// replaced (PUT, under If-Match of the last ETag), of the kind the pair
// writes next. It returns the answer's status.
func (x *crossing) write(method, key string) int {
	x.t.Helper()
	x.writes++
	if _, stored := x.etags[key]; method == "PUT" && !stored {
		// The item's create was refused (a commit the policy set since
		// refuses): the script goes on by creating it.
		method = "POST"
	}
	kind := x.kind(x.writes)
	if kind == "large" && len(x.uploads[key]) == 0 {
		kind = "json"
	}
	var r response
	switch kind {
	case "large":
		return x.commitNext(key)
	case "binary":
		x.written++
		headers := append(x.subject(), "Content-Type", "image/png")
		if ttl := x.ttl(); ttl > 0 {
			headers = append(headers, "Uds-Ttl", strconv.Itoa(ttl))
		}
		if method == "PUT" && x.etags[key] != "" {
			headers = append(headers, "If-Match", x.etags[key])
		}
		// Sizes from 300 to 790 bytes: under the binary rule's cap.
		r = x.send(method, x.item(key), pngOf(300+10*(x.written%50)), headers...)
	default:
		r = x.json(method, key)
	}
	return x.noted(key, r)
}

// commitNext commits the next upload reserved for the item at key. A
// commit is a write judged by the policy at its commit: a schema or a
// binary rule set since the reservation refuses it, and a history set
// since keeps the version the commit replaces.
func (x *crossing) commitNext(key string) int {
	x.t.Helper()
	id := x.uploads[key][0]
	x.uploads[key] = x.uploads[key][1:]
	var replaced int64
	if x.has["history"] {
		replaced = x.current(key)
	}
	r := x.commit(x.item(key), id, x.subject()...)
	switch {
	case x.has["binary"]:
		return x.refused(key, r, "the commit of a large value past the binary rule set since its upload")
	case x.has["schema"]:
		return x.refused(key, r, "the commit of a large value in a namespace whose schema, set since its upload, takes JSON only")
	}
	status := x.noted(key, r)
	if replaced > 0 && status/100 == 2 && !slices.Contains(x.versions(key), replaced) {
		x.t.Errorf("the commit to %q kept no version of the value it replaced (version %d) in a namespace that keeps history", key, replaced)
	}
	return status
}

// refused fails the test unless a write was refused as what the policy
// does not take (422). A write that was taken nonetheless is noted, so
// that the script goes on from the item as it is.
func (x *crossing) refused(key string, r response, what string) int {
	x.t.Helper()
	if r.status != http.StatusUnprocessableEntity {
		x.t.Errorf("%s (%s) answered %d, want 422: %s", what, key, r.status, r.raw)
	}
	if etag := r.header.Get("ETag"); r.status/100 == 2 && etag != "" {
		x.etags[key] = etag
	}
	return r.status
}

// json writes a JSON value of the item at key, as write does.
func (x *crossing) json(method, key string) response {
	x.t.Helper()
	x.written++
	body := fmt.Sprintf(`{"data":{"title":"t%d","rank":%d,"pad":%q}`, x.written, x.written, strings.Repeat("p", 10*x.written))
	if ttl := x.ttl(); ttl > 0 {
		body += fmt.Sprintf(`,"ttl":%d`, ttl)
	}
	headers := x.subject()
	if method == "PUT" && x.etags[key] != "" {
		headers = append(headers, "If-Match", x.etags[key])
	}
	return x.do(method, x.item(key), body+"}", headers...)
}

// noted notes a write's ETag and fails the test unless it wrote.
func (x *crossing) noted(key string, r response) int {
	x.t.Helper()
	if r.status/100 != 2 {
		x.t.Errorf("writing %s answered %d: %s", key, r.status, r.raw)
	} else if etag := r.header.Get("ETag"); etag != "" {
		x.etags[key] = etag
	}
	return r.status
}

// del deletes the item at key.
func (x *crossing) del(key string) {
	x.t.Helper()
	if r := x.do("DELETE", x.item(key), "", x.subject()...); r.status != http.StatusNoContent {
		x.t.Errorf("DELETE %s answered %d: %s", key, r.status, r.raw)
	}
	delete(x.etags, key)
}

// expire moves the clock past every expiry written so far, and past the
// lapse of every upload reserved.
func (x *crossing) expire() {
	x.clock.Advance(uds.UploadWindow + uds.UploadGrace + time.Second)
	x.env.expire()
}

// The paths' scripts. Each writes a few values of the pair's kinds
// through one write path; check then holds the result to the invariants.

// create creates items, one again over the history its delete left and,
// with expiry, one over an expired item.
func (x *crossing) create() {
	x.write("POST", "a")
	x.write("POST", "l/s1")
	x.del("a")
	x.write("POST", "a") // over the history a delete left
	if x.has["expiry"] {
		x.expire()
		x.json("POST", "l/s1") // over an expired item
	}
}

// update replaces an item more often than the history keeps versions:
// the oldest are pruned.
func (x *crossing) update() {
	x.write("POST", "a")
	for range 4 {
		x.write("PUT", "a")
	}
	x.write("POST", "l/s1")
	x.write("PUT", "l/s1")
}

// remove deletes a replaced item and a list item.
func (x *crossing) remove() {
	x.write("POST", "a")
	x.write("PUT", "a")
	x.del("a")
	x.write("POST", "l/s1")
	x.del("l/s1")
}

// restore restores a kept version (the current one without history),
// and after a delete the version before it; then, with the history
// switched off, the restored value is replaced, while the version it was
// restored from is still kept.
func (x *crossing) restore() {
	x.write("POST", "a")
	x.write("PUT", "a")
	versions := x.versions("a")
	if len(versions) == 0 {
		return // the writes failed, and said why
	}
	x.restoreVersion("a", versions[len(versions)-1])
	if !x.has["history"] {
		return
	}
	x.del("a")
	if kept := x.versions("a"); len(kept) > 0 {
		x.restoreVersion("a", kept[0])
	}
	delete(x.policy, "history")
	x.setPolicy()
	x.noted("a", x.json("PUT", "a"))
}

// versions lists the versions the item at key lists in its history,
// newest first: the current one alone without history.
func (x *crossing) versions(key string) []int64 {
	x.t.Helper()
	var out []int64
	for _, e := range x.historyOf(key) {
		if !e.Deleted {
			out = append(out, e.Version)
		}
	}
	return out
}

// current is the version of the item at key, 0 when there is none.
func (x *crossing) current(key string) int64 {
	x.t.Helper()
	for _, e := range x.historyOf(key) {
		if e.Current && !e.Deleted {
			return e.Version
		}
	}
	return 0
}

// historyOf is the item's history as GET ?history lists it: none for an
// item without item or history.
func (x *crossing) historyOf(key string) []historyEntry {
	x.t.Helper()
	r := x.do("GET", x.item(key)+"?history", "", x.subject()...)
	if r.status == http.StatusNotFound {
		return nil
	}
	entries, _ := historyAnswer(x.t, r.expect(x.t, 200))
	return entries
}

// restoreVersion restores a version of the item at key. A restore is a
// write judged by the policy in effect: in a pair with a schema or a
// binary rule, a version the policy no longer takes is refused (422).
func (x *crossing) restoreVersion(key string, version int64) {
	x.t.Helper()
	r := x.do("POST", fmt.Sprintf("%s?restore=%d", x.item(key), version), "", x.subject()...)
	if r.status == http.StatusUnprocessableEntity && (x.has["schema"] || x.has["binary"]) {
		return
	}
	x.noted(key, r)
}

// commitPath commits two uploads over a JSON item, then replaces the
// large value with JSON.
func (x *crossing) commitPath() {
	x.noted("a", x.json("POST", "a"))
	x.commitNext("a")
	x.commitNext("a")
	x.noted("a", x.json("PUT", "a"))
}

// importPath exports the namespace and imports it into another app.
func (x *crossing) importPath() {
	x.write("POST", "a")
	x.write("PUT", "a")
	x.write("POST", "l/s1")
	exported, _ := x.exportPages(x.t, app, 100, "&namespace="+crossingNS)
	// A large value's record is left out by design: its bytes are in the
	// exporting deployment's bucket.
	var records []json.RawMessage
	for _, r := range exported {
		if !bytes.Contains(r, []byte(`"large":true`)) {
			records = append(records, r)
		}
	}
	// The other app holds nothing of the namespace: every record lands.
	if got := x.importRecords(x.t, otherApp, records); got.Imported+got.Expired != len(records) || got.Skipped != 0 || len(got.Conflicts) != 0 {
		x.t.Errorf("the import of %d records answered %+v, want each imported or expired", len(records), got)
	}
	// The imported copy goes and the original is replaced: neither takes
	// what the other names with it. The copy is not there when the item
	// was large or refused.
	if r := x.do("DELETE", dataRoute(otherApp, "a"), "", x.subject()...); r.status != http.StatusNoContent && r.status != http.StatusNotFound {
		x.t.Errorf("the imported copy's DELETE answered %d: %s", r.status, r.raw)
	}
	x.write("PUT", "a")
	if !x.has["expiry"] {
		return
	}
	// A record imported over an expired item replaces it, and what the
	// expired item held (its index entries, its object, its usage) goes
	// with it.
	x.expire()
	record := map[string]any{"namespace": crossingNS, "id": "a", "owner": owner, "data": map[string]any{"title": "imported", "rank": 1},
		"createdDate": "2026-01-02T03:04:05.678Z", "createdBySubject": owner,
		"updatedDate": "2026-01-02T03:04:05.678Z", "updatedBySubject": owner, "version": 40}
	if x.policy["access"] == "private" {
		record["private"] = true
	}
	raw, err := json.Marshal(record)
	if err != nil {
		x.t.Fatal(err)
	}
	if got := x.importRecords(x.t, app, []json.RawMessage{raw}); got.Imported != 1 {
		x.t.Errorf("an import over an expired item answered %+v", got)
	}
}

// atomic replaces, deletes and creates items in two atomic batches.
func (x *crossing) atomic() {
	x.write("POST", "a")
	x.write("POST", "l/s1")
	x.write("PUT", "a")
	ttl := ""
	if x.has["expiry"] {
		ttl = fmt.Sprintf(`,"ttl":%d`, x.ttl())
	}
	for _, ops := range []string{
		`{"method":"PUT","path":"x/a","body":{"data":{"title":"batch","rank":7}` + ttl + `}},
		 {"method":"DELETE","path":"x/l/s1"},
		 {"method":"POST","path":"x/b","body":{"data":{"title":"new","rank":8}` + ttl + `}}`,
		`{"method":"DELETE","path":"x/a"},
		 {"method":"PUT","path":"x/b","body":{"data":{"title":"newer","rank":9,"pad":"` + strings.Repeat("q", 300) + `"}` + ttl + `}}`,
	} {
		r := x.do("POST", base+"/batch", `{"atomic":true,"operations":[`+ops+`]}`, x.subject()...)
		if r.status != 200 {
			x.t.Errorf("an atomic batch answered %d: %s", r.status, r.raw)
		}
	}
}

// patchPath patches items alone and in both batch modes, each after a
// write of the kind the pair writes next: a value that is JSON takes the
// patch, as an update of what the patch makes of it, and meets every
// capability an update meets; a binary or large one refuses it (409).
func (x *crossing) patchPath() {
	x.write("POST", "a")
	x.write("PUT", "a")
	x.patchItem("a", "")
	x.write("POST", "l/s1")
	x.patchItem("l/s1", "")
	x.write("PUT", "a")
	x.patchItem("a", "atomic")
	x.write("PUT", "l/s1")
	x.patchItem("l/s1", "one by one")
}

// patchItem sends a merge patch of the item at key's rank and pad, as
// PATCH or as the one operation of a batch, and fails the test unless it
// applied to a JSON value or was refused for a binary one.
func (x *crossing) patchItem(key, batch string) {
	x.t.Helper()
	x.written++
	get := x.send("GET", x.item(key), nil, x.subject()...)
	isJSON := get.status == http.StatusOK && strings.HasPrefix(get.header.Get("Content-Type"), "application/json")
	patch := fmt.Sprintf(`{"rank":%d,"pad":%q}`, x.written, strings.Repeat("p", 10*x.written))
	var status int
	var r response
	switch batch {
	case "":
		r = x.patch(x.item(key), httpapi.MergePatchType, patch, x.subject()...)
		status = r.status
	default:
		r = x.do("POST", base+"/batch", fmt.Sprintf(`{"atomic":%v,"operations":[{"method":"PATCH","path":"%s/%s","body":%s}]}`,
			batch == "atomic", crossingNS, key, patch), x.subject()...)
		status = r.status
		if batch != "atomic" && r.status == http.StatusOK {
			var out struct{ Results []result }
			if err := json.Unmarshal(r.raw, &out); err != nil || len(out.Results) != 1 {
				x.t.Fatalf("a batch answered %s", r.raw)
			}
			status = out.Results[0].Status
		}
	}
	switch {
	case !isJSON && status != http.StatusConflict:
		x.t.Errorf("a patch (%s) of %s, whose value is not JSON, answered %d, want 409: %s", batch, key, status, r.raw)
	case isJSON && status != http.StatusOK:
		x.t.Errorf("a patch (%s) of %s answered %d: %s", batch, key, status, r.raw)
	case isJSON && batch == "":
		x.noted(key, r)
	case isJSON:
		// A batch's answer carries the item's ETag inside it.
		x.etags[key] = x.do("GET", x.item(key), "", x.subject()...).header.Get("ETag")
	}
}

// deleteAll deletes a list whose items were replaced.
func (x *crossing) deleteAll() {
	x.write("POST", "l/s1")
	x.write("PUT", "l/s1")
	x.write("POST", "l/s2")
	if r := x.do("DELETE", x.item("l/list"), "", x.subject()...); r.status/100 != 2 {
		x.t.Errorf("deleting the list answered %d: %s", r.status, r.raw)
	}
}

// reclaimPath fills the owner's item limit with expiring items, expires
// them, and writes again: the write, refused for the quota at first,
// reclaims the expired items and their index entries, objects and kept
// versions with them.
func (x *crossing) reclaimPath() {
	x.write("POST", "a")
	x.write("PUT", "a")
	x.write("POST", "l/s1")
	x.write("POST", "l/s2")
	x.drain()
	used := storetest.RecordedUsage(x.t, x.client, x.tables, app, owner)
	x.do("PUT", fmt.Sprintf("%s/apps/%s/users/%s/quota", admin, app, owner), fmt.Sprintf(`{"limitItems": %d}`, used.Items)).expect(x.t, 200)
	x.clock.Advance(store.DefaultLimitsTTL + time.Second)
	x.expire()
	r := x.json("POST", "b")
	if r.status == http.StatusForbidden && x.poller != nil {
		// In the streamed mode the stream releases what the reclaim
		// removed: the write is refused until it has (the mode trades the
		// exact limit for cheaper writes), and then taken once the
		// write path's tracked usage has lapsed.
		x.drain()
		x.clock.Advance(store.DefaultTrackedTTL + time.Second)
		r = x.json("POST", "b")
	}
	x.noted("b", r)
	x.noted("a", x.json("POST", "a"))
	// What follows the script is not held to the limit.
	x.do("DELETE", fmt.Sprintf("%s/apps/%s/users/%s/quota", admin, app, owner), "").expect(x.t, http.StatusNoContent)
	x.clock.Advance(store.DefaultLimitsTTL + time.Second)
}

// sweep expires the items and runs the local server's sweep.
func (x *crossing) sweep() {
	x.write("POST", "a")
	x.write("PUT", "a")
	x.write("POST", "l/s1")
	x.expire()
	if _, err := x.st.SweepExpired(context.Background()); err != nil {
		x.t.Errorf("the sweep: %v", err)
	}
}

// streamRelease deletes the expired items and kept versions as DynamoDB's
// TTL does, behind the API's back, and hands each to the release the
// stream function makes of it.
func (x *crossing) streamRelease() {
	x.write("POST", "a")
	x.write("PUT", "a")
	x.write("POST", "l/s1")
	x.expire()
	ctx := context.Background()
	now := x.now()
	for _, table := range []string{x.tables.Data, x.tables.List, x.tables.History} {
		out, err := x.client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
		if err != nil {
			x.t.Fatal(err)
		}
		for _, it := range out.Items {
			ms, ok := it[schema.AttrExpiresAtMillis].(*types.AttributeValueMemberN)
			if !ok {
				continue
			}
			if at, _ := strconv.ParseInt(ms.Value, 10, 64); at > now.UnixMilli() {
				continue
			}
			key := map[string]types.AttributeValue{}
			for _, k := range []string{schema.AttrDataKey, schema.AttrSortKey, schema.AttrHistoryKey, schema.AttrVersion} {
				if v, ok := it[k]; ok {
					key[k] = v
				}
			}
			if table == x.tables.History {
				key = map[string]types.AttributeValue{schema.AttrHistoryKey: it[schema.AttrHistoryKey], schema.AttrVersion: it[schema.AttrVersion]}
			} else {
				delete(key, schema.AttrVersion)
			}
			if _, err := x.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key}); err != nil {
				x.t.Fatal(err)
			}
			if _, err := x.st.ReleaseRemoved(ctx, it, now); err != nil {
				x.t.Errorf("releasing %v: %v", key, err)
			}
		}
	}
}

// drop drops the history of an item replaced twice.
func (x *crossing) drop() {
	x.write("POST", "a")
	x.write("PUT", "a")
	x.write("PUT", "a")
	if r := x.do("DELETE", x.item("a")+"?history", "", x.subject()...); r.status != 200 {
		x.t.Errorf("dropping the history answered %d: %s", r.status, r.raw)
	}
}

// ownerProbe: in an owner-write namespace, the owner's kept versions
// answer to the owner alone. Another caller creates each item the owner
// deleted and tries to drop its history; the owner's versions must stay,
// and the owner must still restore the newest of each item's, unless the
// other caller now holds the item (which owner-write keeps the owner from
// replacing).
func (x *crossing) ownerProbe() {
	t := x.t
	before := x.keptBy(owner)
	for _, k := range crossingKeys {
		if x.send("GET", x.item(k), nil).status == http.StatusNotFound {
			x.as("mallory", "POST", x.item(k), `{"data":{"title":"mine","rank":0}}`)
		}
		x.as("mallory", "DELETE", x.item(k)+"?history", "")
	}
	after := x.keptBy(owner)
	newest := map[uds.Key]int64{}
	for _, v := range before {
		if !slices.Contains(after, v) {
			t.Errorf("another caller dropped %s's kept version %d of %s", owner, v.Version, storetest.KeyPath(v.Key))
			continue
		}
		newest[v.Key] = max(newest[v.Key], v.Version)
	}
	for _, key := range slices.SortedFunc(maps.Keys(newest), func(a, b uds.Key) int { return strings.Compare(a.DataKey()+a.SortKey, b.DataKey()+b.SortKey) }) {
		path := x.itemOf(key)
		r := x.as(owner, "POST", fmt.Sprintf("%s?restore=%d", path, newest[key]), "")
		if r.status/100 != 2 && !(r.status == http.StatusForbidden && x.creator(path) != owner) {
			t.Errorf("%s restoring their version %d of %s answered %d: %s", owner, newest[key], storetest.KeyPath(key), r.status, r.raw)
		}
	}
}

// creator is the subject that created the item at path, "" when there is
// none: from a JSON answer's body, or the headers of a binary one.
func (x *crossing) creator(path string) string {
	r := x.send("GET", path, nil)
	if by := r.header.Get("Uds-Created-By-Subject"); by != "" || r.status != http.StatusOK {
		return by
	}
	var it struct{ CreatedBySubject string }
	if err := json.Unmarshal(r.raw, &it); err != nil {
		x.t.Fatalf("GET %s: %v", path, err)
	}
	return it.CreatedBySubject
}

// keptBy lists the kept versions of items the subject created.
func (x *crossing) keptBy(subject string) []storetest.KeptVersion {
	var out []storetest.KeptVersion
	for _, v := range storetest.KeptVersions(x.t, x.client, x.tables, app, x.now()) {
		if v.CreatedBy == subject {
			out = append(out, v)
		}
	}
	return out
}

// itemOf is the route of a stored item's key.
func (x *crossing) itemOf(k uds.Key) string {
	return "/rest/api/v1/data/" + k.App + "/" + k.Namespace + "/" + storetest.KeyPath(k)
}

// drain lets the stream function count everything written so far, in a
// streamed app.
func (x *crossing) drain() {
	if x.poller != nil {
		drainStreams(x.t, x.poller)
	}
}

func drainStreams(t *testing.T, p *streampoll.Poller) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Drain(ctx); err != nil {
		t.Fatalf("draining the streams: %v", err)
	}
}

// eraseOwner erases the owner's data: a write of theirs is refused while
// the erase runs, it ends with a receipt, and their export is then empty
// (check holds what is left to the invariants).
func (x *crossing) eraseOwner() {
	t := x.t
	// The clock stands still, so that the erase settles only when the
	// steps move it past its Retry-After.
	x.clock.Freeze()
	x.do("POST", admin+"/users/"+owner+"/erase", "").expect(t, http.StatusAccepted)
	x.do("POST", x.item("after-erase"), `{"data":{"title":"t"}}`, x.subject()...).expect(t, http.StatusConflict)
	if receipt := x.erase(t, owner, "", x.drain); receipt.State != "done" {
		t.Fatalf("the erase ended %+v", receipt)
	}
	if apps, records := x.exportUser(t, owner, 1000); len(apps)+len(records) != 0 {
		t.Errorf("the owner's export after the erase: %s %s", apps, records)
	}
}

// check holds the tables and the bucket to the invariants, in both apps.
func (x *crossing) check() {
	t := x.t
	x.drain()
	ctx := context.Background()
	var found []string
	for _, a := range []string{app, otherApp} {
		found = append(found, storetest.UsageViolations(t, x.client, x.tables, a)...)
		found = append(found, storetest.CatalogueViolations(t, x.client, x.tables, a)...)
		found = append(found, x.listedKeys(a)...)
		p, err := x.st.Policy(ctx, a, crossingNS)
		if err != nil {
			t.Fatal(err)
		}
		found = append(found, storetest.IndexViolations(t, x.client, x.tables, a, crossingNS, p.Indexes)...)
		r := x.do("GET", admin+"/apps/"+a+"/namespaces/"+crossingNS+"/strays", "")
		if records, _ := r.body["records"].([]any); r.status != 200 || len(records) > 0 {
			found = append(found, fmt.Sprintf("the strays of %s in %s answered %d: %s", crossingNS, a, r.status, r.raw))
		}
		for _, v := range storetest.KeptVersions(t, x.client, x.tables, a, x.now()) {
			found = append(found, x.readVersion(v)...)
		}
	}
	found = append(found, storetest.ObjectViolations(t, x.client, x.tables, blobtest.Keys(t, x.s3))...)
	for _, f := range found {
		t.Error(f)
	}
}

// listedKeys holds the admin listing of the namespace's keys to the live
// items the data tables hold there: each listed once, none left out.
func (x *crossing) listedKeys(appID string) []string {
	var stored []string
	now := x.now().UnixMilli()
	for _, table := range []string{x.tables.Data, x.tables.List} {
		out, err := x.client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			FilterExpression:          aws.String("begins_with(#k, :p) AND (attribute_not_exists(#xm) OR #xm > :now)"),
			ExpressionAttributeNames:  map[string]string{"#k": schema.AttrDataKey, "#xm": schema.AttrExpiresAtMillis},
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: appID + uds.KeyDelimiter + crossingNS + uds.KeyDelimiter}, ":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(now, 10)}}})
		if err != nil {
			x.t.Fatal(err)
		}
		for _, it := range out.Items {
			id := strings.Split(it[schema.AttrDataKey].(*types.AttributeValueMemberS).Value, uds.KeyDelimiter)[2]
			if sk, ok := it[schema.AttrSortKey].(*types.AttributeValueMemberS); ok {
				id += "/" + sk.Value
			}
			stored = append(stored, id)
		}
	}
	var listed []string
	path := admin + "/apps/" + appID + "/namespaces/" + crossingNS + "/items?limit=3"
	for cursor, pages := "", 0; pages < 100; pages++ {
		p := path
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		r := x.do("GET", p, "")
		if r.status != http.StatusOK {
			return []string{fmt.Sprintf("GET %s answered %d: %s", p, r.status, r.raw)}
		}
		for _, it := range r.body["items"].([]any) {
			item := it.(map[string]any)
			id := item["id"].(string)
			if sk, ok := item["sortKey"].(string); ok {
				id += "/" + sk
			}
			listed = append(listed, id)
		}
		if cursor, _ = r.body["cursor"].(string); cursor == "" {
			break
		}
	}
	slices.Sort(stored)
	slices.Sort(listed)
	if !slices.Equal(stored, listed) {
		return []string{fmt.Sprintf("the listing of %s in %s gives %q; the tables hold %q", crossingNS, appID, listed, stored)}
	}
	return nil
}

// readVersion reads a kept version back as its creator (or, in a private
// namespace, its owner): GET ?version=V answers it (a large value with a
// redirect to bytes the bucket serves), and so does ?version=V&inline.
func (x *crossing) readVersion(v storetest.KeptVersion) []string {
	who := v.CreatedBy
	if v.Key.Owner != "" {
		who = v.Key.Owner
	}
	path := fmt.Sprintf("%s?version=%d", x.itemOf(v.Key), v.Version)
	var out []string
	r := x.send("GET", path, nil, "X-Uds-Subject", who)
	switch r.status {
	case http.StatusOK:
	case http.StatusFound:
		res, err := testClient.Get(r.header.Get("Location"))
		if err != nil {
			x.t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			out = append(out, fmt.Sprintf("GET %s redirects to bytes the bucket answers with %d", path, res.StatusCode))
		}
	default:
		out = append(out, fmt.Sprintf("GET %s answered %d: %s", path, r.status, r.raw))
	}
	if r := x.send("GET", path+"&inline", nil, "X-Uds-Subject", who); r.status != http.StatusOK {
		out = append(out, fmt.Sprintf("GET %s&inline answered %d: %s", path, r.status, r.raw))
	}
	return out
}
