package client_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// historyFake serves the history calls of an item's routes as the API
// documents them (GET ?history, GET ?version=V, POST ?restore=V, DELETE
// ?history), with the usage answers' historyBytes, over items held in
// memory, and keeps the requests it received. TestHistoryRequests checks
// the client's requests and its reading of the answers against it; the
// same calls against the API itself are TestHistory's.
type historyFake struct {
	mu       sync.Mutex
	pageSize int
	items    map[string]*fakeItem // by escaped path below the base path
	requests []string             // "METHOD REQUEST-URI", and the If-Match header when sent
}

// fakeItem is an item's versions, oldest first: the last is the item as
// it stands, or its delete marker.
type fakeItem struct {
	namespace, id, sortKey string
	versions               []fakeVersion
}

type fakeVersion struct {
	version int64
	data    string // JSON; "" for a delete marker
	by      string
}

// fakeDate is when version was written in the fake.
func fakeDate(version int64) time.Time {
	return time.Date(2026, 11, 25, 10, int(version), 0, 0, time.UTC)
}

func fakeETag(version int64) string { return fmt.Sprintf(`"%d-fake"`, version) }

// newHistoryFake holds, in app's namespace n: "live", at version 3;
// "gone", deleted at version 3; and the list item list/"2024/01 x" at
// version 2. Histories come two versions a page unless the request says.
func newHistoryFake() *historyFake {
	return &historyFake{pageSize: 2, items: map[string]*fakeItem{
		"/data/" + app + "/n/live": {namespace: "n", id: "live", versions: []fakeVersion{
			{1, `{"a":1}`, "alice"}, {2, `{"a":22}`, "bob"}, {3, `{"a":333}`, "alice"},
		}},
		"/data/" + app + "/n/gone": {namespace: "n", id: "gone", versions: []fakeVersion{
			{1, `{"b":1}`, "alice"}, {2, `{"b":22}`, "alice"}, {3, "", "carol"},
		}},
		"/data/" + app + "/n/list/2024%2F01%20x": {namespace: "n", id: "list", sortKey: "2024/01 x", versions: []fakeVersion{
			{1, `"first"`, "dave"}, {2, `"second"`, "dave"},
		}},
	}}
}

func (f *historyFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seen := r.Method + " " + r.RequestURI
	if m := r.Header.Get("If-Match"); m != "" {
		seen += " " + m
	}
	f.requests = append(f.requests, seen)
	path := strings.TrimPrefix(r.URL.EscapedPath(), "/rest/api/v1")
	q := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && path == "/data/"+app+"/quota":
		fakeAnswer(w, http.StatusOK, "", map[string]any{"applicationUuid": app, "user": "alice",
			"usedBytes": 120, "historyBytes": 40, "usedItems": 2, "limitBytes": nil, "limitItems": 10})
		return
	case r.Method == http.MethodGet && path == "/admin/apps/"+app+"/users":
		fakeAnswer(w, http.StatusOK, "", map[string]any{"users": []any{
			map[string]any{"user": "alice", "bytes": 120, "historyBytes": 40, "items": 2}}})
		return
	}
	it := f.items[path]
	if it == nil {
		fakeError(w, http.StatusNotFound, "Key not found")
		return
	}
	current := it.versions[len(it.versions)-1]
	switch {
	case r.Method == http.MethodGet && q.Has("history"):
		f.history(w, it, q)
	case r.Method == http.MethodGet && q.Has("version"):
		if v, ok := it.kept(q.Get("version")); ok {
			fakeAnswer(w, http.StatusOK, fakeETag(v.version), it.json(v))
			return
		}
		fakeError(w, http.StatusNotFound, "Version not found")
	case r.Method == http.MethodPost && q.Has("restore"):
		v, ok := it.kept(q.Get("restore"))
		if !ok {
			fakeError(w, http.StatusNotFound, "Version not found")
			return
		}
		if m := r.Header.Get("If-Match"); m != "" && (current.data == "" || (m != "*" && m != fakeETag(current.version))) {
			fakeError(w, http.StatusPreconditionFailed, "Precondition failed")
			return
		}
		status := http.StatusOK
		if current.data == "" {
			status = http.StatusCreated
		}
		restored := fakeVersion{current.version + 1, v.data, "anonymous"}
		it.versions = append(it.versions, restored)
		fakeAnswer(w, status, fakeETag(restored.version), it.json(restored))
	case r.Method == http.MethodDelete && q.Has("history"):
		removed := 0
		for _, v := range it.versions[:len(it.versions)-1] {
			if v.data != "" {
				removed++
			}
		}
		it.versions = it.versions[len(it.versions)-1:]
		if current.data == "" {
			delete(f.items, path)
		}
		fakeAnswer(w, http.StatusOK, "", map[string]any{"removed": removed})
	default:
		fakeError(w, http.StatusBadRequest, "Invalid query")
	}
}

// history answers a page of it's versions, newest first; the cursor is
// the place of the page's first version in that order.
func (f *historyFake) history(w http.ResponseWriter, it *fakeItem, q url.Values) {
	from, limit := 0, f.pageSize
	var err error
	if c := q.Get("cursor"); c != "" {
		if from, err = strconv.Atoi(c); err != nil {
			fakeError(w, http.StatusBadRequest, "Invalid cursor")
			return
		}
	}
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > 1000 {
			fakeError(w, http.StatusBadRequest, "Invalid limit")
			return
		}
	}
	var page []any
	n := len(it.versions)
	for i := from; i < n && i < from+limit; i++ {
		v := it.versions[n-1-i]
		entry := map[string]any{"version": v.version, "updatedDate": fakeDate(v.version).Format("2006-01-02T15:04:05.000Z"),
			"updatedBySubject": v.by, "size": len(v.data)}
		if v.data == "" {
			entry["deleted"] = true
		}
		if i == 0 {
			entry["current"] = true
		}
		page = append(page, entry)
	}
	body := map[string]any{"versions": page}
	if from+limit < n {
		body["cursor"] = strconv.Itoa(from + limit)
	}
	fakeAnswer(w, http.StatusOK, "", body)
}

// kept finds the version that the query's value names, if it holds data.
func (it *fakeItem) kept(value string) (fakeVersion, bool) {
	n, err := strconv.ParseInt(value, 10, 64)
	for _, v := range it.versions {
		if err == nil && v.version == n && v.data != "" {
			return v, true
		}
	}
	return fakeVersion{}, false
}

// json is version v of the item as the API answers an item.
func (it *fakeItem) json(v fakeVersion) map[string]any {
	body := map[string]any{"applicationUuid": app, "namespace": it.namespace, "id": it.id,
		"data": json.RawMessage(v.data), "version": v.version,
		"updatedDate": fakeDate(v.version).Format("2006-01-02T15:04:05.000Z"), "updatedBySubject": v.by}
	if it.sortKey != "" {
		body["sortKey"] = it.sortKey
	}
	return body
}

func fakeAnswer(w http.ResponseWriter, status int, etag string, body any) {
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func fakeError(w http.ResponseWriter, status int, message string) {
	fakeAnswer(w, status, "", map[string]any{"error": message, "timestamp": "2026-11-25T10:00:00.000Z"})
}
