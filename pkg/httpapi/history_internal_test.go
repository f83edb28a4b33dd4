package httpapi

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/udsproject/uds/pkg/uds"
)

// versions builds a history from "5* 4x 3": numbers, the current entry
// marked *, delete markers x.
func versions(t *testing.T, s string) []uds.Version {
	t.Helper()
	var out []uds.Version
	for _, f := range strings.Fields(s) {
		var v uds.Version
		v.Current = strings.HasSuffix(f, "*")
		f = strings.TrimSuffix(f, "*")
		v.Deleted = strings.HasSuffix(f, "x")
		var err error
		if v.Version, err = strconv.ParseInt(strings.TrimSuffix(f, "x"), 10, 64); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func render(vs []uds.Version) string {
	var b []string
	for _, v := range vs {
		s := fmt.Sprint(v.Version)
		if v.Deleted {
			s += "x"
		}
		if v.Current {
			s += "*"
		}
		b = append(b, s)
	}
	return strings.Join(b, " ")
}

// TestVersionsAfter: a history cursor continues after the entry it names,
// or, when that entry is gone, with the kept versions older than it.
func TestVersionsAfter(t *testing.T) {
	for _, tc := range []struct{ name, history, last, want string }{
		{"after a kept version", "5* 4 3 2 1", "3", "2 1"},
		{"after the current item", "5* 4 3", "5*", "4 3"},
		{"after the last", "5* 4 3", "3", ""},
		{"after a delete marker", "6x* 5 4", "6x*", "5 4"},
		{"the current item replaced since", "6* 5 4 3", "5*", "4 3"},
		{"the current item deleted since", "6x* 5 4 3", "5*", "4 3"},
		{"a current number a kept version repeats", "2* 3x 2 1", "2*", "3x 2 1"},
		{"a kept number the current item repeats", "2* 3x 2 1", "2", "1"},
		{"the version dropped since", "7*", "3", ""},
		{"older versions pruned since", "9* 8 7", "5", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last := versions(t, tc.last)[0]
			if got := render(versionsAfter(versions(t, tc.history), historyPosition(last))); got != tc.want {
				t.Errorf("after %s in %s: %q, want %q", tc.last, tc.history, got, tc.want)
			}
		})
	}
}

// TestParseVersion: version numbers are read as the item's version and its
// ETag write them, and nothing else is one.
func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"42", 42, true}, {"9007199254740991", uds.MaxVersion, true},
		{"9007199254740992", 0, false}, {"99999999999999999999", 0, false}, {"", 0, false}, {"01", 0, false},
		{"+1", 0, false}, {"-1", 0, false}, {"-0", 0, false}, {"1e3", 0, false}, {"1.0", 0, false}, {" 1", 0, false},
		{"0x10", 0, false}, {"١", 0, false},
	} {
		if got, ok := parseVersion(tc.in); got != tc.want || ok != tc.ok {
			t.Errorf("parseVersion(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
