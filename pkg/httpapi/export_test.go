package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

const otherApp = "0b4e7c4e-6f0a-4b43-9d53-2f6c1e0f6a11"

// exportAll pages through an app's export with the given page size and
// returns the records as the server encoded them.
func (e *env) exportAll(t *testing.T, appID string, limit int) []json.RawMessage {
	t.Helper()
	out, _ := e.exportPages(t, appID, limit, "")
	return out
}

// exportPages pages through an app's export with the given page size and
// further query parameters (query: "&namespace=kv", say), and returns the
// records as the server encoded them and how many each page held.
func (e *env) exportPages(t *testing.T, appID string, limit int, query string) ([]json.RawMessage, []int) {
	t.Helper()
	var out []json.RawMessage
	var sizes []int
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("the export does not end")
		}
		q := fmt.Sprintf("?limit=%d%s", limit, query)
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		r := e.do("GET", admin+"/apps/"+appID+"/export"+q, "").expect(t, 200)
		var page struct {
			Records []json.RawMessage
			Cursor  string
		}
		if err := json.Unmarshal(r.raw, &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Records) > limit {
			t.Fatalf("a page of limit %d holds %d records", limit, len(page.Records))
		}
		out, sizes = append(out, page.Records...), append(sizes, len(page.Records))
		if page.Cursor == "" {
			return out, sizes
		}
		cursor = page.Cursor
	}
}

// importRecords posts records to an app's import route and returns its
// answer.
func (e *env) importRecords(t *testing.T, appID string, records []json.RawMessage) importAnswer {
	t.Helper()
	body, err := json.Marshal(map[string]any{"records": records})
	if err != nil {
		t.Fatal(err)
	}
	r := e.do("POST", admin+"/apps/"+appID+"/import", string(body)).expect(t, 200)
	var a importAnswer
	if err := json.Unmarshal(r.raw, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

type importAnswer struct {
	Imported, Skipped, Expired int
	Conflicts                  []struct {
		Index         int
		Namespace, ID string
		SortKey       string
		Version       int64
	}
	NotImported []struct {
		Index                 int
		Namespace, ID, Reason string
	}
}

// TestImportLeavesOutLargeValues exports an app holding a large value
// between JSON items and imports it into another app: the large value's
// record is left out and reported, by its place among the records sent
// and why, and every other record is written. A conflict after it keeps
// its own place.
func TestImportLeavesOutLargeValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("POST", base+"/kv/a", `{"data":1}`).expect(t, http.StatusCreated)
	value := bytes.Repeat([]byte("large!"), 100_000)
	id := e.upload(base+"/kv/photo", len(value), "application/octet-stream", value)
	e.commit(base+"/kv/photo", id).expect(t, http.StatusCreated)
	e.do("POST", base+"/kv/z", `{"data":2}`).expect(t, http.StatusCreated)
	records := e.exportAll(t, app, 1000)
	large := slices.IndexFunc(records, func(r json.RawMessage) bool { return bytes.Contains(r, []byte(`"large":true`)) })
	if len(records) != 3 || large < 0 {
		t.Fatalf("exported %d records, the large one at %d", len(records), large)
	}
	got := e.importRecords(t, otherApp, records)
	if got.Imported != 2 || len(got.Conflicts) != 0 || len(got.NotImported) != 1 {
		t.Fatalf("import answered %+v, want 2 imported and the large value left out", got)
	}
	if l := got.NotImported[0]; l.Index != large || l.Namespace != "kv" || l.ID != "photo" || !strings.Contains(l.Reason, "a large value") {
		t.Errorf("left out %+v, want record %d, kv/photo, saying it is a large value", l, large)
	}
	e.do("GET", "/rest/api/v1/data/"+otherApp+"/kv/a", "").expect(t, http.StatusOK)
	e.do("GET", "/rest/api/v1/data/"+otherApp+"/kv/photo", "").expect(t, http.StatusNotFound)
	// Again, with the record after the large one changed: it conflicts,
	// named by its own place.
	z := slices.IndexFunc(records, func(r json.RawMessage) bool { return bytes.Contains(r, []byte(`"id":"z"`)) })
	if z < large {
		t.Fatalf("exported kv/z at %d, before kv/photo at %d", z, large)
	}
	changed := slices.Clone(records)
	changed[z] = bytes.Replace(records[z], []byte(`"data":2`), []byte(`"data":3`), 1)
	got = e.importRecords(t, otherApp, changed)
	if got.Skipped != 1 || len(got.Conflicts) != 1 || got.Conflicts[0].Index != z || len(got.NotImported) != 1 {
		t.Errorf("the import again answered %+v, want 1 skipped, a conflict at %d and the large value left out", got, z)
	}
}

// TestExportImportRoundTrip exports an app holding key-value and list items
// of several owners (compressed values, class names, expiry, items updated
// by others, a private namespace), imports the export into another app,
// and checks that the second app holds the same items with the same ETags
// and usage, and exports the same bytes; then that a repeated import skips
// everything and a changed record is a conflict.
func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, a := range []string{app, otherApp} {
		completePolicy(t, e.now, 200, func() response { return e.do("PUT", admin+"/apps/"+a+"/namespaces/mine", `{"access":"private"}`) })
	}
	as := func(s string) []string { return []string{"X-Uds-Subject", s} }
	paths := map[string]string{} // path -> subject that reads it
	create := func(subject, path, body string) {
		e.do("POST", base+path, body, as(subject)...).expect(t, 201)
		paths[path] = subject
	}
	big := `{"data":{"text":"` + strings.Repeat("compressible ", 1000) + `"}}`
	for i := range 5 {
		create("alice", fmt.Sprintf("/kv/a%d", i), fmt.Sprintf(`{"data":{"n":%d,"x":1.50},"className":"Note"}`, i))
	}
	create("bob", "/kv/big", big)
	create("carol", "/kv/later", `{"data":[1,2,3],"ttl":3600}`)
	for i := range 30 {
		create([]string{"alice", "bob"}[i%2], fmt.Sprintf("/lists/l1/k%02d", i), fmt.Sprintf(`{"data":{"i":%d}}`, i))
	}
	for i := range 3 {
		create("carol", fmt.Sprintf("/mine/feed/p%d", i), `{"data":"private"}`)
	}
	// Updated by someone else: the owner stays the creator.
	e.do("PUT", base+"/kv/a0", `{"data":{"n":"changed"}}`, as("bob")...).expect(t, 200)
	// Gone before the export: left out.
	e.do("POST", base+"/kv/brief", `{"data":1,"ttl":1}`, as("alice")...).expect(t, 201)
	e.clock.Advance(2 * time.Second)

	etags := map[string]string{}
	for path, subject := range paths {
		etags[path] = e.do("GET", base+path, "", as(subject)...).expect(t, 200).header.Get("ETag")
	}
	owners := []string{"alice", "bob", "carol"}
	quotas := map[string]string{}
	for _, o := range owners {
		// Recompute releases what expired, so the usage is the live items'.
		e.do("POST", admin+"/apps/"+app+"/users/"+o+"/quota/recompute", "").expect(t, 200)
		quotas[o] = string(e.do("GET", admin+"/apps/"+app+"/users/"+o+"/quota", "").expect(t, 200).raw)
	}

	records := e.exportAll(t, app, 1000)
	if len(records) != len(paths) {
		t.Fatalf("exported %d records, want %d", len(records), len(paths))
	}
	for _, limit := range []int{1, 7, 36} {
		if paged := e.exportAll(t, app, limit); !slices.EqualFunc(paged, records, rawEqual) {
			t.Fatalf("pages of %d records differ from one page", limit)
		}
	}

	got := e.importRecords(t, otherApp, records[:20])
	more := e.importRecords(t, otherApp, records[20:])
	if got.Imported+more.Imported != len(records) || got.Skipped+more.Skipped+len(got.Conflicts)+len(more.Conflicts) != 0 {
		t.Fatalf("import answered %+v and %+v for %d records", got, more, len(records))
	}
	for path, subject := range paths {
		r := e.do("GET", "/rest/api/v1/data/"+otherApp+path, "", as(subject)...).expect(t, 200)
		if r.header.Get("ETag") != etags[path] {
			t.Errorf("%s: ETag %s after the import, %s before", path, r.header.Get("ETag"), etags[path])
		}
	}
	for _, o := range owners {
		q := string(e.do("GET", admin+"/apps/"+otherApp+"/users/"+o+"/quota", "").expect(t, 200).raw)
		if want := strings.ReplaceAll(quotas[o], app, otherApp); q != want {
			t.Errorf("%s's usage after the import: %s, before: %s", o, q, want)
		}
		r := e.do("POST", admin+"/apps/"+otherApp+"/users/"+o+"/quota/recompute", "").expect(t, 200)
		if !strings.Contains(string(r.raw), `"drift":{"bytes":0,"items":0,"historyBytes":0}`) {
			t.Errorf("%s: recompute after the import found drift: %s", o, r.raw)
		}
	}
	// Within an owner, records come in the owner index's order, which
	// depends on the keys, and the keys name the app: another app gives
	// the same records, not always in the same order.
	if again := e.exportAll(t, otherApp, 1000); !slices.Equal(sortedRaw(again), sortedRaw(records)) {
		t.Errorf("the imported app exports other records:\n%s\nwant\n%s", joinRaw(again), joinRaw(records))
	}
	// Back into the same app, emptied: the same bytes in the same order.
	for path, subject := range paths {
		e.do("DELETE", base+path, "", as(subject)...).expect(t, 204)
	}
	if n := len(e.exportAll(t, app, 1000)); n != 0 {
		t.Fatalf("%d records left after deleting everything", n)
	}
	if back := e.importRecords(t, app, records); back.Imported != len(records) {
		t.Fatalf("importing into the emptied app answered %+v", back)
	}
	if again := e.exportAll(t, app, 1000); !slices.EqualFunc(again, records, rawEqual) {
		t.Errorf("export, delete, import, export gave other records:\n%s\nwant\n%s", joinRaw(again), joinRaw(records))
	}

	again := e.importRecords(t, otherApp, records)
	if again.Skipped != len(records) || again.Imported != 0 || len(again.Conflicts) != 0 {
		t.Errorf("a repeated import answered %+v, want %d skipped", again, len(records))
	}
	changed := json.RawMessage(strings.Replace(string(records[0]), `"version":`, `"version":9`, 1))
	past := json.RawMessage(strings.Replace(strings.Replace(string(records[1]), `"id":"`, `"id":"new-`, 1),
		`"version":`, `"expiresAt":"2020-01-01T00:00:00.000Z","version":`, 1))
	mixed := e.importRecords(t, otherApp, []json.RawMessage{changed, past})
	if mixed.Imported != 0 || mixed.Expired != 1 || len(mixed.Conflicts) != 1 || mixed.Conflicts[0].Index != 0 || mixed.Conflicts[0].Version == 0 {
		t.Errorf("a changed and an expired record answered %+v, want one conflict (index 0, with the stored version) and one expired", mixed)
	}
	if after := e.exportAll(t, otherApp, 1000); len(after) != len(records) {
		t.Errorf("the conflict or the expired record changed the data: %d records", len(after))
	}
}

func rawEqual(a, b json.RawMessage) bool { return string(a) == string(b) }

func sortedRaw(rs []json.RawMessage) []string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	slices.Sort(s)
	return s
}

func joinRaw(rs []json.RawMessage) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, "\n")
}

// TestImportRefusesBadRecords checks that a malformed record is a 400 that
// names it and that nothing of the request is written.
func TestImportRefusesBadRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setPolicy(t, "mine", `{"access":"private"}`)
	e.do("PUT", admin+"/apps/"+app+"/namespaces/typed", `{"access":"shared","schema":{"type":"number"}}`).expect(t, 200)
	good := `{"namespace":"kv","id":"ok","owner":"alice","data":1,"createdDate":"2026-01-02T03:04:05.678Z","createdBySubject":"alice","updatedDate":"2026-01-02T03:04:05.678Z","updatedBySubject":"alice","version":1}`
	// with replaces each old with its new, in pairs.
	with := func(pairs ...string) string {
		s := good
		for i := 0; i+1 < len(pairs); i += 2 {
			s = strings.Replace(s, pairs[i], pairs[i+1], 1)
		}
		return s
	}
	for _, tc := range []struct {
		name, body string
		status     int
		error      string
	}{
		{"no records", `{"records":[]}`, 400, "Invalid records"},
		{"not JSON", `{"records":[`, 400, "Invalid body"},
		{"unknown field", `{"records":[` + with(`"version":1`, `"version":1,"app":"x"`) + `]}`, 400, "Invalid records[0]"},
		{"member name in another case", `{"records":[` + with(`"version":1`, `"Version":1`) + `]}`, 400, "Invalid records[0]"},
		{"repeated member", `{"records":[` + with(`"version":1`, `"version":1,"version":2`) + `]}`, 400, "Invalid body"},
		{"repeated member inside data", `{"records":[` + with(`"data":1`, `"data":{"n":99,"n":1}`) + `]}`, 400, "Invalid body"},
		{"version past 2^53-1", `{"records":[` + with(`"version":1`, `"version":9007199254740992`) + `]}`, 400, "Invalid records[0].version"},
		{"owner not valid UTF-8", `{"records":[` + with(`"owner":"alice"`, "\"owner\":\"al\xffce\"") + `]}`, 400, "Invalid body"},
		{"anonymous owner in a private namespace", `{"records":[` + with(`"kv"`, `"mine"`, `"owner":"alice"`, `"private":true,"owner":"anonymous"`) + `]}`, 400, "Invalid records[0].owner"},
		{"expiry past ten years", `{"records":[` + with(`"version":1`, `"version":1,"expiresAt":"2999-01-01T00:00:00Z"`) + `]}`, 400, "Invalid records[0].expiresAt"},
		{"data against the schema", `{"records":[` + with(`"kv"`, `"typed"`, `"data":1`, `"data":"one"`) + `]}`, 422, "Schema validation failed"},
		{"bad namespace", `{"records":[` + good + `,` + with(`"kv"`, `"a|b"`) + `]}`, 400, "Invalid records[1].namespace"},
		{"empty id", `{"records":[` + with(`"ok"`, `""`) + `]}`, 400, "Invalid records[0].id"},
		{"reserved sort key", `{"records":[` + with(`"id":"ok"`, `"id":"ok","sortKey":"list"`) + `]}`, 400, "Invalid records[0].sortKey"},
		{"no owner", `{"records":[` + with(`"owner":"alice"`, `"owner":""`) + `]}`, 400, "Invalid records[0].owner"},
		{"null data", `{"records":[` + with(`"data":1`, `"data":null`) + `]}`, 400, "Invalid records[0].data"},
		{"bad date", `{"records":[` + with(`"2026-01-02T03:04:05.678Z"`, `"yesterday"`) + `]}`, 400, "Invalid records[0].createdDate"},
		{"negative version", `{"records":[` + with(`"version":1`, `"version":-1`) + `]}`, 400, "Invalid records[0].version"},
		{"control character in class", `{"records":[` + with(`"data":1`, `"data":1,"className":"a\u0001"`) + `]}`, 400, "Invalid records[0].className"},
		{"repeated key", `{"records":[` + good + `,` + good + `]}`, 400, "Invalid records[1].key"},
		{"shared record in a private namespace", `{"records":[` + with(`"kv"`, `"mine"`) + `]}`, 400, "Invalid records[0].private"},
		{"private record in a shared namespace", `{"records":[` + with(`"owner"`, `"private":true,"owner"`) + `]}`, 400, "Invalid records[0].private"},
		{"data over 1 MiB", `{"records":[` + good + `,` + with(`"data":1`, `"data":"`+strings.Repeat("x", 1<<20)+`"`) + `]}`, 413, "Payload too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", admin+"/apps/"+app+"/import", tc.body).expect(t, tc.status)
			if r.body["error"] != tc.error {
				t.Errorf("error %q, want %q (%s)", r.body["error"], tc.error, r.raw)
			}
			if n := e.count(e.tables.Data) + e.count(e.tables.List); n != 0 {
				t.Errorf("a refused import wrote %d items", n)
			}
		})
	}
	t.Run("too many records", func(t *testing.T) {
		records := make([]string, 1001)
		for i := range records {
			records[i] = with(`"ok"`, fmt.Sprintf(`"r%d"`, i))
		}
		e.do("POST", admin+"/apps/"+app+"/import", `{"records":[`+strings.Join(records, ",")+`]}`).expect(t, 400)
	})
	// Clients send import bodies compressed: the limit holds for what
	// they expand to, not for the bytes that came.
	t.Run("a compressed body that expands past 6 MiB", func(t *testing.T) {
		body := `{"records":[` + with(`"data":1`, `"data":"`+strings.Repeat("x", 7<<20)+`"`) + `]}`
		status, _, raw := e.raw("POST", admin+"/apps/"+app+"/import", gzipped([]byte(body)), "Content-Encoding", "gzip", "Content-Type", "application/json")
		if status != 413 || !strings.Contains(string(raw), "an import request holds at most") {
			t.Errorf("answered %d %s, want 413 for the request's size", status, raw)
		}
	})
}

// TestExportRefusesBadCursors checks that an export cursor only continues
// the export of its own app, and that limits are checked.
func TestExportRefusesBadCursors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 3 {
		e.do("POST", base+fmt.Sprintf("/kv/k%d", i), `{"data":1}`).expect(t, 201)
	}
	r := e.do("GET", admin+"/apps/"+app+"/export?limit=1", "").expect(t, 200)
	cursor, _ := r.body["cursor"].(string)
	if cursor == "" {
		t.Fatalf("a page of 1 of 3 records has no cursor: %s", r.raw)
	}
	// One character changed in the middle of the position a real cursor
	// carries (before the dot and its MAC): a data bit, not a padding
	// bit at the end of its encoding.
	tampered := []byte(cursor)
	if i := strings.IndexByte(cursor, '.') / 2; tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}
	for _, tc := range []struct{ name, query string }{
		{"another app's cursor", "/apps/" + otherApp + "/export?cursor=" + cursor},
		{"a forged cursor", "/apps/" + app + "/export?cursor=" + strings.Repeat("A", len(cursor))},
		{"a tampered cursor", "/apps/" + app + "/export?cursor=" + string(tampered)},
		{"limit 0", "/apps/" + app + "/export?limit=0"},
		{"limit 1001", "/apps/" + app + "/export?limit=1001"},
		{"a bad app", "/apps/not-a-uuid/export"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := e.do("GET", admin+tc.query, ""); r.status != http.StatusBadRequest {
				t.Errorf("status %d, want 400: %s", r.status, r.raw)
			}
		})
	}
}

// TestImportReplacesExpiredItems checks that an item that expired but is
// still stored does not block an import of its key: it is removed (and
// released) and the record written, in one request.
func TestImportReplacesExpiredItems(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("POST", base+"/kv/brief", `{"data":"old","ttl":1}`, "X-Uds-Subject", "alice").expect(t, 201)
	e.do("POST", base+"/kv/other", `{"data":"stays"}`, "X-Uds-Subject", "alice").expect(t, 201)
	e.clock.Advance(2 * time.Second)
	record := `{"namespace":"kv","id":"brief","owner":"alice","data":"new","createdDate":"2026-01-02T03:04:05.678Z","createdBySubject":"alice","updatedDate":"2026-01-02T03:04:05.678Z","updatedBySubject":"alice","version":4}`
	got := e.importRecords(t, app, []json.RawMessage{json.RawMessage(record)})
	if got.Imported != 1 || got.Skipped != 0 || len(got.Conflicts) != 0 {
		t.Fatalf("import over an expired item answered %+v", got)
	}
	r := e.do("GET", base+"/kv/brief", "").expect(t, 200)
	if r.body["data"] != "new" || r.header.Get("ETag") == "" {
		t.Errorf("the imported item reads %s", r.raw)
	}
	q := e.do("POST", admin+"/apps/"+app+"/users/alice/quota/recompute", "").expect(t, 200)
	if !strings.Contains(string(q.raw), `"drift":{"bytes":0,"items":0,"historyBytes":0}`) || !strings.Contains(string(q.raw), `"usedItems":2`) {
		t.Errorf("alice's usage after the import: %s", q.raw)
	}
}

// TestExportNamespace checks the export of one namespace: page by page,
// at any page size and with or without kept versions, it gives exactly
// the records of the whole export whose namespace is the one, in the same
// order (key-value and list items of several owners, a private namespace,
// kept versions, a namespace whose name begins with another's); its
// cursors continue only an export of the same namespace, and a bad
// namespace is a 400 that names it.
func TestExportNamespace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.setPolicy(t, "mine", `{"access":"private"}`)
	e.setPolicy(t, "journal", `{"access":"shared","history":{"versions":3}}`)
	as := func(s string) []string { return []string{"X-Uds-Subject", s} }
	for o, owner := range []string{"alice", "bob", "carol"} {
		for i := range 2 + o {
			e.do("POST", base+fmt.Sprintf("/kv/%s-%d", owner, i), `{"data":{"n":1}}`, as(owner)...).expect(t, 201)
			e.do("POST", base+fmt.Sprintf("/kv2/%s-%d", owner, i), `{"data":{"n":2}}`, as(owner)...).expect(t, 201)
			e.do("POST", base+fmt.Sprintf("/lists/l/%s-%d", owner, i), `{"data":{"n":3}}`, as(owner)...).expect(t, 201)
			e.do("POST", base+fmt.Sprintf("/mine/feed/%s-%d", owner, i), `{"data":{"n":4}}`, as(owner)...).expect(t, 201)
			e.do("POST", base+fmt.Sprintf("/mine/%s-%d", owner, i), `{"data":{"n":5}}`, as(owner)...).expect(t, 201)
			e.do("POST", base+fmt.Sprintf("/journal/%s-%d", owner, i), `{"data":{"v":1}}`, as(owner)...).expect(t, 201)
			e.do("PUT", base+fmt.Sprintf("/journal/%s-%d", owner, i), `{"data":{"v":2}}`, as(owner)...).expect(t, 200)
		}
	}
	for _, history := range []string{"true", "false"} {
		all, _ := e.exportPages(t, app, 1000, "&history="+history)
		for _, ns := range []string{"kv", "lists", "mine", "journal", "absent"} {
			var want []json.RawMessage
			for _, r := range all {
				var rec struct{ Namespace string }
				if err := json.Unmarshal(r, &rec); err != nil {
					t.Fatal(err)
				}
				if rec.Namespace == ns {
					want = append(want, r)
				}
			}
			// Each namespace holds 2+3+4 items (mine twice: a key-value
			// item and a list item each); journal's were updated once, so
			// with history it holds as many kept versions.
			n := 9
			switch {
			case ns == "absent":
				n = 0
			case ns == "mine", ns == "journal" && history == "true":
				n = 18
			}
			if len(want) != n {
				t.Fatalf("the whole export holds %d records of %s, want %d", len(want), ns, n)
			}
			for _, limit := range []int{1, 4, 1000} {
				t.Run(fmt.Sprintf("%s, %d a page, history %s", ns, limit, history), func(t *testing.T) {
					got, sizes := e.exportPages(t, app, limit, "&history="+history+"&namespace="+ns)
					if !slices.EqualFunc(got, want, rawEqual) {
						t.Errorf("the export of %s:\n%s\nwant the whole export's records of %s:\n%s", ns, joinRaw(got), ns, joinRaw(want))
					}
					for i, n := range sizes[:len(sizes)-1] {
						if n != limit {
							t.Errorf("page %d of %v holds %d records, not the limit", i+1, sizes, n)
						}
					}
				})
			}
		}
	}

	cursorOf := func(query string) string {
		t.Helper()
		r := e.do("GET", admin+"/apps/"+app+"/export?limit=1"+query, "").expect(t, 200)
		c, _ := r.body["cursor"].(string)
		if c == "" {
			t.Fatalf("a page of 1 record (%s) has no cursor: %s", query, r.raw)
		}
		return c
	}
	whole, kv, lists := cursorOf(""), cursorOf("&namespace=kv"), cursorOf("&namespace=lists")
	for _, tc := range []struct{ name, query, field string }{
		{"the whole export's cursor, filtered", "?namespace=kv&cursor=" + whole, "cursor"},
		{"a namespace's cursor, unfiltered", "?cursor=" + kv, "cursor"},
		{"a namespace's cursor, in another", "?namespace=kv&cursor=" + lists, "cursor"},
		{"a namespace's cursor, in a namespace beginning with it", "?namespace=kv2&cursor=" + kv, "cursor"},
		{"an empty namespace", "?namespace=", "namespace"},
		{"a namespace with the delimiter", "?namespace=a%7Cb", "namespace"},
		{"a namespace with a slash", "?namespace=a%2Fb", "namespace"},
		{"a namespace with a control character", "?namespace=a%01", "namespace"},
		{"a repeated namespace", "?namespace=kv&namespace=lists", "namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("GET", admin+"/apps/"+app+"/export"+tc.query, "").expect(t, http.StatusBadRequest)
			if r.body["error"] != "Invalid "+tc.field {
				t.Errorf("error %q, want %q: %s", r.body["error"], "Invalid "+tc.field, r.raw)
			}
		})
	}
	t.Run("a namespace's cursor, in the same namespace", func(t *testing.T) {
		e.do("GET", admin+"/apps/"+app+"/export?namespace=kv&cursor="+kv, "").expect(t, http.StatusOK)
	})
}

// TestImportLeavesOutVersionsWithoutRoom imports a key's history whose
// entries, with subjects near their longest, overflow what its head can
// list, after a large value's record: the import writes the newest
// entries and leaves out the oldest, and the answer names each record
// left out by its place among those sent, the large value first, in
// order. The store decides which versions have no room
// (pkg/store's TestHistoryHeadFitsItsItem); this test holds the answer to
// the records the client sent.
func TestImportLeavesOutVersionsWithoutRoom(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"kept": `{"access":"shared","history":{"versions":100}}`})
	subject := func(role string, i int) string {
		return strings.Repeat(role, 1020) + fmt.Sprintf("%04d", i)
	}
	// One creation and deletion, exported, is the template of every
	// creator's kept version and delete marker.
	e.as(subject("c", 0), "POST", base+"/kept/template", `{"data":{"by":0}}`).expect(t, http.StatusCreated)
	e.as(subject("d", 0), "DELETE", base+"/kept/template", "").expect(t, http.StatusNoContent)
	template := e.exportAll(t, app, 1000)
	if len(template) != 2 {
		t.Fatalf("exported %d records, want the kept version and the delete marker", len(template))
	}
	start := e.now().Add(-time.Hour)
	records := []json.RawMessage{json.RawMessage(`{"namespace":"kv","id":"photo","owner":"o","large":true,"size":10,` +
		`"contentType":"application/octet-stream","createdBySubject":"o","updatedBySubject":"o","version":1}`)}
	const creators = 100
	for i := range creators {
		for j, raw := range template {
			raw = bytes.ReplaceAll(raw, []byte(subject("c", 0)), []byte(subject("c", i)))
			raw = bytes.ReplaceAll(raw, []byte(subject("d", 0)), []byte(subject("d", i)))
			var rec map[string]any
			if err := json.Unmarshal(raw, &rec); err != nil {
				t.Fatal(err)
			}
			version := 2*i + j + 1
			at := func(v int) string { return start.Add(time.Duration(v) * time.Second).Format(time.RFC3339Nano) }
			rec["id"], rec["version"], rec["createdDate"], rec["updatedDate"] = "many-hands", version, at(2*i+1), at(version)
			rec["keptAt"] = at(version + 1)
			if rec["data"] != nil {
				rec["data"] = map[string]any{"by": i}
			}
			out, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			records = append(records, out)
		}
	}
	got := e.importRecords(t, app, records)
	if len(got.NotImported) < 2 || got.Imported+len(got.NotImported) != len(records) || len(got.Conflicts) != 0 {
		t.Fatalf("import of %d records answered %d imported, %d conflicts and %d left out; want versions left out beside the large value",
			len(records), got.Imported, len(got.Conflicts), len(got.NotImported))
	}
	if l := got.NotImported[0]; l.Index != 0 || l.ID != "photo" || !strings.Contains(l.Reason, "a large value") {
		t.Errorf("first left out %+v, want record 0, the large value", l)
	}
	// Records 1 and 2 are version 1 and its delete marker, 3 and 4
	// version 3 and its marker, and so on: the oldest are left out.
	for n, l := range got.NotImported[1:] {
		if l.Index != n+1 || l.Namespace != "kept" || l.ID != "many-hands" || !strings.Contains(l.Reason, "history lists") {
			t.Errorf("left out %+v, want record %d, kept/many-hands, as older than the history lists", l, n+1)
		}
	}
	var listed []historyEntry
	for cursor := ""; ; {
		path := base + "/kept/many-hands?history&limit=100"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		entries, next := historyAnswer(t, e.do("GET", path, "").expect(t, 200))
		listed = append(listed, entries...)
		if cursor = next; cursor == "" {
			break
		}
	}
	left := len(got.NotImported) - 1
	if len(listed) != 2*creators-left || listed[0].Version != 2*creators || listed[len(listed)-1].Version != int64(left+1) {
		t.Errorf("the history lists %d entries, %s; want versions %d down to %d", len(listed), versionList(listed), 2*creators, left+1)
	}
	t.Logf("%d of %d entries imported; the oldest %d left out", len(listed), 2*creators, left)
}

// An export's page imports as it is, cursor and all, as the guide pipes
// one into an import; so does a page of a person's export, with the apps
// it lists beside the records.
func TestExportPagesImportAsTheyAre(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, id := range []string{"a", "b", "c"} {
		e.do("POST", base+"/kv/"+id, `{"data":1}`, "X-Uds-Subject", "ann").expect(t, http.StatusCreated)
	}
	for _, page := range []struct{ name, path string }{
		{"an app's export", admin + "/apps/" + app + "/export?limit=2"},
		{"a person's export", admin + "/users/ann/export?limit=2"},
	} {
		t.Run(page.name, func(t *testing.T) {
			r := e.do("GET", page.path, "").expect(t, http.StatusOK)
			if r.body["cursor"] == nil {
				t.Fatalf("the page has no cursor: %s", r.raw)
			}
			var got importAnswer
			if err := json.Unmarshal(e.do("POST", admin+"/apps/"+otherApp+"/import", string(r.raw)).expect(t, http.StatusOK).raw, &got); err != nil {
				t.Fatal(err)
			}
			if got.Imported+got.Skipped != 2 || len(got.Conflicts)+len(got.NotImported) != 0 {
				t.Errorf("the import of the page's two records answered %+v", got)
			}
		})
	}
	e.do("POST", admin+"/apps/"+otherApp+"/import", `{"records":[],"cursor":5}`).expect(t, http.StatusBadRequest)
}

// An import keeps of an item's history what the namespace's policy keeps
// where it is imported, as any write would: a namespace that keeps no
// history takes none of its versions, one that keeps fewer the newest of
// them. The others are left out, each saying why, rather than stored and
// counted in their owners' usage until the next write removes them.
func TestImportKeepsWhatTheHistoryPolicyKeeps(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"notes": `{"access":"shared","history":{"versions":5}}`})
	path := base + "/notes/n"
	e.do("POST", path, `{"data":{"v":0}}`, "X-Uds-Subject", "ann").expect(t, http.StatusCreated)
	for v := 1; v <= 3; v++ {
		e.do("PUT", path, fmt.Sprintf(`{"data":{"v":%d}}`, v), "X-Uds-Subject", "ann").expect(t, http.StatusOK)
	}
	records := e.exportAll(t, app, 1000)
	if len(records) != 4 {
		t.Fatalf("exported %d records, want the item and 3 versions", len(records))
	}
	for _, tc := range []struct {
		name, policy string
		kept         int
		says         string
	}{
		{"no history", `{"access":"shared"}`, 0, "keeps no history"},
		{"one version", `{"access":"shared","history":{"versions":1}}`, 1, "the namespace keeps 1 version;"},
		{"more than were kept", `{"access":"shared","history":{"versions":10}}`, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.do("PUT", admin+"/apps/"+otherApp+"/namespaces/notes", tc.policy).expect(t, http.StatusOK)
			got := e.importRecords(t, otherApp, records)
			if got.Imported != 1+tc.kept || len(got.NotImported) != 3-tc.kept || len(got.Conflicts) != 0 {
				t.Fatalf("import answered %+v, want the item and %d versions imported, the others left out", got, tc.kept)
			}
			for _, l := range got.NotImported {
				if !strings.Contains(l.Reason, tc.says) {
					t.Errorf("left out %+v, want it to say %q", l, tc.says)
				}
			}
			other := "/rest/api/v1/data/" + otherApp + "/notes/n"
			if tc.kept > 0 {
				entries, _ := historyAnswer(t, e.do("GET", other+"?history", "").expect(t, http.StatusOK))
				if len(entries) != 1+tc.kept {
					t.Errorf("the history lists %s, want the item and %d versions", versionList(entries), tc.kept)
				}
			}
			var usage struct{ UsedBytes, HistoryBytes int64 }
			if err := json.Unmarshal(e.do("GET", admin+"/apps/"+otherApp+"/users/ann/quota", "").expect(t, http.StatusOK).raw, &usage); err != nil {
				t.Fatal(err)
			}
			// The item and each version are of one size ({"v":N}).
			if item := usage.UsedBytes - usage.HistoryBytes; item <= 0 || usage.HistoryBytes != int64(tc.kept)*item {
				t.Errorf("ann's usage %+v: want the item and %d versions of its size", usage, tc.kept)
			}
		})
	}
	// A delete marker is left out of a namespace that keeps no history
	// too, as the versions it marks the end of are.
	e.do("PUT", admin+"/apps/"+otherApp+"/namespaces/plain", `{"access":"shared"}`).expect(t, http.StatusOK)
	r := e.do("POST", admin+"/apps/"+otherApp+"/import", `{"records":[{"namespace":"plain","id":"gone","owner":"ann","keptAt":"2026-01-01T00:00:00.000Z","version":5,"deleted":true}]}`)
	var res struct {
		Imported    int
		NotImported []struct{ Reason string }
	}
	if err := json.Unmarshal(r.raw, &res); err != nil || res.Imported != 0 || len(res.NotImported) != 1 || !strings.Contains(res.NotImported[0].Reason, "keeps no history") {
		t.Errorf("a delete marker into a namespace without history: %d %s", r.status, r.raw)
	}
}

// TestImportLeavesOutHistoryOfAnotherItem imports an item's history where
// it does not belong: into a key that holds another item (its record
// conflicts), and numbered at or above the item's own version. Each kept
// version is left out, saying why, and the history lists only the item's.
func TestImportLeavesOutHistoryOfAnotherItem(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"journal": `{"access":"shared","history":{"versions":10}}`})
	path := base + "/journal/day1"
	e.do("POST", path, `{"data":"A1"}`, "X-Uds-Subject", "alice").expect(t, http.StatusCreated)
	e.do("PUT", path, `{"data":"A2"}`, "X-Uds-Subject", "alice").expect(t, http.StatusOK)
	e.do("PUT", path, `{"data":"A3"}`, "X-Uds-Subject", "alice").expect(t, http.StatusOK)
	records := e.exportAll(t, app, 1000)
	if len(records) != 3 {
		t.Fatalf("exported %d records, want the item and 2 versions", len(records))
	}
	e.do("PUT", admin+"/apps/"+otherApp+"/namespaces/journal", `{"access":"shared","history":{"versions":10}}`).expect(t, http.StatusOK)
	other := "/rest/api/v1/data/" + otherApp + "/journal/day1"
	e.do("POST", other, `{"data":"carol's"}`, "X-Uds-Subject", "carol").expect(t, http.StatusCreated)
	got := e.importRecords(t, otherApp, records)
	if got.Imported != 0 || len(got.Conflicts) != 1 || len(got.NotImported) != 2 {
		t.Fatalf("import into a key holding another item: %+v, want its record a conflict and its 2 versions left out", got)
	}
	for _, l := range got.NotImported {
		if !strings.Contains(l.Reason, "whose record conflicted") {
			t.Errorf("left out %+v, want it to say the record conflicted", l)
		}
	}
	if entries, _ := historyAnswer(t, e.do("GET", other+"?history", "").expect(t, http.StatusOK)); versionList(entries) != "1*" {
		t.Errorf("carol's item lists %s, want only its own version 1", versionList(entries))
	}

	// A kept version numbered at or above its item's was never the
	// item's: left out, as in the request or stored before.
	forged := func(version int, kept bool) json.RawMessage {
		rec := fmt.Sprintf(`{"namespace":"journal","id":"x","owner":"ann","data":%d,"createdBySubject":"ann","updatedBySubject":"ann","version":%d`, version, version)
		if kept {
			rec += `,"keptAt":"2026-01-01T00:00:00.000Z"`
		}
		return json.RawMessage(rec + "}")
	}
	got = e.importRecords(t, otherApp, []json.RawMessage{forged(5, false), forged(7, true), forged(5, true), forged(3, true)})
	if got.Imported != 2 || len(got.NotImported) != 2 {
		t.Fatalf("an item at 5 with kept versions 7, 5 and 3: %+v, want the item and version 3 imported, 7 and 5 left out", got)
	}
	for _, l := range got.NotImported {
		if !strings.Contains(l.Reason, "the key's item is at version 5") {
			t.Errorf("left out %+v, want it to name the item's version", l)
		}
	}
	if entries, _ := historyAnswer(t, e.do("GET", "/rest/api/v1/data/"+otherApp+"/journal/x?history", "").expect(t, http.StatusOK)); versionList(entries) != "5* 3" {
		t.Errorf("x lists %s, want 5* 3", versionList(entries))
	}
}

// TestImportIntoADeletedItemsKey imports an item again where it was
// deleted since, in a namespace that keeps history: the key's history
// holds the item's kept version and delete marker, numbered up to 3, so
// the record of version 2 is left out, saying why, rather than brought
// back under a number its history used (after which every write numbered
// a version twice). Dropping the history does not free the numbers; a
// create numbers the value after them.
func TestImportIntoADeletedItemsKey(t *testing.T) {
	t.Parallel()
	e := newHistoryEnv(t, map[string]string{"hn": `{"access":"shared","history":{"versions":5}}`})
	path := base + "/hn/k"
	e.do("POST", path, `{"data":"v1"}`, "X-Uds-Subject", "alice").expect(t, http.StatusCreated)
	e.do("PUT", path, `{"data":"v2"}`, "X-Uds-Subject", "alice").expect(t, http.StatusOK)
	records := e.exportAll(t, app, 1000)
	e.do("DELETE", path, "", "X-Uds-Subject", "alice").expect(t, http.StatusNoContent)
	for _, dropped := range []bool{false, true} {
		if dropped {
			e.do("DELETE", path+"?history", "").expect(t, http.StatusOK)
		}
		got := e.importRecords(t, app, records[:1])
		if got.Imported != 0 || len(got.NotImported) != 1 || !strings.Contains(got.NotImported[0].Reason, "used the numbers up to 3") {
			t.Fatalf("history dropped %v: the item imported into its key after its delete: %+v, want it left out as numbered within its history", dropped, got)
		}
		e.do("GET", path, "").expect(t, http.StatusNotFound)
	}
	created := e.do("POST", path, `{"data":"v2"}`, "X-Uds-Subject", "alice").expect(t, http.StatusCreated)
	if created.body["version"] != json.Number("4") {
		t.Errorf("created anew at version %v, want 4", created.body["version"])
	}
}
