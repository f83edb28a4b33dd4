package httpapi

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/udsproject/uds/pkg/uds"
)

// FuzzQuotaModeBody parses quota mode bodies: a refusal is a 400 naming
// the body or the mode; an accepted body is an object whose only member,
// "mode", is a string naming one of uds.QuotaModes exactly, and a body of
// that mode reads back the same.
func FuzzQuotaModeBody(f *testing.F) {
	for _, s := range []string{
		`{"mode":"strict"}`, `{"mode":"streamed"}`, `{"mode": "streamed" }`, `{"mode":"Streamed"}`, `{"mode":"STRICT"}`,
		`{"mode":" strict"}`, `{"mode":"lazy"}`, `{"mode":""}`, `{"mode":null}`, `{"mode":1}`, `{"mode":["strict"]}`,
		`{}`, `{"Mode":"strict"}`, `{"mode":"strict","mode":"streamed"}`, `{"mode":"strict","limit":1}`,
		`{"m\u006fde":"streamed"}`, `{"mode":"stre\u0061med"}`, "{\"mode\":\"\xff\"}", `{"mode":"\ud800"}`,
		`[]`, `null`, `"strict"`, ``, `{"mode":"strict"} {}`, `{"mode":"strict"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		mode, err := parseQuotaMode(body)
		if err != nil {
			checkRefusal(t, body, err)
			checkInvalidField(t, err, "body", "mode")
			return
		}
		m := objectMembers(t, body, "mode")
		var sent string
		if err := json.Unmarshal(m["mode"], &sent); err != nil || uds.QuotaMode(sent) != mode || !slices.Contains(uds.QuotaModes, mode) {
			t.Fatalf("mode %s read as %q (%v)", m["mode"], mode, err)
		}
		if again, err := parseQuotaMode(encodeJSON(t, map[string]uds.QuotaMode{"mode": mode})); err != nil || again != mode {
			t.Fatalf("mode %q read back as %q (%v)", mode, again, err)
		}
	})
}
