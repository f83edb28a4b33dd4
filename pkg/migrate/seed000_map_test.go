package migrate

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/uds"
)

// The derived ids are RFC 9562's name-based UUIDs: its example (the DNS
// namespace and www.example.com) comes out as the RFC gives it.
func TestUUIDv5(t *testing.T) {
	if got, want := uuidV5("6ba7b810-9dad-11d1-80b4-00c04fd430c8", "www.example.com"), "2ed6657d-e927-568b-95e1-2665a8aea6a2"; got != want {
		t.Errorf("uuidV5 = %s, want %s", got, want)
	}
	if a, b := AppIDOf("notes"), AppIDOf("Notes"); a == b {
		t.Errorf("names that differ in case share the id %s", a)
	}
	if _, err := uds.ParseApp(AppIDOf("notes")); err != nil {
		t.Error(err)
	}
}

// JSON text is checked as a UDS write checks data and stored compacted;
// what a write would refuse is refused with a reason.
func TestJSONText(t *testing.T) {
	for _, c := range []struct {
		name, in, want, refused string
	}{
		{name: "compact", in: `{"a":[1,2.50,true],"b":"<&>é"}`, want: `{"a":[1,2.50,true],"b":"<&>é"}`},
		{name: "white space", in: " { \"a\" : [ 1 ,\n 2 ] }\n", want: `{"a":[1,2]}`},
		{name: "string", in: `"just text"`, want: `"just text"`},
		{name: "escapes kept", in: `{"a":"\u00e9\n"}`, want: `{"a":"\u00e9\n"}`},
		{name: "same name at other levels", in: `{"a":{"a":1},"b":[{"a":1},{"a":2}]}`, want: `{"a":{"a":1},"b":[{"a":1},{"a":2}]}`},
		{name: "null", in: `null`, refused: "null"},
		{name: "not JSON", in: `{not json`, refused: "not JSON"},
		{name: "two values", in: `1 2`, refused: "not JSON"},
		{name: "empty", in: ``, refused: "not JSON"},
		{name: "repeated name", in: `{"a":1,"b":{"c":1,"c":2}}`, refused: `member "c" twice`},
		{name: "repeated name after a nested object", in: `{"a":{"x":1},"a":2}`, refused: `member "a" twice`},
		{name: "invalid UTF-8", in: "\"\xff\"", refused: "UTF-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := jsonText(c.in)
			switch {
			case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
				t.Errorf("jsonText(%q) = %s, %v; want refused with %q", c.in, got, err, c.refused)
			case c.refused == "" && (err != nil || string(got) != c.want):
				t.Errorf("jsonText(%q) = %s, %v; want %s", c.in, got, err, c.want)
			}
		})
	}
}

// A native document becomes JSON: members in the order of their names,
// numbers as written, HTML characters unescaped; what JSON has no form
// for is refused.
func TestNativeDocument(t *testing.T) {
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	for _, c := range []struct {
		name    string
		in      types.AttributeValue
		want    string
		refused string
	}{
		{name: "map", in: &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"z": n("1.50"), "a": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("<&>"), &types.AttributeValueMemberBOOL{Value: true}, &types.AttributeValueMemberNULL{Value: true}}},
			"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"é\"": n("-2e10")}},
		}}, want: `{"a":["<&>",true,null],"m":{"é\"":-2e10},"z":1.50}`},
		{name: "list", in: &types.AttributeValueMemberL{Value: []types.AttributeValue{n("0"), s("line\nbreak")}}, want: `[0,"line\nbreak"]`},
		{name: "number", in: n("12345678901234567890123456789012345678"), want: `12345678901234567890123456789012345678`},
		{name: "boolean", in: &types.AttributeValueMemberBOOL{Value: false}, want: `false`},
		{name: "empty map", in: &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}, want: `{}`},
		{name: "not a JSON number", in: n(".5"), refused: "not a JSON number"},
		{name: "binary inside", in: &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberB{Value: []byte{1}}}}, refused: "binary"},
		{name: "string set", in: &types.AttributeValueMemberSS{Value: []string{"a"}}, refused: "string set"},
		{name: "invalid UTF-8 inside", in: &types.AttributeValueMemberL{Value: []types.AttributeValue{s("\xff")}}, refused: "UTF-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := appendJSON(nil, c.in)
			switch {
			case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
				t.Errorf("appendJSON = %s, %v; want refused with %q", got, err, c.refused)
			case c.refused == "" && (err != nil || string(got) != c.want):
				t.Errorf("appendJSON = %s, %v; want %s", got, err, c.want)
			}
		})
	}
}

// Each item maps to its record, or to the reason it is skipped.
func TestMapRecord(t *testing.T) {
	const app = "d53065bd-f932-4841-83fb-849717d8df0f"
	m := &mapper{names: DefaultSeed000Names(), date: DefaultSeed000Date,
		apps: map[string]target{
			"notes":   {App: app, Namespace: "data"},
			"a#b":     {App: app, Namespace: "other"},
			"refused": {Refused: `app name "refused" is refused: taken`},
		},
		behavior: target{App: uds.BehaviorApp, Namespace: "behavior"}}
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	item := func(appUser, user, key string, value types.AttributeValue, more ...string) map[string]types.AttributeValue {
		it := map[string]types.AttributeValue{"appUser": s(appUser), "user": s(user), "key": s(key)}
		if value != nil {
			it["value"] = value
		}
		for i := 0; i+1 < len(more); i += 2 {
			it[more[i]] = s(more[i+1])
		}
		return it
	}
	bin := func(n int) types.AttributeValue { return &types.AttributeValueMemberB{Value: make([]byte, n)} }
	t1 := time.Date(2023, 6, 1, 8, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		f    family
		item map[string]types.AttributeValue
		// want is the record's key as a path, its data (or content type)
		// and dates; skip the reason's start.
		key, value string
		created    time.Time
		updated    time.Time
		skip       string
	}{
		{name: "json", f: familyJSON, item: item("notes#alice", "alice", "k1", s(`{"a":1}`)),
			key: app + "/data/k1/alice", value: `{"a":1}`, created: DefaultSeed000Date, updated: DefaultSeed000Date},
		{name: "separator in the app name", f: familyJSON, item: item("a#b#bob|x", "bob|x", "k", s(`1`), "createdDate", "2023-06-01T08:00:00Z"),
			key: app + "/other/k/bob|x", value: `1`, created: t1, updated: t1},
		{name: "only updated", f: familyJSON, item: item("notes#alice", "alice", "k", s(`1`), "updatedDate", "2023-06-01T10:00:00+02:00"),
			key: app + "/data/k/alice", value: `1`, created: t1, updated: t1},
		{name: "blob", f: familyBlob, item: item("notes#alice", "alice", "b", bin(3), "contentType", "image/png"),
			key: app + "/data/b/alice", value: "image/png", created: DefaultSeed000Date, updated: DefaultSeed000Date},
		{name: "blob without a type", f: familyBlob, item: item("notes#alice", "alice", "b", bin(uds.MaxInlineBytes)),
			key: app + "/data/b/alice", value: DefaultBlobType, created: DefaultSeed000Date, updated: DefaultSeed000Date},
		{name: "behavior", f: familyBehavior, item: map[string]types.AttributeValue{"user": s("alice"), "key": s("score"), "value": s(`7`)},
			key: uds.BehaviorApp + "/behavior/score/alice", value: `7`, created: DefaultSeed000Date, updated: DefaultSeed000Date},
		{name: "no user", f: familyJSON, item: map[string]types.AttributeValue{"appUser": s("notes#alice"), "key": s("k"), "value": s("1")}, skip: "it has no user"},
		{name: "hash key without the user", f: familyJSON, item: item("notes#mallory", "alice", "k", s(`1`)), skip: "its appUser does not end"},
		{name: "app not discovered", f: familyJSON, item: item("new#alice", "alice", "k", s(`1`)), skip: `app name "new" was not found`},
		{name: "app refused", f: familyJSON, item: item("refused#alice", "alice", "k", s(`1`)), skip: `app name "refused" is refused`},
		{name: "user with a control character", f: familyJSON, item: item("notes#al\x07ice", "al\x07ice", "k", s(`1`)), skip: "the user is not a subject"},
		{name: "user too long", f: familyJSON, item: item("notes#"+strings.Repeat("u", 1025), strings.Repeat("u", 1025), "k", s(`1`)), skip: "the user is not a subject"},
		{name: "key with the delimiter", f: familyJSON, item: item("notes#alice", "alice", "a|b", s(`1`)), skip: `key: must not contain "|"`},
		{name: "key with a slash", f: familyJSON, item: item("notes#alice", "alice", "a/b", s(`1`)), skip: `key: must not contain "/"`},
		{name: "key with a control character", f: familyJSON, item: item("notes#alice", "alice", "a\nb", s(`1`)), skip: "key: must not contain control characters"},
		{name: "key not UTF-8", f: familyJSON, item: item("notes#alice", "alice", "a\xffb", s(`1`)), skip: "key: is not valid UTF-8"},
		{name: "empty key", f: familyJSON, item: item("notes#alice", "alice", "", s(`1`)), skip: "key: must not be empty"},
		{name: "key too long with the owner", f: familyJSON, item: item("notes#"+strings.Repeat("u", 1000), strings.Repeat("u", 1000), strings.Repeat("k", 1024), s(`1`)), skip: "key: applicationUuid, namespace, id and the caller's identity together take"},
		{name: "no value", f: familyJSON, item: item("notes#alice", "alice", "k", nil), skip: "it has no value"},
		{name: "null", f: familyJSON, item: item("notes#alice", "alice", "k", &types.AttributeValueMemberNULL{Value: true}), skip: "the value is null"},
		{name: "not JSON", f: familyJSON, item: item("notes#alice", "alice", "k", s(`{x`)), skip: "the value is not JSON"},
		{name: "JSON over the data limit", f: familyJSON, item: item("notes#alice", "alice", "k", &types.AttributeValueMemberL{Value: []types.AttributeValue{s(strings.Repeat("\x01", 200_000))}}), skip: "the value takes 1200004 bytes of JSON"},
		{name: "blob not binary", f: familyBlob, item: item("notes#alice", "alice", "k", s(`x`)), skip: "the value is not binary (it is string)"},
		{name: "blob over the item limit", f: familyBlob, item: item("notes#alice", "alice", "k", bin(uds.MaxInlineBytes+1)), skip: "the value is 358401 bytes"},
		{name: "blob of a JSON type", f: familyBlob, item: item("notes#alice", "alice", "k", bin(1), "contentType", "application/json"), skip: "contentType: is application/json"},
		{name: "anonymous", f: familyJSON, item: item("notes#anonymous", "anonymous", "k", s(`1`)), skip: `the user is "anonymous", who has no key space in private namespace`},
		{name: "bad date", f: familyJSON, item: item("notes#alice", "alice", "k", s(`1`), "createdDate", "yesterday"), skip: "createdDate: must be an RFC 3339 instant"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := m.record(c.f, c.item)
			if c.skip != "" {
				if !strings.HasPrefix(got.skip, c.skip) {
					t.Errorf("skip %q, want %q…", got.skip, c.skip)
				}
				return
			}
			if got.skip != "" {
				t.Fatalf("skipped: %s", got.skip)
			}
			r := got.rec
			path := r.App + "/" + r.Namespace + "/" + r.ID + "/" + r.Key.Owner
			value := string(r.Data)
			if r.Binary != nil {
				value = r.Binary.ContentType
			}
			if path != c.key || value != c.value || r.Owner != r.Key.Owner || r.CreatedBy != r.Owner || r.UpdatedBy != r.Owner || r.Version != 1 ||
				!r.CreatedDate.Equal(c.created) || !r.UpdatedDate.Equal(c.updated) {
				t.Errorf("record %s %s owner %s by %s/%s v%d %v %v; want %s %s %v %v", path, value, r.Owner, r.CreatedBy, r.UpdatedBy, r.Version,
					r.CreatedDate, r.UpdatedDate, c.key, c.value, c.created, c.updated)
			}
		})
	}
}
