package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

var testIndexes = []uds.Index{
	{Name: "byStatus", Path: "/status", Type: uds.IndexString},
	{Name: "byRank", Path: "/meta/rank", Type: uds.IndexNumber},
}

// declare sets ns's indexes and builds them until they are ready.
func declare(t testing.TB, s *store.Store, ns string, indexes []uds.Index) uds.Policy {
	t.Helper()
	ctx := context.Background()
	if _, err := s.SetPolicy(ctx, app, ns, uds.Policy{Indexes: indexes}); err != nil {
		t.Fatal(err)
	}
	return storetest.BuildIndexes(t, s, app, ns)
}

func indexNamed(p uds.Policy, name string) uds.Index {
	for _, ix := range p.Indexes {
		if ix.Name == name {
			return ix
		}
	}
	return uds.Index{}
}

// queryIDs runs q to its end, page by page, and lists the ids (and sort
// keys) found.
func queryIDs(t *testing.T, s *store.Store, q store.IndexQuery) string {
	t.Helper()
	var ids []string
	for range 100 {
		page, err := s.QueryIndex(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			id := it.ID
			if it.SortKey != "" {
				id += "/" + it.SortKey
			}
			ids = append(ids, id)
		}
		if page.Cursor == "" {
			return strings.Join(ids, " ")
		}
		q.Cursor = page.Cursor
	}
	t.Fatal("the query did not end")
	return ""
}

func str(s string) *uds.IndexValue  { return &uds.IndexValue{Str: s} }
func num(f float64) *uds.IndexValue { return &uds.IndexValue{Num: f} }

// Items stored before the indexes were declared are built into them,
// items written after join them in the write's transaction, and queries
// select and order by the value, then the key, in pages of any size.
func TestIndexQueries(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := context.Background()
	ns := "tasks"
	write := func(id, data string, ixs []uds.Index) {
		t.Helper()
		w := uds.Write{Key: key(t, ns, id), Data: json.RawMessage(data), Subject: "alice", Indexes: ixs}
		if _, err := s.Create(ctx, w); errors.Is(err, uds.ErrConflict) {
			_, err = s.Update(ctx, w)
			if err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
	}
	// Before: no indexes.
	write("a", `{"status":"open","meta":{"rank":3}}`, nil)
	write("b", `{"status":"done","meta":{"rank":-1.5}}`, nil)
	write("c", `{"status":"open","meta":{"rank":10}}`, nil)
	write("d", `{"status":7,"meta":{"rank":"x"}}`, nil) // in neither index
	p := declare(t, s, ns, testIndexes)
	// After: the writes keep the entries.
	write("e", `{"status":"opening","meta":{"rank":0}}`, p.Indexes)
	write("f", `{"status":"open"}`, p.Indexes)
	write("b", `{"status":"open","meta":{"rank":2}}`, p.Indexes) // moves in both
	list := key(t, ns, "l")
	for _, sk := range []string{"x", "y"} {
		lk, _ := list.WithSortKey(sk)
		if _, err := s.Create(ctx, uds.Write{Key: lk, Data: json.RawMessage(`{"status":"open","meta":{"rank":5}}`), Subject: "bob", Indexes: p.Indexes}); err != nil {
			t.Fatal(err)
		}
	}
	status, rank := indexNamed(p, "byStatus"), indexNamed(p, "byRank")
	if !status.Ready || status.Done != 3 || rank.Done != 3 {
		t.Fatalf("indexes after the build: %+v", p.Indexes)
	}
	for _, tc := range []struct {
		name string
		q    store.IndexQuery
		want string
	}{
		{"eq", store.IndexQuery{Index: status, Eq: str("open")}, "a b c f l/x l/y"},
		{"eq desc", store.IndexQuery{Index: status, Eq: str("open"), Descending: true}, "l/y l/x f c b a"},
		{"prefix", store.IndexQuery{Index: status, Prefix: str("open")}, "a b c f l/x l/y e"},
		{"prefix none", store.IndexQuery{Index: status, Prefix: str("opf")}, ""},
		{"eq missing", store.IndexQuery{Index: status, Eq: str("done")}, ""},
		{"numbers in order", store.IndexQuery{Index: rank}, "e b a l/x l/y c"},
		{"number range", store.IndexQuery{Index: rank, From: num(2), To: num(5)}, "b a"},
		{"number from", store.IndexQuery{Index: rank, From: num(5)}, "l/x l/y c"},
		{"number to desc", store.IndexQuery{Index: rank, To: num(3), Descending: true}, "b e"},
		{"number eq", store.IndexQuery{Index: rank, Eq: num(5)}, "l/x l/y"},
		{"empty range", store.IndexQuery{Index: rank, From: num(5), To: num(5)}, ""},
		{"string range", store.IndexQuery{Index: status, From: str("o"), To: str("opening")}, "a b c f l/x l/y"},
		{"empty prefix", store.IndexQuery{Index: status, Prefix: str("")}, "a b c f l/x l/y e"},
		{"from empty", store.IndexQuery{Index: status, From: str("")}, "a b c f l/x l/y e"},
		{"to empty", store.IndexQuery{Index: status, To: str("")}, ""},
		{"from empty to", store.IndexQuery{Index: status, From: str(""), To: str("opening")}, "a b c f l/x l/y"},
		{"eq empty", store.IndexQuery{Index: status, Eq: str("")}, ""},
	} {
		for _, limit := range []int{1, 2, 100} {
			t.Run(fmt.Sprintf("%s limit %d", tc.name, limit), func(t *testing.T) {
				q := tc.q
				q.App, q.Namespace, q.Limit = app, ns, limit
				if got := queryIDs(t, s, q); got != tc.want {
					t.Errorf("got %q, want %q", got, tc.want)
				}
				// A byte budget every item passes ends each page after
				// its first item.
				q.MaxBytes = 1
				if got := queryIDs(t, s, q); got != tc.want {
					t.Errorf("got %q, want %q", got, tc.want)
				}
			})
		}
	}
	// A delete and an update that leaves the index are seen at once.
	if err := s.Delete(ctx, uds.Write{Key: key(t, ns, "a"), Subject: "alice", Indexes: p.Indexes}); err != nil {
		t.Fatal(err)
	}
	write("c", `{"status":"closed"}`, p.Indexes)
	q := store.IndexQuery{App: app, Namespace: ns, Index: status, Eq: str("open"), Limit: 10}
	if got := queryIDs(t, s, q); got != "b f l/x l/y" {
		t.Errorf("after a delete and an update: %q", got)
	}
	q.Cursor = "AAAA"
	if _, err := s.QueryIndex(ctx, q); !errors.Is(err, uds.ErrInvalid) {
		t.Errorf("a cursor of another query: %v", err)
	}
}

// countEntries counts the entries the index table holds.
func countEntries(t *testing.T, tables store.Tables) int32 {
	t.Helper()
	out, err := storetest.Client(t).Scan(context.Background(), &dynamodb.ScanInput{
		TableName: aws.String(tables.Index), Select: types.SelectCount, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Count
}

// Expiry removes an item's entries with it: when UDS removes the expired
// item itself, in the same transaction, and when DynamoDB's TTL did, from
// the stream's old image.
func TestIndexEntriesExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := &storetest.Clock{}
	tables := storetest.NewTables(t)
	s := store.New(storetest.Client(t), tables, store.WithPolicySettle(testSettle), store.WithClock(clock.Now))
	p := declare(t, s, "tasks", testIndexes)
	data := json.RawMessage(`{"status":"open","meta":{"rank":1}}`)
	for _, id := range []string{"swept", "ttl"} {
		w := uds.Write{Key: key(t, "tasks", id), Data: data, Subject: "alice", Indexes: p.Indexes, ExpiresAt: clock.Now().Add(time.Hour)}
		if _, err := s.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if n := countEntries(t, tables); n != 4 {
		t.Fatalf("%d entries for two items in two indexes", n)
	}
	// DynamoDB's TTL removes one: the stream's old image names its entries.
	plain := storetest.Client(t)
	out, err := plain.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tables.Data),
		Key:          map[string]types.AttributeValue{"dataKey": &types.AttributeValueMemberS{Value: key(t, "tasks", "ttl").DataKey()}},
		ReturnValues: types.ReturnValueAllOld})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	if _, err := s.ReleaseRemoved(ctx, out.Attributes, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if n := countEntries(t, tables); n != 2 {
		t.Fatalf("%d entries after the TTL removed an item, want 2", n)
	}
	// The other expired one is swept, as the local server does.
	if n, err := s.SweepExpired(ctx); err != nil || n != 1 {
		t.Fatalf("swept %d, %v", n, err)
	}
	if n := countEntries(t, tables); n != 0 {
		t.Fatalf("%d entries after the sweep, want 0", n)
	}
}

// An entry whose item is gone, or holds another value, is left out of the
// answer and removed; a page that meets only such entries reads on.
func TestIndexSkipsStaleEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tables := storetest.NewTables(t)
	s := store.New(storetest.Client(t), tables, store.WithPolicySettle(testSettle))
	p := declare(t, s, "tasks", testIndexes[:1])
	for i := range 6 {
		w := uds.Write{Key: key(t, "tasks", fmt.Sprint(i)), Data: json.RawMessage(`{"status":"open"}`), Subject: "alice", Indexes: p.Indexes}
		if _, err := s.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	// Items 0 to 3 change behind the index's back, as a build that met
	// their writes or DynamoDB's TTL would leave them: two go, two change.
	plain := storetest.Client(t)
	for i, change := range []string{"delete", "delete", `{"status":"closed"}`, `{"status":"opened"}`} {
		k := map[string]types.AttributeValue{"dataKey": &types.AttributeValueMemberS{Value: key(t, "tasks", fmt.Sprint(i)).DataKey()}}
		var err error
		if change == "delete" {
			_, err = plain.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tables.Data), Key: k})
		} else {
			_, err = plain.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tables.Data), Key: k,
				UpdateExpression:          aws.String("SET dataValue = :v"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: change}}})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	q := store.IndexQuery{App: app, Namespace: "tasks", Index: p.Indexes[0], Eq: str("open"), Limit: 2}
	page, err := s.QueryIndex(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) != 2 || page.Items[0].ID != "4" || page.Items[1].ID != "5" || page.Cursor != "" {
		t.Fatalf("first page %+v, cursor %q: want items 4 and 5, the last page", page.Items, page.Cursor)
	}
	if n := countEntries(t, tables); n != 2 {
		t.Errorf("%d entries left, want the 2 of items 4 and 5", n)
	}
}
