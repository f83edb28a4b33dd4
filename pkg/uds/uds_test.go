package uds

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

func TestNewKey(t *testing.T) {
	for _, tc := range []struct {
		name, app, ns, id string
		field             string // "" when valid
	}{
		{"valid", "d53065bd-f932-4841-83fb-849717d8df0f", "prefs", "user123", ""},
		{"upper-case app is normalised", "D53065BD-F932-4841-83FB-849717D8DF0F", "prefs", "u", ""},
		{"unicode namespace", "d53065bd-f932-4841-83fb-849717d8df0f", "grüße", "日本", ""},
		{"app without dashes", "d53065bdf9324841-83fb-849717d8df0f00", "n", "i", "applicationUuid"},
		{"app with a non-hex digit", "g53065bd-f932-4841-83fb-849717d8df0f", "n", "i", "applicationUuid"},
		{"empty namespace", "d53065bd-f932-4841-83fb-849717d8df0f", "", "i", "namespace"},
		{"pipe in id", "d53065bd-f932-4841-83fb-849717d8df0f", "n", "a|b", "id"},
		{"slash in namespace", "d53065bd-f932-4841-83fb-849717d8df0f", "a/b", "i", "namespace"},
		{"tab in id", "d53065bd-f932-4841-83fb-849717d8df0f", "n", "a\tb", "id"},
		{"invalid UTF-8", "d53065bd-f932-4841-83fb-849717d8df0f", "n", "\xff", "id"},
		{"data key over 2048 bytes", "d53065bd-f932-4841-83fb-849717d8df0f", "n", strings.Repeat("x", 2010), "id"},
		{"data key of exactly 2048 bytes", "d53065bd-f932-4841-83fb-849717d8df0f", "n", strings.Repeat("x", 2048-36-3), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := NewKey(tc.app, tc.ns, tc.id)
			var inv *InvalidError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.field == "" && k.App != strings.ToLower(tc.app):
				t.Fatalf("app %q not normalised", k.App)
			case tc.field != "" && (!errors.As(err, &inv) || inv.Field != tc.field || !errors.Is(err, ErrInvalid)):
				t.Fatalf("error %v, want invalid %s", err, tc.field)
			}
		})
	}
}

func TestWithSortKey(t *testing.T) {
	k := Key{App: "a", Namespace: "n", ID: "i"}
	for _, tc := range []struct {
		name, sortKey string
		ok            bool
	}{
		{"timestamp", "2024-01-15T10:30:00Z", true},
		{"with slashes", "a/b/c", true},
		{"1024 bytes", strings.Repeat("s", 1024), true},
		{"1025 bytes", strings.Repeat("s", 1025), false},
		{"reserved", "list", false},
		{"empty", "", false},
		{"control character", "a\x7fb", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := k.WithSortKey(tc.sortKey)
			if (err == nil) != tc.ok {
				t.Fatalf("WithSortKey(%.20q) = %v, want ok=%v", tc.sortKey, err, tc.ok)
			}
		})
	}
}

func TestETagRoundTrip(t *testing.T) {
	rev := Revision{Version: 42, Created: time.Date(2024, 1, 15, 10, 30, 0, 123e6, time.UTC)}
	got, ok := ParseETag(rev.ETag())
	if !ok || got.Version != 42 || !got.Created.Equal(rev.Created) {
		t.Fatalf("ParseETag(%s) = %+v, %v", rev.ETag(), got, ok)
	}
	// Other spellings of the revision are other entity tags.
	respelt := []string{strings.ToUpper(rev.ETag()), `"0` + rev.ETag()[1:], `"+` + rev.ETag()[1:]}
	for _, bad := range append([]string{`42-abc`, `"42"`, `W/"42-abc"`, `"x-abc"`, `"-1-abc"`, `""`}, respelt...) {
		if _, ok := ParseETag(bad); ok {
			t.Errorf("ParseETag(%s) accepted", bad)
		}
	}
	p := Precondition{Revisions: []Revision{rev}}
	if !p.Matches(got) || p.Matches(Revision{Version: 43, Created: rev.Created}) {
		t.Error("Matches compares version and creation time")
	}
	if !(Precondition{}).Matches(Revision{}) || !(Precondition{Any: true}).Matches(rev) {
		t.Error("an empty precondition and * match any revision")
	}
}

func TestParseInstant(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" when refused
	}{
		{"2026-01-02T03:04:05.678Z", "2026-01-02T03:04:05.678Z"},
		{"2026-01-02T03:04:05.678912345+05:30", "2026-01-01T21:34:05.678Z"},
		{"0000-01-01T00:00:00Z", "0000-01-01T00:00:00Z"},
		{"9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"},
		// In UTC these are in the years -1 and 10000, which RFC 3339
		// cannot write.
		{"0000-01-01T00:00:00+01:00", ""},
		{"9999-12-31T23:00:00-05:00", ""},
		{"yesterday", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseInstant("createdDate", tc.in)
			var invalid *InvalidError
			switch {
			case tc.want == "" && (!errors.As(err, &invalid) || invalid.Field != "createdDate"):
				t.Fatalf("ParseInstant(%q) = %v, %v; want it refused", tc.in, got, err)
			case tc.want != "" && (err != nil || got.Format(time.RFC3339Nano) != tc.want || got.Location() != time.UTC):
				t.Fatalf("ParseInstant(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	global := Limits{Bytes: 1000, Items: 10}
	for _, tc := range []struct {
		name      string
		user, app Limits
		want      Limits
	}{
		{"global decides", Limits{}, Limits{}, Limits{1000, 10}},
		{"app overrides global", Limits{}, Limits{Bytes: 500}, Limits{500, 10}},
		{"user overrides app", Limits{Items: 3}, Limits{Bytes: 500, Items: 5}, Limits{500, 3}},
		{"user unlimited", Limits{Bytes: Unlimited}, Limits{Bytes: 500}, Limits{0, 10}},
		{"app unlimited", Limits{}, Limits{Unlimited, Unlimited}, Limits{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Resolve(tc.user, tc.app, global); got != tc.want {
				t.Fatalf("Resolve = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// FoldAppName gives one key to names equal under simple case folding, and
// the lower-cased name, the key of registrations before it, to every name
// but those holding the few lower-case variants listed here.
func TestFoldAppName(t *testing.T) {
	for _, pair := range [][2]string{{"ΟΔΟΣ", "οδος"}, {"stats", "ſtats"}, {"Kelvin", "\u212Aelvin"}, {"µs", "ΜS"}, {"Math Tutor", "MATH tutor"}} {
		if a, b := FoldAppName(pair[0]), FoldAppName(pair[1]); a != b {
			t.Errorf("%q folds to %q, %q to %q", pair[0], a, pair[1], b)
		}
	}
	if a, b := FoldAppName("Kırmızı"), FoldAppName("Kirmizi"); a == b {
		t.Errorf("dotless ı and i fold alike (%q): strings.EqualFold keeps them apart", a)
	}
	changed := ""
	for r := rune(0); r <= unicode.MaxRune; r++ {
		key := FoldAppName(string(r))
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if FoldAppName(string(f)) != key {
				t.Fatalf("%U folds to %q, %U of its fold orbit to %q", r, key, f, FoldAppName(string(f)))
			}
		}
		if utf8.ValidRune(r) && key != strings.ToLower(string(r)) {
			changed += string(r)
		}
	}
	if want := "\u00b5\u017f\u0345\u03c2\u03d0\u03d1\u03d5\u03d6\u03f0\u03f1\u03f5\u1c80\u1c81\u1c82\u1c83\u1c84\u1c85\u1c86\u1c87\u1c88\u1e9b\u1fbe"; changed != want {
		t.Errorf("the keys of %q differ from their lower case, want those of %q only", changed, want)
	}
}
