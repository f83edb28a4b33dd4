package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// keepHistory sets namespace's policy in app to shared access, no schema,
// and up to versions kept versions of each item, through the admin route.
func keepHistory(t *testing.T, endpoint, namespace string, versions int) {
	t.Helper()
	body := fmt.Sprintf(`{"access":"shared","history":{"versions":%d}}`, versions)
	req, err := http.NewRequest(http.MethodPut, endpoint+"/rest/api/v1/admin/apps/"+app+"/namespaces/"+namespace, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("setting %s's history policy answered %d", namespace, res.StatusCode)
	}
}

// collectHistory reads k's whole history.
func collectHistory(ctx context.Context, c *client.Client, k client.Key) ([]client.Version, error) {
	var out []client.Version
	for v, err := range c.History(ctx, k) {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// keptBytes adds up the sizes of the versions of h that are neither the
// current one nor delete markers: what the owner's historyBytes holds of
// them.
func keptBytes(h []client.Version) (n int, bytes int64) {
	for _, v := range h {
		if !v.Current && !v.Deleted {
			n, bytes = n+1, bytes+v.Size
		}
	}
	return n, bytes
}

func versionNumbers(h []client.Version) []int64 {
	var out []int64
	for _, v := range h {
		out = append(out, v.Version)
	}
	return out
}

func TestHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := apitest.Server(t, 10*time.Second)
	keepHistory(t, url, "hist", 10)
	admin := newClient(t, url)
	for _, tc := range []struct {
		owner string
		key   client.Key
	}{
		{"alice", client.Key{App: app, Namespace: "hist", ID: "doc 1"}},
		{"bob", client.Key{App: app, Namespace: "hist", ID: "feed", SortKey: "2024/01/15 ümlaut?#%"}},
	} {
		t.Run(tc.owner, func(t *testing.T) {
			c := newClient(t, url, client.WithSubject(tc.owner))
			key := tc.key
			var written []client.Item
			for i := 1; i <= 3; i++ {
				var it client.Item
				var err error
				if i == 1 {
					it, err = c.Create(ctx, key, map[string]int{"n": i})
				} else {
					it, err = c.Update(ctx, key, map[string]int{"n": i}, client.IfMatch(written[i-2].ETag))
				}
				if err != nil {
					t.Fatal(err)
				}
				written = append(written, it)
			}

			h, err := collectHistory(ctx, c, key)
			if err != nil || !reflect.DeepEqual(versionNumbers(h), []int64{3, 2, 1}) {
				t.Fatalf("history %+v, %v; want versions 3, 2, 1", h, err)
			}
			for i, v := range h {
				if v.Current != (i == 0) || v.Deleted || v.Size <= 0 || v.UpdatedBySubject != tc.owner || !v.UpdatedDate.Equal(written[2-i].UpdatedDate) {
					t.Errorf("history entry %d: %+v, written as %+v", i, v, written[2-i])
				}
			}
			page, cursor, err := c.HistoryPage(ctx, key, "", 2)
			if err != nil || !reflect.DeepEqual(page, h[:2]) || cursor == "" {
				t.Fatalf("a first page of 2: %+v, cursor %q, %v", page, cursor, err)
			}
			if page, cursor, err := c.HistoryPage(ctx, key, cursor, 2); err != nil || !reflect.DeepEqual(page, h[2:]) || cursor != "" {
				t.Errorf("the second page: %+v, cursor %q, %v; want version 1 and no cursor", page, cursor, err)
			}

			for _, want := range written {
				got, err := c.GetVersion(ctx, key, want.Version)
				if err != nil || string(got.Data) != string(want.Data) || got.Version != want.Version || got.ETag != want.ETag || got.SortKey != key.SortKey {
					t.Errorf("version %d read back as %+v, %v; written as %+v", want.Version, got, err, want)
				}
			}
			if _, err := c.GetVersion(ctx, key, 9); !errors.Is(err, client.ErrNotFound) {
				t.Errorf("a version never written: %v, want ErrNotFound", err)
			}

			if _, err := c.Restore(ctx, key, 1, client.IfMatch(written[1].ETag)); !errors.Is(err, client.ErrPreconditionFailed) {
				t.Errorf("a restore at a stale ETag: %v, want ErrPreconditionFailed", err)
			}
			if _, err := c.Restore(ctx, key, 9); !errors.Is(err, client.ErrNotFound) {
				t.Errorf("a restore of a version never written: %v, want ErrNotFound", err)
			}
			restored, err := c.Restore(ctx, key, 1, client.IfMatch(written[2].ETag))
			if err != nil || restored.Version != 4 || string(restored.Data) != `{"n":1}` || restored.ETag == "" {
				t.Fatalf("restoring version 1: %+v, %v; want version 4 with its data", restored, err)
			}
			if got, err := c.Get(ctx, key); err != nil || got.ETag != restored.ETag {
				t.Errorf("the item after the restore: %+v, %v; want %+v", got, err, restored)
			}

			if err := c.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
			h, err = collectHistory(ctx, c, key)
			if err != nil || len(h) != 5 || !h[0].Current || !h[0].Deleted || h[0].Size != 0 || h[1].Version != 4 || h[1].Current {
				t.Fatalf("history after a delete: %+v, %v; want the delete marker above versions 4 to 1", h, err)
			}
			undone, err := c.Restore(ctx, key, 2)
			if err != nil || undone.Version <= h[0].Version || string(undone.Data) != `{"n":2}` {
				t.Fatalf("restoring version 2 of the deleted item: %+v, %v", undone, err)
			}

			h, err = collectHistory(ctx, c, key)
			if err != nil {
				t.Fatal(err)
			}
			kept, bytes := keptBytes(h)
			if kept != 4 || bytes <= 0 {
				t.Fatalf("history %+v: %d versions kept, want 4", h, kept)
			}
			q, err := c.Quota(ctx, app)
			if err != nil || q.HistoryBytes != bytes || q.UsedBytes <= bytes || q.UsedItems != 1 {
				t.Errorf("quota %+v, %v; want historyBytes %d, the sizes of the kept versions, within usedBytes", q, err, bytes)
			}
			var row client.UserUsage
			for u, err := range admin.AppUsers(ctx, app) {
				if err != nil {
					t.Fatal(err)
				}
				if u.User == tc.owner {
					row = u
				}
			}
			if row.HistoryBytes != bytes || row.Bytes != q.UsedBytes {
				t.Errorf("%s's usage row %+v, want historyBytes %d", tc.owner, row, bytes)
			}

			removed, err := c.DropHistory(ctx, key)
			if err != nil || removed != kept {
				t.Errorf("dropping the history: %d removed, %v; want %d", removed, err, kept)
			}
			if h, err := collectHistory(ctx, c, key); err != nil || len(h) != 1 || !h[0].Current || h[0].Version != undone.Version {
				t.Errorf("history after dropping it: %+v, %v; want the item alone", h, err)
			}
			if q, err := c.Quota(ctx, app); err != nil || q.HistoryBytes != 0 {
				t.Errorf("quota after dropping the history: %+v, %v; want historyBytes 0", q, err)
			}
		})
	}
	t.Run("nothing there", func(t *testing.T) {
		if _, err := collectHistory(ctx, admin, client.Key{App: app, Namespace: "hist", ID: "never"}); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("the history of a key never written: %v, want ErrNotFound", err)
		}
	})
	t.Run("a namespace without history", func(t *testing.T) {
		key := client.Key{App: app, Namespace: "plain", ID: "doc"}
		it, err := admin.Create(ctx, key, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Update(ctx, key, 2, client.IfMatch(it.ETag)); err != nil {
			t.Fatal(err)
		}
		if h, err := collectHistory(ctx, admin, key); err != nil || !reflect.DeepEqual(versionNumbers(h), []int64{2}) {
			t.Errorf("history %+v, %v; want the current version alone", h, err)
		}
		if _, err := admin.GetVersion(ctx, key, 1); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("the replaced version: %v, want ErrNotFound", err)
		}
	})
}

// TestHistoryRequests checks the requests the history calls send and how
// their answers read, against historyFake.
func TestHistoryRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const base = "/rest/api/v1/data/" + app + "/n/"
	live := client.Key{App: app, Namespace: "n", ID: "live"}
	gone := client.Key{App: app, Namespace: "n", ID: "gone"}
	listItem := client.Key{App: app, Namespace: "n", ID: "list", SortKey: "2024/01 x"}
	version := func(v int64, by string, size int64, deleted, current bool) client.Version {
		return client.Version{Version: v, UpdatedDate: fakeDate(v), UpdatedBySubject: by, Size: size, Deleted: deleted, Current: current}
	}
	item := func(id string, v int64, data, by string) client.Item {
		return client.Item{ApplicationUUID: app, Namespace: "n", ID: id, Data: json.RawMessage(data),
			Version: v, UpdatedDate: fakeDate(v), UpdatedBySubject: by, ETag: fakeETag(v)}
	}
	type page struct {
		Versions []client.Version
		Cursor   string
	}
	limitItems := int64(10)
	for _, tc := range []struct {
		name     string
		call     func(c *client.Client) (any, error)
		want     any // when err is nil
		err      error
		requests []string
	}{
		{"the whole history, page after page", func(c *client.Client) (any, error) { return collectHistory(ctx, c, live) },
			[]client.Version{version(3, "alice", 9, false, true), version(2, "bob", 8, false, false), version(1, "alice", 7, false, false)}, nil,
			[]string{"GET " + base + "live?history", "GET " + base + "live?cursor=2&history"}},
		{"a deleted item's history", func(c *client.Client) (any, error) { return collectHistory(ctx, c, gone) },
			[]client.Version{version(3, "carol", 0, true, true), version(2, "alice", 8, false, false), version(1, "alice", 7, false, false)}, nil,
			[]string{"GET " + base + "gone?history", "GET " + base + "gone?cursor=2&history"}},
		{"a page of a list item's history", func(c *client.Client) (any, error) {
			v, cursor, err := c.HistoryPage(ctx, listItem, "", 1)
			return page{v, cursor}, err
		}, page{[]client.Version{version(2, "dave", 8, false, true)}, "1"}, nil,
			[]string{"GET " + base + "list/2024%2F01%20x?history&limit=1"}},
		{"the history of nothing", func(c *client.Client) (any, error) {
			return collectHistory(ctx, c, client.Key{App: app, Namespace: "n", ID: "none"})
		},
			nil, client.ErrNotFound, []string{"GET " + base + "none?history"}},
		{"a kept version", func(c *client.Client) (any, error) { return c.GetVersion(ctx, live, 2) },
			item("live", 2, `{"a":22}`, "bob"), nil, []string{"GET " + base + "live?version=2"}},
		{"a delete marker, which is no version to read", func(c *client.Client) (any, error) { return c.GetVersion(ctx, gone, 3) },
			nil, client.ErrNotFound, []string{"GET " + base + "gone?version=3"}},
		{"a restore at the current revision, without the options it does not take", func(c *client.Client) (any, error) {
			return c.Restore(ctx, live, 1, client.IfMatch(fakeETag(3)), client.IfNoneMatch(fakeETag(1)), client.ClassName("Ignored"))
		}, item("live", 4, `{"a":1}`, "anonymous"), nil, []string{"POST " + base + `live?restore=1 "3-fake"`}},
		{"a restore at a stale revision", func(c *client.Client) (any, error) { return c.Restore(ctx, live, 1, client.IfMatch(fakeETag(2))) },
			nil, client.ErrPreconditionFailed, []string{"POST " + base + `live?restore=1 "2-fake"`}},
		{"a restore of a version not kept", func(c *client.Client) (any, error) { return c.Restore(ctx, live, 10) },
			nil, client.ErrNotFound, []string{"POST " + base + "live?restore=10"}},
		{"undoing a delete (201)", func(c *client.Client) (any, error) { return c.Restore(ctx, gone, 2) },
			item("gone", 4, `{"b":22}`, "anonymous"), nil, []string{"POST " + base + "gone?restore=2"}},
		{"dropping the history", func(c *client.Client) (any, error) { return c.DropHistory(ctx, live) },
			2, nil, []string{"DELETE " + base + "live?history"}},
		{"the caller's quota", func(c *client.Client) (any, error) { return c.Quota(ctx, app) },
			client.Quota{ApplicationUUID: app, User: "alice", UsedBytes: 120, UsedItems: 2, HistoryBytes: 40, LimitItems: &limitItems}, nil,
			[]string{"GET /rest/api/v1/data/" + app + "/quota"}},
		{"an app's users", func(c *client.Client) (any, error) {
			users, _, err := c.AppUsersPage(ctx, app, "", 0)
			return users, err
		}, []client.UserUsage{{User: "alice", Bytes: 120, HistoryBytes: 40, Items: 2}}, nil,
			[]string{"GET /rest/api/v1/admin/apps/" + app + "/users"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newHistoryFake()
			srv := httptest.NewServer(fake)
			defer srv.Close()
			got, err := tc.call(newClient(t, srv.URL))
			switch {
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Errorf("%v, want %v", err, tc.err)
			case tc.err == nil && (err != nil || !reflect.DeepEqual(got, tc.want)):
				t.Errorf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
			if !reflect.DeepEqual(fake.requests, tc.requests) {
				t.Errorf("requests %q, want %q", fake.requests, tc.requests)
			}
		})
	}
}

// Batches read kept versions and restore them: one by one, each slot as
// its route answers, and atomic, all or none with the other writes.
func TestHistoryInBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := apitest.Server(t, 10*time.Second)
	keepHistory(t, url, "hist", 10)
	c := newClient(t, url, client.WithSubject("alice"))
	key := client.Key{App: app, Namespace: "hist", ID: "doc?#1"}
	first, err := c.Create(ctx, key, "one")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Update(ctx, key, "two"); err != nil {
		t.Fatal(err)
	}
	rs, err := c.Batch(ctx, app, false, []client.BatchOp{
		client.ReadVersion(key, 1),
		client.ReadVersion(key, 1, client.IfNoneMatch(first.ETag)),
		client.RestoreVersion(key, 1, client.IfMatch(first.ETag)),
		client.ReadVersion(key, 7),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := []int{rs[0].Status, rs[1].Status, rs[2].Status, rs[3].Status}; !reflect.DeepEqual(got, []int{200, 304, 412, 404}) {
		t.Fatalf("statuses %v, want 200 304 412 404", got)
	}
	if it, err := rs[0].Item(); err != nil || string(it.Data) != `"one"` || it.ETag != first.ETag {
		t.Errorf("version 1 read in a batch: %+v, %v", it, err)
	}
	if err := c.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	other := client.Key{App: app, Namespace: "hist", ID: "other"}
	rs, err = c.Batch(ctx, app, true, []client.BatchOp{client.RestoreVersion(key, 2), {Method: "POST", Key: other, Data: 1}})
	if err != nil || len(rs) != 2 || rs[0].Status != 201 || rs[1].Status != 201 {
		t.Fatalf("an atomic batch restoring a deleted item: %+v, %v", rs, err)
	}
	if got, err := c.Get(ctx, key); err != nil || string(got.Data) != `"two"` {
		t.Errorf("the item after the atomic restore: %+v, %v", got, err)
	}
	var apiErr *client.APIError
	_, err = c.Batch(ctx, app, true, []client.BatchOp{{Method: "POST", Key: client.Key{App: app, Namespace: "hist", ID: "never"}, Data: 1}, client.RestoreVersion(other, 5)})
	if !errors.Is(err, client.ErrNotFound) || !errors.As(err, &apiErr) || apiErr.FailedIndex == nil || *apiErr.FailedIndex != 1 {
		t.Fatalf("an atomic batch restoring a version not kept: %v, want ErrNotFound naming operation 1", err)
	}
	if _, err := c.Get(ctx, client.Key{App: app, Namespace: "hist", ID: "never"}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("the refused atomic batch wrote its create: %v", err)
	}
}
