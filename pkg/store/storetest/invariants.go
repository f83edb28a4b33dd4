package storetest

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// The design's invariants, which every write path keeps whatever
// capabilities its namespace combines: an owner's usage record equals
// the sums of what the tables store of theirs, no object stays in the
// bucket once no record names it (and none a record names is missing),
// no index entry outlives its item or its value, and every namespace that
// holds an item is in the catalogue of what holds data. Each check reads the
// tables with strongly consistent scans and returns what it found wrong,
// one sentence a violation, so that a test can show all of them at once
// and a test of the check can hold it to a made-up violation.

// UsageViolations compares, for every owner of app with a usage record or
// a stored item, the usage record with the sums the tables hold
// (StoredUsage's measure: items and kept versions, reservations of
// uploads included).
func UsageViolations(t testing.TB, c *dynamodb.Client, tables store.Tables, app string) []string {
	t.Helper()
	stored := map[string]uds.Usage{}
	prefix := app + uds.KeyDelimiter
	for _, table := range []string{tables.Data, tables.List, tables.History} {
		Scan(t, c, table, func(av map[string]types.AttributeValue) {
			owner, ok := strings.CutPrefix(stringAttr(av, schema.AttrOwnerKey), prefix)
			if !ok {
				return
			}
			u := stored[owner]
			size := number(av[schema.AttrItemSize])
			u.Bytes += size
			if _, kept := av[schema.AttrHistoryKey]; kept {
				u.History += size
			} else {
				u.Items++
			}
			stored[owner] = u
		})
	}
	recorded := map[string]uds.Usage{}
	Scan(t, c, tables.Usage, func(av map[string]types.AttributeValue) {
		_, bytes := av[schema.AttrUsedBytes]
		_, items := av[schema.AttrUsedItems]
		if stringAttr(av, schema.AttrApp) != app || !bytes && !items {
			return
		}
		recorded[stringAttr(av, schema.AttrUser)] = uds.Usage{Bytes: number(av[schema.AttrUsedBytes]),
			Items: number(av[schema.AttrUsedItems]), History: number(av[schema.AttrHistoryBytes])}
	})
	var out []string
	for _, owner := range slices.Sorted(maps.Keys(union(stored, recorded))) {
		if s, r := stored[owner], recorded[owner]; s != r {
			out = append(out, fmt.Sprintf("usage of %s in %s: recorded %d bytes, %d items, %d history bytes; the tables hold %d, %d, %d",
				owner, app, r.Bytes, r.Items, r.History, s.Bytes, s.Items, s.History))
		}
	}
	return out
}

func union[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// ObjectViolations holds the bucket's objects (keys, as a listing of the
// bucket gives them) against the records that name them: a committed
// value (under values/) must be named by an item or a kept version, or be
// the copy a reservation's commit made of its upload; an upload's object
// (under uploads/) must be awaited by a reservation. And every object a
// record names must be in the bucket.
func ObjectViolations(t testing.TB, c *dynamodb.Client, tables store.Tables, keys []string) []string {
	t.Helper()
	named := map[string]string{} // object key -> a record naming it
	for _, table := range []string{tables.Data, tables.List, tables.History} {
		Scan(t, c, table, func(av map[string]types.AttributeValue) {
			record := describe(table, av)
			if name := stringAttr(av, schema.AttrDataObject); name != "" {
				named[objectKey(name)] = record
			}
			if name := stringAttr(av, schema.AttrPendingObject); name != "" {
				named[objectKey(name)] = record
				if app, id, ok := uds.ParseObjectName(name); ok {
					named[uds.ValueName(app, id)] = record + " (its commit's copy)"
				}
			}
		})
	}
	held := map[string]bool{}
	var out []string
	for _, key := range keys {
		held[key] = true
		if _, ok := named[key]; !ok {
			out = append(out, fmt.Sprintf("object %s is in the bucket, and no record names it", key))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(named)) {
		if !held[key] && !strings.HasSuffix(named[key], "(its commit's copy)") && !strings.HasPrefix(key, "uploads/") {
			out = append(out, fmt.Sprintf("%s names object %s, which the bucket does not hold", named[key], key))
		}
	}
	return out
}

// objectKey is the bucket key of a named object, as package blob keeps
// them: committed values under their name, uploads under uploads/.
func objectKey(name string) string {
	if uds.IsValueName(name) {
		return name
	}
	return "uploads/" + name
}

// describe names a stored record in a violation: its table, key and, for
// a kept version, the version.
func describe(table string, av map[string]types.AttributeValue) string {
	s := fmt.Sprintf("%s record %q", table, stringAttr(av, schema.AttrDataKey))
	if sk := stringAttr(av, schema.AttrSortKey); sk != "" {
		s += fmt.Sprintf(" sort key %q", sk)
	}
	if _, kept := av[schema.AttrHistoryKey]; kept {
		s += fmt.Sprintf(" version %d", number(av[schema.AttrVersion]))
	}
	return s
}

// IndexViolations holds the entries of a namespace's indexes against its
// items: each entry must lead to a stored item (expired or not: reclaim
// removes both together) that has a value of the index's type at its
// path, and each such item must have exactly one entry in the index.
func IndexViolations(t testing.TB, c *dynamodb.Client, tables store.Tables, app, namespace string, indexes []uds.Index) []string {
	t.Helper()
	prefix := app + uds.KeyDelimiter + namespace + uds.KeyDelimiter
	type stored struct {
		key  uds.Key
		data []byte
	}
	var items []stored
	for _, table := range []string{tables.Data, tables.List} {
		Scan(t, c, table, func(av map[string]types.AttributeValue) {
			if key, ok := itemKey(av); ok && strings.HasPrefix(stringAttr(av, schema.AttrDataKey), prefix) {
				items = append(items, stored{key, storedValue(t, av)})
			}
		})
	}
	var out []string
	for _, ix := range indexes {
		entries := map[uds.Key]int{}
		for _, e := range IndexEntries(t, c, tables, app, namespace, ix.ID) {
			entries[e.Key]++
		}
		want := map[uds.Key]bool{}
		for _, it := range items {
			if _, ok := ix.ValueOf(it.data); ok {
				want[it.key] = true
			}
		}
		for _, key := range slices.SortedFunc(maps.Keys(union2(entries, want)), compareKeys) {
			switch n := entries[key]; {
			case !want[key]:
				out = append(out, fmt.Sprintf("index %s of %s holds %d entries of %s, which has no item there with a value at %s",
					ix.Name, namespace, n, KeyPath(key), ix.Path))
			case n != 1:
				out = append(out, fmt.Sprintf("index %s of %s holds %d entries of %s, want 1", ix.Name, namespace, n, KeyPath(key)))
			}
		}
	}
	return out
}

func union2(a map[uds.Key]int, b map[uds.Key]bool) map[uds.Key]bool {
	out := map[uds.Key]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func compareKeys(a, b uds.Key) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.ID, b.ID),
		strings.Compare(a.SortKey, b.SortKey), strings.Compare(a.Owner, b.Owner))
}

// KeptVersion is a version an item's history keeps, as the history table
// holds it: readable at its item's route with ?version.
type KeptVersion struct {
	Key     uds.Key
	Version int64
	// CreatedBy is the subject that created the item the version was.
	CreatedBy string
}

// KeptVersions lists the versions of app's items that the history table
// keeps and that are not expired at now, delete markers and heads left
// out: every one of them must read back.
func KeptVersions(t testing.TB, c *dynamodb.Client, tables store.Tables, app string, now time.Time) []KeptVersion {
	t.Helper()
	var out []KeptVersion
	Scan(t, c, tables.History, func(av map[string]types.AttributeValue) {
		key, ok := itemKey(av)
		version := number(av[schema.AttrVersion])
		if _, marker := av[schema.AttrDeleted]; !ok || key.App != app || marker || version == schema.HeadVersion {
			return
		}
		if ms, ok := av[schema.AttrExpiresAtMillis]; ok && number(ms) <= now.UnixMilli() {
			return
		}
		out = append(out, KeptVersion{Key: key, Version: version, CreatedBy: stringAttr(av, schema.AttrCreatedBySubject)})
	})
	slices.SortFunc(out, func(a, b KeptVersion) int {
		return cmp.Or(compareKeys(a.Key, b.Key), cmp.Compare(a.Version, b.Version))
	})
	return out
}

// CatalogueViolations holds the catalogue of what holds data to the data
// tables: every namespace of app that holds an item (an upload's
// reservation is none) is marked on its record in the namespaces table,
// and then so is the app on its record in the apps table, which is in the
// registry's index, registered or among the apps that hold data.
func CatalogueViolations(t testing.TB, c *dynamodb.Client, tables store.Tables, app string) []string {
	t.Helper()
	held := map[string]bool{}
	for _, table := range []string{tables.Data, tables.List} {
		Scan(t, c, table, func(av map[string]types.AttributeValue) {
			parts := strings.SplitN(stringAttr(av, schema.AttrDataKey), uds.KeyDelimiter, 3)
			if len(parts) == 3 && parts[0] == app && !strings.HasPrefix(parts[1], "\x00") {
				held[parts[1]] = true
			}
		})
	}
	marked := map[string]bool{}
	Scan(t, c, tables.Namespaces, func(av map[string]types.AttributeValue) {
		if stringAttr(av, schema.AttrApp) == app && stringAttr(av, schema.AttrHeldSince) != "" {
			marked[stringAttr(av, schema.AttrNamespace)] = true
		}
	})
	var out []string
	for _, ns := range slices.Sorted(maps.Keys(held)) {
		if !marked[ns] {
			out = append(out, fmt.Sprintf("namespace %s of %s holds items and is not marked in the catalogue", ns, app))
		}
	}
	if len(held) == 0 {
		return out
	}
	appMarked := false
	Scan(t, c, tables.Apps, func(av map[string]types.AttributeValue) {
		if stringAttr(av, schema.AttrApp) != app {
			return
		}
		r := stringAttr(av, schema.AttrRegistry)
		appMarked = stringAttr(av, schema.AttrHeldSince) != "" && (r == schema.RegistryPartition ||
			r == schema.HeldPartition && stringAttr(av, schema.AttrAppNameKey) == app)
	})
	if !appMarked {
		out = append(out, fmt.Sprintf("app %s holds items and is not marked in the catalogue, or not in the registry's index", app))
	}
	return out
}
