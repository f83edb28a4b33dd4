package storetest

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// IndexedKeys lists the keys of the items of a namespace that index ix
// holds at now: stored, not expired, with a value of the index's type at
// its path. They are in the index's order: by value (numbers by size,
// strings by their bytes), then by id and sort key. It reads the data
// tables with strongly consistent scans, not the index, so that a test
// can hold a query's answer against it. With owner set (a private
// namespace) only that owner's items are listed.
//
// A key too long to fit an entry's sort key beside its value is ordered
// there by a digest past the part that fits; this order does not know
// that, so a test of such keys compares sets.
func IndexedKeys(t testing.TB, c *dynamodb.Client, tables store.Tables, app, namespace string, ix uds.Index, owner string, now time.Time) []uds.Key {
	t.Helper()
	type indexed struct {
		key   uds.Key
		value uds.IndexValue
	}
	var found []indexed
	prefix := app + uds.KeyDelimiter + namespace + uds.KeyDelimiter
	for _, table := range []string{tables.Data, tables.List} {
		Scan(t, c, table, func(av map[string]types.AttributeValue) {
			key, ok := itemKey(av)
			if !ok || !strings.HasPrefix(stringAttr(av, schema.AttrDataKey), prefix) || key.Owner != owner {
				return
			}
			if ms, ok := av[schema.AttrExpiresAtMillis]; ok && number(ms) <= now.UnixMilli() {
				return
			}
			if v, ok := ix.ValueOf(storedValue(t, av)); ok {
				found = append(found, indexed{key, v})
			}
		})
	}
	slices.SortFunc(found, func(a, b indexed) int {
		c := cmp.Compare(a.value.Num, b.value.Num)
		if ix.Type == uds.IndexString {
			c = strings.Compare(a.value.Str, b.value.Str)
		}
		return cmp.Or(c, strings.Compare(a.key.ID, b.key.ID), strings.Compare(a.key.SortKey, b.key.SortKey))
	})
	keys := make([]uds.Key, len(found))
	for i, f := range found {
		keys[i] = f.key
	}
	return keys
}

// IndexEntry is one entry of the index table as a scan finds it: its
// partition and the key of the item it leads to.
type IndexEntry struct {
	Partition string
	Key       uds.Key
}

// IndexEntries lists the entries of the index with the given ID (a
// uds.Index's ID, which the namespace's policy shows) of a namespace,
// scanning the index table strongly consistent. It includes the entries
// that no longer match their items, which queries skip.
func IndexEntries(t testing.TB, c *dynamodb.Client, tables store.Tables, app, namespace, id string) []IndexEntry {
	t.Helper()
	prefix := app + uds.KeyDelimiter + namespace + uds.KeyDelimiter + id + uds.KeyDelimiter
	var out []IndexEntry
	Scan(t, c, tables.Index, func(av map[string]types.AttributeValue) {
		if p := stringAttr(av, schema.AttrIndexKey); strings.HasPrefix(p, prefix) {
			key, _ := itemKey(av)
			out = append(out, IndexEntry{Partition: p, Key: key})
		}
	})
	return out
}

// Scan hands every item of table to each, strongly consistent, page by
// page.
func Scan(t testing.TB, c *dynamodb.Client, table string, each func(map[string]types.AttributeValue)) {
	t.Helper()
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)}
	for {
		out, err := c.Scan(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, av := range out.Items {
			each(av)
		}
		if out.LastEvaluatedKey == nil {
			return
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// itemKey reads the key an item (or an index entry) names: the dataKey
// is the app, namespace and id, and in a private namespace the owner.
func itemKey(av map[string]types.AttributeValue) (uds.Key, bool) {
	parts := strings.SplitN(stringAttr(av, schema.AttrDataKey), uds.KeyDelimiter, 4)
	if len(parts) < 3 {
		return uds.Key{}, false
	}
	k := uds.Key{App: parts[0], Namespace: parts[1], ID: parts[2], SortKey: stringAttr(av, schema.AttrSortKey)}
	if len(parts) == 4 {
		k.Owner = parts[3]
	}
	return k, true
}

// storedValue is an item's JSON value, inflated when it is stored
// compressed.
func storedValue(t testing.TB, av map[string]types.AttributeValue) json.RawMessage {
	t.Helper()
	z, ok := av[schema.AttrDataValueGzip].(*types.AttributeValueMemberB)
	if !ok {
		return json.RawMessage(stringAttr(av, schema.AttrDataValue))
	}
	r, err := gzip.NewReader(bytes.NewReader(z.Value))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func stringAttr(av map[string]types.AttributeValue, name string) string {
	s, _ := av[name].(*types.AttributeValueMemberS)
	if s == nil {
		return ""
	}
	return s.Value
}

// KeyPath names a key as the tests list them: the id, and for a list item
// "/" and its sort key.
func KeyPath(k uds.Key) string {
	if k.SortKey == "" {
		return k.ID
	}
	return k.ID + "/" + k.SortKey
}

// KeyPaths names keys as KeyPath does, joined by spaces.
func KeyPaths(keys []uds.Key) string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = KeyPath(k)
	}
	return strings.Join(names, " ")
}

// BuildIndexes builds the indexes a namespace declares until they are
// ready, and returns its policy then.
func BuildIndexes(t testing.TB, s *store.Store, app, namespace string) uds.Policy {
	t.Helper()
	for range 200 {
		p, err := s.BuildIndexes(context.Background(), app, namespace, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if p.IndexBuild == nil {
			return p
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the build did not finish")
	return uds.Policy{}
}
