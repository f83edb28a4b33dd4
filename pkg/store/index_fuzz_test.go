package store

import (
	"bytes"
	"cmp"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/udsproject/uds/pkg/uds"
)

// FuzzIndexOrder checks the index entries' sort keys against the values
// and keys they encode: byte order is value order, then key order (for
// keys that fit the room the value leaves); a sort key fits DynamoDB's
// 1,024 bytes; and each selection's key condition (indexCondition) holds
// for exactly the entries whose value it selects: eq, prefix, from
// (inclusive) and to (exclusive).
func FuzzIndexOrder(f *testing.F) {
	for _, s := range [][2]string{{"open", "opening"}, {"", "a"}, {"a\x00", "a"}, {"é", "z"}, {strings.Repeat("x", 512), "y"}, {"ab", "ab"}} {
		f.Add(s[0], s[1], 1.5, -2.0, "id1", "id2", "")
	}
	f.Add("a", "b", 0.0, math.Copysign(0, -1), "k", "k", "s")
	f.Add("a", "b", math.MaxFloat64, -math.MaxFloat64, strings.Repeat("k", 900), strings.Repeat("k", 901), "")
	f.Add("a", "b", math.SmallestNonzeroFloat64, 0.0, "x", "y", "z")
	f.Fuzz(func(t *testing.T, a, b string, x, y float64, id1, id2, sortKey string) {
		if !utf8.ValidString(a+b+id1+id2+sortKey) || len(a) > uds.MaxIndexedStringBytes || len(b) > uds.MaxIndexedStringBytes ||
			math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) || id1 == "" || id2 == "" {
			return
		}
		k1 := uds.Key{App: "app", Namespace: "ns", ID: id1}
		k2 := uds.Key{App: "app", Namespace: "ns", ID: id2, SortKey: sortKey}
		check := func(typ uds.IndexType, v1, v2 uds.IndexValue, byValue int) {
			s1, s2 := indexSort(typ, v1, k1), indexSort(typ, v2, k2)
			if len(s1) > maxIndexSortBytes || len(s2) > maxIndexSortBytes {
				t.Fatalf("sort keys of %d and %d bytes", len(s1), len(s2))
			}
			got := bytes.Compare(s1, s2)
			switch {
			case byValue != 0 && got != byValue:
				t.Fatalf("%s %+v vs %+v: sort keys compare %d, values %d", typ, v1, v2, got, byValue)
			case byValue == 0 && len(s1) < maxIndexSortBytes-digestBytes && len(s2) < maxIndexSortBytes-digestBytes:
				// Both keys fit whole: they order the entries.
				if want := cmp.Or(strings.Compare(id1, id2), strings.Compare("", sortKey)); want != 0 && got != want {
					t.Fatalf("equal values, keys %q vs %q/%q: sort keys compare %d", id1, id2, sortKey, got)
				}
			}
		}
		check(uds.IndexString, uds.IndexValue{Str: a}, uds.IndexValue{Str: b}, strings.Compare(a, b))
		check(uds.IndexNumber, uds.IndexValue{Num: x + 0}, uds.IndexValue{Num: y + 0}, cmp.Compare(x+0, y+0))

		// Selections: entry of value a (string) or x (number) against
		// bounds b and y.
		str := func(s string) *uds.IndexValue { return &uds.IndexValue{Str: s} }
		num := func(f float64) *uds.IndexValue { return &uds.IndexValue{Num: f + 0} }
		strIx, numIx := uds.Index{Name: "s", Type: uds.IndexString}, uds.Index{Name: "n", Type: uds.IndexNumber}
		se, ne := indexSort(uds.IndexString, *str(a), k1), indexSort(uds.IndexNumber, *num(x), k1)
		for _, tc := range []struct {
			name  string
			q     IndexQuery
			entry []byte
			want  bool
		}{
			{"eq", IndexQuery{Index: strIx, Eq: str(b)}, se, a == b},
			{"prefix", IndexQuery{Index: strIx, Prefix: str(b)}, se, strings.HasPrefix(a, b)},
			{"from", IndexQuery{Index: strIx, From: str(b)}, se, a >= b},
			{"to", IndexQuery{Index: strIx, To: str(b)}, se, a < b},
			{"from to", IndexQuery{Index: strIx, From: str(b), To: str(b + "z")}, se, a >= b && a < b+"z"},
			{"empty prefix", IndexQuery{Index: strIx, Prefix: str("")}, se, true},
			{"from empty", IndexQuery{Index: strIx, From: str(""), To: str(b)}, se, a < b},
			{"to empty", IndexQuery{Index: strIx, To: str("")}, se, false},
			{"number eq", IndexQuery{Index: numIx, Eq: num(y)}, ne, x+0 == y+0},
			{"number from", IndexQuery{Index: numIx, From: num(y)}, ne, x+0 >= y+0},
			{"number to", IndexQuery{Index: numIx, To: num(y)}, ne, x+0 < y+0},
			{"number from to", IndexQuery{Index: numIx, From: num(min(x, y)), To: num(max(x, y))}, ne, x >= min(x, y) && x < max(x, y)},
		} {
			c, err := indexCondition(tc.q)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			// DynamoDB refuses an empty binary value, and a key
			// condition's placeholders must all be given.
			if c.lo != nil && len(c.lo) == 0 || c.hi != nil && len(c.hi) == 0 ||
				strings.Contains(c.expr, ":lo") != (c.lo != nil) || strings.Contains(c.expr, ":hi") != (c.hi != nil) {
				t.Fatalf("%s: condition %q with bounds %q and %q", tc.name, c.expr, c.lo, c.hi)
			}
			if got := !c.empty && c.holds(tc.entry); got != tc.want {
				t.Fatalf("%s: entry of %q / %v selected %v, want %v", tc.name, a, x, got, tc.want)
			}
		}
	})
}
