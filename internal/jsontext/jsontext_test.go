package jsontext

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// encodingJSON is s as encoding/json writes it with HTML escaping off.
func encodingJSON(t testing.TB, s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// slogJSON is s as slog's JSON handler writes an attribute's value.
func slogJSON(t testing.TB, s string) string {
	var b bytes.Buffer
	slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key != "v" {
				return slog.Attr{}
			}
			return a
		},
	})).Info("", "v", s)
	line := strings.TrimSuffix(b.String(), "\n")
	return strings.TrimSuffix(strings.TrimPrefix(line, `{"v":`), "}")
}

var samples = []string{
	"", "plain", `quote " and backslash \`, "controls \b \f \n \r \t \x00 \x1f",
	"<html> & more", "é ü 日本", "\u2028 and \u2029", "invalid \xff\xfe utf-8", "\xe2\x80",
}

func TestAppendStringIsEncodingJSONs(t *testing.T) {
	for _, s := range samples {
		if got, want := string(AppendString(nil, s)), encodingJSON(t, s); got != want {
			t.Errorf("AppendString(%q) = %s, encoding/json writes %s", s, got, want)
		}
	}
}

func TestAppendSlogStringIsSlogs(t *testing.T) {
	for _, s := range samples {
		if got, want := string(AppendSlogString(nil, s)), slogJSON(t, s); got != want {
			t.Errorf("AppendSlogString(%q) = %s, slog writes %s", s, got, want)
		}
	}
}

// FuzzAppendString checks both encoders against the encoders they stand
// for, on any string.
func FuzzAppendString(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(AppendString(nil, s)), encodingJSON(t, s); got != want {
			t.Errorf("AppendString(%q) = %s, encoding/json writes %s", s, got, want)
		}
		if got, want := string(AppendSlogString(nil, s)), slogJSON(t, s); got != want {
			t.Errorf("AppendSlogString(%q) = %s, slog writes %s", s, got, want)
		}
	})
}
