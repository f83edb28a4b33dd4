package store_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// The size check lets through only values whose items fit DynamoDB's
// 400 KB as AWS measures an item, which DynamoDB Local does not enforce
// the same way: every stored record is measured here by AWS's rules, for
// the longest key, class name and subjects, a value as large as the check
// allows, an update by another subject than the creator (the item then
// names both) and the versions history keeps of it.
func TestLargestValuesFitAnItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client, tables := storetest.Client(t), storetest.NewTables(t)
	s := store.New(client, tables)
	const ns = "sizes"
	list, err := uds.NewKey(app, ns, strings.Repeat("i", uds.MaxDataKeyBytes-len(app)-len(ns)-2))
	if err != nil {
		t.Fatal(err)
	}
	k, err := list.WithSortKey(strings.Repeat("z", uds.MaxSortKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	creator, updater := strings.Repeat("c", uds.MaxSubjectBytes), strings.Repeat("u", uds.MaxSubjectBytes)
	history := uds.History{Versions: 3, Days: 1}
	noise := make([]byte, store.MaxItemBytes)
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(noise)
	text := base64.StdEncoding.EncodeToString(noise)
	write := func(subject string, n int) uds.Write {
		return uds.Write{Key: k, Data: json.RawMessage(`"` + text[:n] + `"`), ClassName: strings.Repeat("k", 1024),
			Subject: subject, ExpiresAt: time.Now().Add(time.Hour), History: history}
	}
	// largest is the longest value the check lets subject write.
	largest := func(subject string) uds.Write {
		lo, hi := 0, len(text)
		for lo < hi {
			mid := (lo + hi + 1) / 2
			w := write(subject, mid)
			err := store.CheckItemSize(&w)
			var tooLarge *uds.TooLargeError
			switch {
			case err == nil:
				lo = mid
			case errors.As(err, &tooLarge):
				hi = mid - 1
			default:
				t.Fatal(err)
			}
		}
		return write(subject, lo)
	}
	if _, err := s.Create(ctx, largest(creator)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.Update(ctx, largest(updater)); err != nil {
			t.Fatal(err)
		}
	}
	// The item, its two kept versions and the history's head.
	checkSizes(t, client, tables, 4)

	// Exported and imported into other tables, they are held to the
	// bound they were written under, and fit there too.
	exported := exportAll(t, s, true)
	other := storetest.NewTables(t)
	dst := store.New(client, other)
	if _, err := dst.SetPolicy(ctx, app, "sizes", uds.Policy{Access: uds.AccessShared, History: history}); err != nil {
		t.Fatal(err)
	}
	res, err := dst.Import(ctx, app, exported)
	if err != nil || res.Imported != len(exported) {
		t.Fatalf("import of %d records: %+v, %v; want every one imported", len(exported), res, err)
	}
	checkSizes(t, client, other, 4)
}

// checkSizes measures every record of the list and history tables and
// checks that they are the records expected.
func checkSizes(t *testing.T, client *dynamodb.Client, tables store.Tables, want int) {
	t.Helper()
	records := 0
	for _, table := range []string{tables.List, tables.History} {
		storetest.Scan(t, client, table, func(av map[string]types.AttributeValue) {
			records++
			if n := itemSize(av); n > store.MaxItemBytes {
				t.Errorf("a record of %s takes %d bytes; DynamoDB holds at most %d", table, n, store.MaxItemBytes)
			}
		})
	}
	if records != want {
		t.Errorf("%d records stored, want %d", records, want)
	}
}

// itemSize is an item's size as AWS documents it: each attribute's name
// and value; a string or binary by its bytes, a number by its significant
// digits (a byte per two, and one), a list or map by its elements and 3
// bytes (and a byte an element, to be safe).
func itemSize(av map[string]types.AttributeValue) int {
	n := 0
	for name, v := range av {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		return 3 + len(v.Value) + itemSize(v.Value)
	case *types.AttributeValueMemberSS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	default: // BOOL, NULL
		return 1
	}
}

func numberSize(s string) int {
	mantissa, _, _ := strings.Cut(strings.ToLower(strings.TrimLeft(s, "+-")), "e")
	digits := strings.Trim(strings.Replace(mantissa, ".", "", 1), "0")
	return (len(digits)+1)/2 + 1
}

// A history head's bound on its entries holds each entry as AWS measures
// it within a list (its value and a byte), also once an erase has renamed
// the entry's writer and creator to its pseudonym ("erased-" and 16 hex
// digits), which may be longer than the subjects they were.
func TestHeadEntriesWithinTheirBound(t *testing.T) {
	t.Parallel()
	const pseudonym = "erased-0123456789abcdef"
	long := strings.Repeat("s", uds.MaxSubjectBytes)
	for _, tc := range []struct {
		name                      string
		owner, updatedBy, creator string
		object                    string
		deleted                   bool
	}{
		{"short subjects", app + "|a", "a", "", "", false},
		{"short writer and creator of an item of another owner", app + "|a", "b", "c", "", false},
		{"a marker", app + "|a", "b", "", "", true},
		{"a large value's version", app + "|a", "a", "", "d53065bd-f932-4841-83fb-849717d8df0f/v/" + strings.Repeat("t", 32), false},
		{"long subjects", app + "|" + long, long, long, "", false},
		{"no owner", "", "a", "b", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entry, bound := store.HeadEntry(tc.owner, tc.updatedBy, tc.creator, tc.object, tc.deleted)
			if n := 1 + valueSize(entry); n > bound {
				t.Errorf("the entry takes %d bytes, over its bound %d", n, bound)
			}
			renamed := func(s string) string {
				if s == "" {
					return s
				}
				return pseudonym
			}
			entry, _ = store.HeadEntry(tc.owner, renamed(tc.updatedBy), renamed(tc.creator), tc.object, tc.deleted)
			if n := 1 + valueSize(entry); n > bound {
				t.Errorf("renamed to the pseudonym, the entry takes %d bytes, over its bound %d", n, bound)
			}
		})
	}
}
