package jsonpatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// suiteCase is one record of the published JSON Patch test cases
// (testdata/json-patch-tests/README.md).
type suiteCase struct {
	Comment  string          `json:"comment"`
	Doc      json.RawMessage `json:"doc"`
	Patch    json.RawMessage `json:"patch"`
	Expected json.RawMessage `json:"expected"`
	Error    string          `json:"error"`
	Disabled bool            `json:"disabled"`
}

// TestJSONPatchTests runs every case of the published JSON Patch test
// cases: a result must equal the expected one as a JSON value, an
// expected error must be an error, and a disabled case is skipped with
// its comment as the reason.
func TestJSONPatchTests(t *testing.T) {
	var passed, skipped int
	for _, file := range []string{"spec_tests.json", "tests.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", "json-patch-tests", file))
		if err != nil {
			t.Fatal(err)
		}
		var cases []suiteCase
		if err := json.Unmarshal(data, &cases); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for i, c := range cases {
			if c.Doc == nil && c.Patch == nil {
				continue // A record with only a comment.
			}
			name := fmt.Sprintf("%s/%d", file, i)
			if c.Comment != "" {
				name += " " + c.Comment
			}
			t.Run(name, func(t *testing.T) {
				if c.Disabled {
					skipped++
					t.Skipf("disabled in the published cases: %q", c.Comment)
				}
				got, err := applyJSONPatch(c.Doc, c.Patch)
				if c.Error != "" {
					if err == nil {
						t.Fatalf("expected an error (%s), got %s", c.Error, got)
					}
					t.Logf("error as expected (%s): %v", c.Error, err)
					passed++
					return
				}
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				want := c.Expected
				if want == nil {
					// A case with neither an expected result nor an error
					// expects the document unchanged.
					want = c.Doc
				}
				if !equalJSON(got, want) {
					t.Fatalf("got %s, want %s", got, want)
				}
				checkValid(t, got)
				passed++
			})
		}
	}
	t.Logf("published JSON Patch cases: %d passed, %d skipped", passed, skipped)
}

// applyJSONPatch parses a patch and applies it, checking that every
// error is one of the package's exported error types.
func applyJSONPatch(doc, patch []byte) ([]byte, error) {
	p, err := Parse(patch)
	if err == nil {
		var out []byte
		out, err = p.Apply(doc)
		if err == nil {
			return out, nil
		}
	}
	var inv *InvalidError
	var con *ConflictError
	var d *DocumentError
	var big *TooLargeError
	if !errors.As(err, &inv) && !errors.As(err, &con) && !errors.As(err, &d) && !errors.As(err, &big) {
		return nil, fmt.Errorf("an error of no exported type: %T %w", err, err)
	}
	return nil, err
}

// checkValid fails a test whose result is not valid, compact JSON.
func checkValid(t testing.TB, out []byte) {
	t.Helper()
	if !json.Valid(out) {
		t.Fatalf("result is not valid JSON: %q", out)
	}
	var c []byte
	c = appendCompact(c, out)
	if string(c) != string(out) {
		t.Fatalf("result is not compact: %q", out)
	}
}
