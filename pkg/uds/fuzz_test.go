package uds

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// uuidPattern is the reference for application UUIDs: 8-4-4-4-12
// hexadecimal digits, in any case.
var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// FuzzKeys validates key parts as routes, batch paths and import records
// give them: a refusal is an *InvalidError naming the part; an accepted
// app is the UUID lower-cased; an accepted key validates again as itself,
// and its parts, the owner of a private key space included, come back out
// of its DataKey as a stored item's key is read; a sort key, subject or
// user is accepted exactly where its rules say.
func FuzzKeys(f *testing.F) {
	const app = "d53065bd-f932-4841-83fb-849717d8df0f"
	for _, s := range []struct{ app, namespace, id, sortKey, owner string }{
		{app, "prefs", "user123", "2024-01-15T10:30:00Z", "auth0|abc"},
		{strings.ToUpper(app), "grüße", "日本", "a/b", "arn:aws:iam::1:user/ops"},
		{"{" + app + "}", "n", "i", "s", "o"},
		{"d53065bdf9324841-83fb-849717d8df0f00", "n", "i", "s", "o"},
		{"g53065bd-f932-4841-83fb-849717d8df0f", "n", "i", "s", "o"},
		{app, "", "i", "", ""},
		{app, "a|b", "a/b", "list", "anonymous"},
		{app, "n", "i\x01", "z/", "al\xffce"},
		{app, "n\xff", "i", "a\x7fb", "a\u0085b"},
		{app, "n", strings.Repeat("i", 2048-len(app)-3), strings.Repeat("s", 1024), strings.Repeat("o", 1024)},
		{app, "n", strings.Repeat("i", 2048-len(app)-2), strings.Repeat("s", 1025), strings.Repeat("o", 1025)},
		{app, "n", strings.Repeat("i", 1000), "é", strings.Repeat("o", 1000)},
		{app, strings.Repeat("n", 1000), "i", "s", strings.Repeat("o", 1008)},
		{app, strings.Repeat("n", 1000), "i", "s", strings.Repeat("o", 1009)},
	} {
		f.Add(s.app, s.namespace, s.id, s.sortKey, s.owner)
	}
	f.Fuzz(func(t *testing.T, app, namespace, id, sortKey, owner string) {
		lower, err := ParseApp(app)
		if (err == nil) != uuidPattern.MatchString(app) || (err == nil && lower != strings.ToLower(app)) {
			t.Fatalf("ParseApp(%q) = %q, %v", app, lower, err)
		}
		checkField(t, err, "applicationUuid")
		if _, err := ParseNamespace(namespace); err != nil {
			checkField(t, err, "namespace")
		}
		if u, err := ParseUser(owner); (err == nil) != (owner != "" && ValidSubject(owner)) || (err == nil && u != owner) {
			t.Fatalf("ParseUser(%q) = %q, %v; ValidSubject says %v", owner, u, err, ValidSubject(owner))
		}
		k, err := NewKey(app, namespace, id)
		if err != nil {
			checkField(t, err, "applicationUuid", "namespace", "id")
			return
		}
		if _, nsErr := ParseNamespace(namespace); nsErr != nil || k.App != lower || k.Namespace != namespace || k.ID != id {
			t.Fatalf("NewKey(%q, %q, %q) = %+v, though ParseNamespace says %v", app, namespace, id, k, nsErr)
		}
		checkKey(t, k)
		item, err := k.WithSortKey(sortKey)
		wantOK := sortKey != "" && sortKey != ReservedSortKey && !strings.HasSuffix(sortKey, "/") && CheckSortKey("sortKey", sortKey) == nil
		if (err == nil) != wantOK {
			t.Fatalf("WithSortKey(%q): %v", sortKey, err)
		}
		if err != nil {
			checkField(t, err, "sortKey")
		} else if item.SortKey != sortKey || item.DataKey() != k.DataKey() {
			t.Fatalf("WithSortKey(%q) = %+v", sortKey, item)
		}
		if owner == "" || !ValidSubject(owner) {
			return
		}
		// The key space itself (a query's, a changes feed's) is taken
		// exactly when an item with a one-byte id fits in it.
		space, err := Key{App: k.App, Namespace: k.Namespace}.InSpaceOf(owner)
		_, shortest := Key{App: k.App, Namespace: k.Namespace, ID: "i"}.InSpaceOf(owner)
		if (err == nil) != (shortest == nil) || (err == nil && space.Owner != owner) {
			t.Fatalf("InSpaceOf(%q) of namespace %q = %+v, %v; of its shortest id %v", owner, k.Namespace, space, err, shortest)
		}
		if err != nil {
			checkField(t, err, "namespace")
		}
		mine, err := k.InSpaceOf(owner)
		if (err == nil) != (len(k.DataKey())+len(KeyDelimiter)+len(owner) <= MaxDataKeyBytes) {
			t.Fatalf("InSpaceOf(%q) on %+v: %v", owner, k, err)
		}
		if err != nil {
			checkField(t, err, "id")
			return
		}
		if mine.Owner != owner {
			t.Fatalf("InSpaceOf(%q) = %+v", owner, mine)
		}
		checkKey(t, mine)
	})
}

// checkKey checks an accepted key: it validates again as itself, fits a
// partition key, and its parts come back out of its DataKey as the store
// reads them (the owner is everything after the third delimiter).
func checkKey(t *testing.T, k Key) {
	t.Helper()
	again, err := NewKey(k.App, k.Namespace, k.ID)
	if err != nil || again != (Key{App: k.App, Namespace: k.Namespace, ID: k.ID}) {
		t.Fatalf("key %+v validates again as %+v, %v", k, again, err)
	}
	dk := k.DataKey()
	parts := strings.SplitN(dk, KeyDelimiter, 4)
	read := Key{App: parts[0], Namespace: parts[1], ID: parts[2]}
	if len(parts) == 4 {
		read.Owner = parts[3]
	}
	if len(dk) > MaxDataKeyBytes || read != k {
		t.Fatalf("key %+v has DataKey %q (%d bytes), read back as %+v", k, dk, len(dk), read)
	}
}

// checkField checks that err, if any, is an *InvalidError naming one of
// fields.
func checkField(t *testing.T, err error, fields ...string) {
	t.Helper()
	if err == nil {
		return
	}
	var invalid *InvalidError
	if !errors.As(err, &invalid) {
		t.Fatalf("%v (%T) is not an *InvalidError", err, err)
	}
	for _, f := range fields {
		if invalid.Field == f {
			return
		}
	}
	t.Fatalf("%v names field %q, not one of %q", err, invalid.Field, fields)
}

// FuzzIndexPath parses index declarations' JSON Pointers and finds values
// in arbitrary data: a pointer is refused or gives back the member names
// it escapes (RFC 6901), and the value of a member named k in {k: 7} is
// found by the pointer that escapes k, whatever k holds.
func FuzzIndexPath(f *testing.F) {
	for _, s := range [][2]string{{"/status", `{"status":"open"}`}, {"", `"x"`}, {"/a~1b", `{"a/b":1}`}, {"/m~0n", `{"m~n":2}`},
		{"/0", `[1]`}, {"/01", `[1,2]`}, {"/-", `[1]`}, {"a", `{}`}, {"/a~", `{}`}, {"/a/b", `{"a":{"b":3}}`}, {"/a", `not json`}} {
		f.Add(s[0], s[1], "k")
	}
	f.Fuzz(func(t *testing.T, path, data, name string) {
		tokens, err := ParsePointer(path)
		if err == nil {
			var b strings.Builder
			for _, tok := range tokens {
				b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
			}
			if b.String() != path {
				t.Fatalf("%q parsed as %q, which writes %q", path, tokens, b.String())
			}
		}
		ix := Index{Name: "n", Path: path, Type: IndexNumber}
		ix.ValueOf(json.RawMessage(data)) // must not panic
		if !utf8.ValidString(name) {
			return
		}
		doc, _ := json.Marshal(map[string]int{name: 7})
		ix.Path = "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
		if len(ix.Path) > 256 {
			return
		}
		if v, ok := ix.ValueOf(doc); !ok || v.Num != 7 {
			t.Fatalf("member %q of %s not found by %q: %v %v", name, doc, ix.Path, v, ok)
		}
	})
}
