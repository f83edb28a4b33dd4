package store_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

const app = "d53065bd-f932-4841-83fb-849717d8df0f"

func newStore(t testing.TB, opts ...store.Option) (*store.Store, *storetest.Counter) {
	t.Helper()
	counter := storetest.NewCounter(storetest.Client(t))
	// A change into or out of private settles quickly: these tests do not
	// race writes against it.
	return store.New(counter, storetest.NewTables(t), append([]store.Option{store.WithPolicySettle(testSettle)}, opts...)...), counter
}

func key(t testing.TB, ns, id string) uds.Key {
	t.Helper()
	k, err := uds.NewKey(app, ns, id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func write(k uds.Key, data string) uds.Write {
	return uds.Write{Key: k, Data: json.RawMessage(data), Subject: "alice"}
}

func TestItemLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		sortKey string
	}{{"key-value item", ""}, {"list item", "2024-01-15T10:30:00Z/a"}} {
		t.Run(tc.name, func(t *testing.T) {
			s, counter := newStore(t)
			k := key(t, "prefs", "user123")
			k.SortKey = tc.sortKey

			if _, err := s.Get(ctx, k); !errors.Is(err, uds.ErrNotFound) {
				t.Fatalf("Get before create: %v, want ErrNotFound", err)
			}
			if _, err := s.Update(ctx, write(k, `{"a":1}`)); !errors.Is(err, uds.ErrNotFound) {
				t.Fatalf("Update before create: %v, want ErrNotFound", err)
			}
			// A request reads the namespace's policy before it writes.
			if _, err := s.Policy(ctx, app, "prefs"); err != nil {
				t.Fatal(err)
			}
			counter.Take()
			created, err := s.Create(ctx, write(k, `{"theme":"dark"}`))
			if err != nil {
				t.Fatal(err)
			}
			// One transaction of the data write and the usage change, and
			// the first write of an owner reads the limits; the first item
			// of the namespace marks it and its app in the catalogue.
			if u := counter.Take(); u.Calls["TransactWriteItems"] != 1 || u.Calls["BatchGetItem"] != 1 || u.Calls["UpdateItem"] != 2 || len(u.Calls) != 3 {
				t.Errorf("Create made calls %v, want TransactWriteItems, BatchGetItem, UpdateItem twice", u.Calls)
			}
			if created.Version != 1 || created.CreatedBy != "alice" || created.CreatedDate.IsZero() {
				t.Errorf("created = %+v", created)
			}
			if _, err := s.Create(ctx, write(k, `{}`)); !errors.Is(err, uds.ErrConflict) {
				t.Fatalf("second Create: %v, want ErrConflict", err)
			}

			w := write(k, `{"theme":"lite"}`)
			w.Subject = "bob"
			w.IfMatch = uds.Precondition{Revisions: []uds.Revision{created.Revision()}}
			// A request reads its caller's rate limits, which come with
			// what the erase guard reads of the writer.
			if _, _, err := s.RatesInEffect(ctx, app, "bob"); err != nil {
				t.Fatal(err)
			}
			counter.Take()
			updated, err := s.Update(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
			// Same size: the revision read and one UpdateItem, no usage
			// change.
			if u := counter.Take(); u.Calls["GetItem"] != 1 || u.Calls["UpdateItem"] != 1 || len(u.Calls) != 2 {
				t.Errorf("Update made calls %v, want GetItem, UpdateItem", u.Calls)
			}
			if updated.Version != 2 || updated.CreatedBy != "alice" || updated.UpdatedBy != "bob" || !updated.CreatedDate.Equal(created.CreatedDate) {
				t.Errorf("updated = %+v", updated)
			}
			// The old revision no longer matches.
			if _, err := s.Update(ctx, w); !errors.Is(err, uds.ErrPrecondition) {
				t.Fatalf("Update with stale If-Match: %v, want ErrPrecondition", err)
			}
			got, err := s.Get(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Data) != `{"theme":"lite"}` || got.Version != 2 {
				t.Errorf("Get = %s v%d", got.Data, got.Version)
			}
			if err := s.Delete(ctx, uds.Write{Key: k, IfMatch: uds.Precondition{Revisions: []uds.Revision{created.Revision()}}}); !errors.Is(err, uds.ErrPrecondition) {
				t.Fatalf("Delete with stale If-Match: %v", err)
			}
			if err := s.Delete(ctx, uds.Write{Key: k}); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, uds.Write{Key: k}); err != nil {
				t.Fatalf("second Delete: %v, want success", err)
			}
			if _, err := s.Get(ctx, k); !errors.Is(err, uds.ErrNotFound) {
				t.Fatalf("Get after delete: %v", err)
			}
		})
	}
}

// randomJSON is incompressible JSON of about n bytes.
func randomJSON(n int) string {
	b := make([]byte, n*3/4)
	_, _ = rand.Read(b)
	return `"` + base64.StdEncoding.EncodeToString(b) + `"`
}

func TestLargeValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	compressible := `{"rows":[` + strings.Repeat(`{"name":"row","value":12345,"ok":true},`, 26000) + `{}]}`
	if len(compressible) < 1000_000 {
		t.Fatalf("compressible value is only %d bytes", len(compressible))
	}
	for _, tc := range []struct {
		name string
		data string
		want error
	}{
		{"1 MB compressible JSON fits", compressible, nil},
		{"300 KB incompressible fits", randomJSON(300_000), nil},
		{"600 KB of base64 is too large even compressed", randomJSON(600_000), uds.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := key(t, "large", strings.ReplaceAll(tc.name, " ", "-"))
			_, err := s.Create(ctx, write(k, tc.data))
			if !errors.Is(err, tc.want) {
				t.Fatalf("Create: %v, want %v", err, tc.want)
			}
			if tc.want != nil {
				if _, err := s.Get(ctx, k); !errors.Is(err, uds.ErrNotFound) {
					t.Fatalf("refused write left an item behind: %v", err)
				}
				return
			}
			got, err := s.Get(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Data) != tc.data {
				t.Fatalf("value did not round-trip (%d bytes back, %d sent)", len(got.Data), len(tc.data))
			}
			// Updating with the same value keeps it readable too.
			if _, err := s.Update(ctx, write(k, tc.data)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// fillList creates n items with sort keys k0000.. and values of about size
// bytes that compress little (random base64).
func fillList(t testing.TB, s *store.Store, list uds.Key, n, size int) {
	t.Helper()
	ctx := context.Background()
	pad := strings.Trim(randomJSON(max(size-20, 0)), `"`)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			k := list
			k.SortKey = fmt.Sprintf("k%04d", i)
			if _, err := s.Create(ctx, write(k, fmt.Sprintf(`{"i":%d,"p":"%s"}`, i, pad))); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func sortKeys(items []uds.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.SortKey
	}
	return out
}

func TestListPagesJoinDynamoDBPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, counter := newStore(t)
	list := key(t, "big", "list")
	// 300 items of 10 KB (about 7.5 KB stored, gzip takes a quarter off
	// base64): 250 of them need at least two 1 MB DynamoDB query pages.
	fillList(t, s, list, 300, 10_000)
	counter.Take()
	page, err := s.ListItems(ctx, store.ListQuery{List: list, Limit: 250, MaxBytes: 5_000_000})
	if err != nil {
		t.Fatal(err)
	}
	u := counter.Take()
	if len(page.Items) != 250 || !page.More {
		t.Fatalf("page has %d items, more=%v; want 250 and more", len(page.Items), page.More)
	}
	if u.Calls["Query"] < 2 {
		t.Errorf("%d queries for about 1.9 MB; DynamoDB pages are 1 MB, so at least 2 were needed", u.Calls["Query"])
	}
	if page.Items[0].SortKey != "k0000" || page.Items[249].SortKey != "k0249" {
		t.Errorf("page spans %s..%s", page.Items[0].SortKey, page.Items[249].SortKey)
	}
	// A small byte budget ends the page early, never empty.
	page, err = s.ListItems(ctx, store.ListQuery{List: list, Limit: 100, MaxBytes: 55_000})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 5 || !page.More {
		t.Fatalf("byte-bounded page has %d items, more=%v; want 5 and more", len(page.Items), page.More)
	}
	// The last page says so.
	page, err = s.ListItems(ctx, store.ListQuery{List: list, Limit: 1000, After: "k0249"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 50 || page.More {
		t.Fatalf("last page has %d items, more=%v; want 50 and no more", len(page.Items), page.More)
	}
}

func TestDeleteList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, counter := newStore(t)
	list := key(t, "many", "list")
	fillList(t, s, list, 1000, 100)
	other := key(t, "many", "other")
	fillList(t, s, other, 3, 100)
	counter.Take()
	n, err := s.DeleteList(ctx, uds.Write{Key: list})
	if err != nil {
		t.Fatal(err)
	}
	u := counter.Take()
	if n != 1000 {
		t.Errorf("deleted %d, want 1000", n)
	}
	// 99 deletes and the owner's usage change per transaction.
	if want := (1000 + 98) / 99; u.Calls["TransactWriteItems"] != want {
		t.Errorf("%d transactions, want %d", u.Calls["TransactWriteItems"], want)
	}
	t.Logf("delete-all of 1000 items: %v, %.1f RCU, %.1f WCU", u.Calls, u.Read, u.Write)
	page, err := s.ListItems(ctx, store.ListQuery{List: list, Limit: 10})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("after DeleteList: %d items left, err %v", len(page.Items), err)
	}
	page, err = s.ListItems(ctx, store.ListQuery{List: other, Limit: 10})
	if err != nil || len(page.Items) != 3 {
		t.Fatalf("another list lost items: %d left, err %v", len(page.Items), err)
	}
	// An expired budget is reported, not swallowed.
	fillList(t, s, list, 100, 100)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.DeleteList(cancelled, uds.Write{Key: list}); !errors.Is(err, uds.ErrIncomplete) {
		t.Fatalf("DeleteList with no time left: %v, want ErrIncomplete", err)
	}
}

// A stored compressed value that expands past what UDS ever writes is
// refused after reading one byte more than the bound, not held whole.
//
// It does not run in parallel: the allocations it measures are the whole
// process's, and the package's parallel tests (the pages of 1 MB values
// above all) made a slow refusal seem to allocate 218 MB on a loaded
// machine. Go runs the parallel tests only once this one has ended.
func TestDecompressionIsBounded(t *testing.T) {
	ctx := context.Background()
	tables := storetest.NewTables(t)
	s := store.New(storetest.Client(t), tables)
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	_, _ = w.Write([]byte(`"`))
	_, _ = w.Write(bytes.Repeat([]byte("a"), 64<<20))
	_, _ = w.Write([]byte(`"`))
	_ = w.Close()
	k := key(t, "bomb", "item")
	_, err := storetest.Client(t).PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(tables.Data),
		Item: map[string]types.AttributeValue{
			"dataKey":     &types.AttributeValueMemberS{Value: k.DataKey()},
			"dataValueGz": &types.AttributeValueMemberB{Value: z.Bytes()},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	before := heapAlloc()
	_, err = s.Get(ctx, k)
	if err == nil || !strings.Contains(err.Error(), "expands past") {
		t.Fatalf("Get of a 64 MB expansion: %v, want a refusal", err)
	}
	if grew := heapAlloc() - before; grew > 16<<20 {
		t.Errorf("the refusal allocated %d MB", grew>>20)
	}
}

func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.TotalAlloc)
}

// A page of large compressible values reads about what it returns: once a
// page was cut by its byte budget, the next one reads one item more than
// that page held, not a full 1 MB DynamoDB page of compressed items.
func TestListReadsAreBoundedByThePage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, counter := newStore(t)
	list := key(t, "compressible", "list")
	value := `{"rows":[` + strings.Repeat(`{"name":"row","ok":true},`, 38_000) + `{}]}` // about 950 KB
	var wg sync.WaitGroup
	for i := range 120 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := list
			k.SortKey = fmt.Sprintf("k%03d", i)
			if _, err := s.Create(ctx, write(k, value)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	q := store.ListQuery{List: list, Limit: 100, MaxBytes: 5_000_000}
	counter.Take()
	first, err := s.ListItems(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	firstRead := counter.Take().Read
	if len(first.Items) != 5 || !first.Cut {
		t.Fatalf("first page: %d items, cut %v; want 5 cut by the byte budget", len(first.Items), first.Cut)
	}
	q.After, q.Expect = first.Items[4].SortKey, len(first.Items)
	second, err := s.ListItems(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	secondRead := counter.Take().Read
	if len(second.Items) != 5 || second.Items[0].SortKey != "k005" {
		t.Fatalf("second page: %d items from %s", len(second.Items), second.Items[0].SortKey)
	}
	t.Logf("read units: %.1f for the first page, %.1f for the second", firstRead, secondRead)
	if secondRead*4 > firstRead {
		t.Errorf("the second page read %.1f units, the first %.1f: the bound did not hold", secondRead, firstRead)
	}
}
