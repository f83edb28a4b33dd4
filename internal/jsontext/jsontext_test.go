package jsontext

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
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

// TestAppendThousandthsIsStrconvs checks every thousandth below 300 and
// a spread of others up to a million, either sign, against strconv's 'f'
// and 'g' (which encoding/json and slog write for them), and that values
// it does not take (other fractions, -0, NaN, infinities, a million and
// more) are left to the caller untouched.
func TestAppendThousandthsIsStrconvs(t *testing.T) {
	check := func(f float64) {
		t.Helper()
		got, ok := AppendThousandths([]byte("x"), f)
		if !ok {
			t.Fatalf("AppendThousandths(%v) declined a thousandth", f)
		}
		for _, format := range []byte{'f', 'g'} {
			if want := "x" + strconv.FormatFloat(f, format, -1, 64); string(got) != want {
				t.Fatalf("AppendThousandths(%v) = %s, strconv's %c writes %s", f, got, format, want)
			}
		}
	}
	for n := int64(0); n < 300_000; n++ {
		check(float64(n) / 1000)
		check(-float64(n+1) / 1000)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 300_000 {
		check(float64(r.Int64N(1e9)) / 1000)
	}
	check(999_999.999)
	for _, f := range []float64{1.0 / 3, 0.0005, 1e-7, 123.4567, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e6, 1e21} {
		if got, ok := AppendThousandths([]byte("x"), f); ok || string(got) != "x" {
			t.Errorf("AppendThousandths(%v) = %s, %v; want it declined", f, got, ok)
		}
	}
}
