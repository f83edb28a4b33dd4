package storetest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

const app = "d53065bd-f932-4841-83fb-849717d8df0f"

// TestInvariantChecks makes each violation the checks look for by writing
// the tables directly, and holds each check to finding it, and to finding
// nothing once the tables agree again.
func TestInvariantChecks(t *testing.T) {
	t.Parallel()
	c := storetest.Client(t)
	tables := storetest.NewTables(t)
	put := func(t *testing.T, table string, item map[string]types.AttributeValue) {
		t.Helper()
		if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	expect := func(t *testing.T, what string, got []string, want string) {
		t.Helper()
		switch {
		case want == "" && len(got) > 0:
			t.Errorf("%s: found %q, want nothing", what, got)
		case want != "" && (len(got) != 1 || !strings.Contains(got[0], want)):
			t.Errorf("%s: found %q, want one violation saying %q", what, got, want)
		}
	}
	value := "values/" + app + "/0123456789abcdef0123456789abcdef"
	item := map[string]types.AttributeValue{
		schema.AttrDataKey: s(app + "|docs|a"), schema.AttrOwnerKey: s(app + "|alice"), schema.AttrItemSize: n("100"),
		schema.AttrDataValue: s(`{"title":"x"}`), schema.AttrVersion: n("2"),
	}
	put(t, tables.Data, item)

	t.Run("usage", func(t *testing.T) {
		expect(t, "an item no usage counts", storetest.UsageViolations(t, c, tables, app), "recorded 0 bytes, 0 items, 0 history bytes; the tables hold 100, 1, 0")
		put(t, tables.Usage, map[string]types.AttributeValue{schema.AttrUser: s("alice"), schema.AttrApp: s(app),
			schema.AttrUsedBytes: n("100"), schema.AttrUsedItems: n("1")})
		expect(t, "usage that matches", storetest.UsageViolations(t, c, tables, app), "")
		put(t, tables.Usage, map[string]types.AttributeValue{schema.AttrUser: s("bob"), schema.AttrApp: s(app),
			schema.AttrUsedBytes: n("7"), schema.AttrUsedItems: n("0")})
		expect(t, "usage of an owner with nothing stored", storetest.UsageViolations(t, c, tables, app), "usage of bob")
	})

	t.Run("catalogue", func(t *testing.T) {
		expect(t, "a namespace holding an item, unmarked", storetest.CatalogueViolations(t, c, tables, app)[:1], "namespace docs of "+app+" holds items and is not marked")
		put(t, tables.Namespaces, map[string]types.AttributeValue{schema.AttrApp: s(app), schema.AttrNamespace: s("docs"), schema.AttrHeldSince: s("2026-01-01T00:00:00.000Z")})
		expect(t, "its app unmarked", storetest.CatalogueViolations(t, c, tables, app), "app "+app+" holds items and is not marked")
		put(t, tables.Apps, map[string]types.AttributeValue{schema.AttrApp: s(app), schema.AttrHeldSince: s("2026-01-01T00:00:00.000Z"),
			schema.AttrRegistry: s(schema.HeldPartition), schema.AttrAppNameKey: s(app)})
		expect(t, "both marked", storetest.CatalogueViolations(t, c, tables, app), "")
	})

	t.Run("objects", func(t *testing.T) {
		expect(t, "an object no record names", storetest.ObjectViolations(t, c, tables, []string{value}), "no record names it")
		kept := map[string]types.AttributeValue{
			schema.AttrHistoryKey: s(app + "|digest"), schema.AttrVersion: n("1"), schema.AttrDataKey: s(app + "|docs|a"),
			schema.AttrDataObject: s(value), schema.AttrCreatedBySubject: s("alice"),
		}
		put(t, tables.History, kept)
		expect(t, "an object a kept version names", storetest.ObjectViolations(t, c, tables, []string{value}), "")
		expect(t, "a kept version whose object is gone", storetest.ObjectViolations(t, c, tables, nil), "which the bucket does not hold")
		got := storetest.KeptVersions(t, c, tables, app, time.Now())
		if len(got) != 1 || got[0].Version != 1 || got[0].Key.ID != "a" || got[0].CreatedBy != "alice" {
			t.Errorf("kept versions %+v, want version 1 of a, by alice", got)
		}
	})

	t.Run("indexes", func(t *testing.T) {
		ix := uds.Index{Name: "byTitle", Path: "/title", Type: uds.IndexString, ID: "ix1"}
		expect(t, "an item without its entry", storetest.IndexViolations(t, c, tables, app, "docs", []uds.Index{ix}), "holds 0 entries of a, want 1")
		entry := func(id string) map[string]types.AttributeValue {
			return map[string]types.AttributeValue{schema.AttrIndexKey: s(app + "|docs|ix1|0"), schema.AttrIndexSort: &types.AttributeValueMemberB{Value: []byte("x|" + id)},
				schema.AttrDataKey: s(app + "|docs|" + id)}
		}
		put(t, tables.Index, entry("a"))
		expect(t, "an item with its entry", storetest.IndexViolations(t, c, tables, app, "docs", []uds.Index{ix}), "")
		put(t, tables.Index, entry("gone"))
		expect(t, "an entry without its item", storetest.IndexViolations(t, c, tables, app, "docs", []uds.Index{ix}), "entries of gone, which has no item")
	})
}
