package uds

import (
	"errors"
	"strings"
	"testing"
	"time"
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
