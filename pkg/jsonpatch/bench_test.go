package jsonpatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchDoc is a document of about 2 KB, compact as a store keeps it: a
// profile with nested objects, arrays, strings and numbers of several
// spellings.
func benchDoc() []byte {
	var b strings.Builder
	b.WriteString(`{"id":"user-0001","name":"Ada Lovelace","email":"ada@example.com","age":36,"score":98.50,"ratio":1e-3,"active":true,"address":{"street":"12 St James's Square","city":"London","postcode":"SW1Y 4JH","geo":{"lat":51.5074,"lng":-0.1340}},`)
	b.WriteString(`"tags":["mathematics","engines","poetry","analysis","notes"],"history":[`)
	for i := range 12 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"at":"2026-01-%02dT10:00:00Z","event":"login","ip":"192.0.2.%d","ok":true,"ms":%d.25}`, i+1, i+10, 100+i)
	}
	b.WriteString(`],"settings":{"theme":"dark","language":"en-GB","notifications":{"email":true,"sms":false,"push":true},"limits":[10,20,30,40]},`)
	b.WriteString(`"bio":"` + strings.Repeat("Wrote the first published algorithm for a machine. ", 6) + `"}`)
	return []byte(b.String())
}

// BenchmarkPatch2KB compares replacing one member of a 2 KB document
// with a merge patch and with a JSON Patch against what a server would
// otherwise do: encoding/json's Unmarshal into Go values, the change, and
// Marshal (which also loses number spellings and member order). Compact
// is json.Compact of the document, about what a PUT of it costs to read.
func BenchmarkPatch2KB(b *testing.B) {
	doc := benchDoc()
	merge := []byte(`{"address":{"city":"Paris"}}`)
	jp, err := Parse([]byte(`[{"op":"replace","path":"/address/city","value":"Paris"}]`))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("merge-patch", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := MergePatch(doc, merge); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json-patch", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jp.Apply(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json-patch-with-parse", func(b *testing.B) {
		patch := []byte(`[{"op":"replace","path":"/address/city","value":"Paris"}]`)
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			p, err := Parse(patch)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.Apply(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal-marshal", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			var v map[string]any
			if err := json.Unmarshal(doc, &v); err != nil {
				b.Fatal(err)
			}
			v["address"].(map[string]any)["city"] = "Paris"
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("compact", func(b *testing.B) {
		var buf bytes.Buffer
		b.SetBytes(int64(len(doc)))
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			if err := json.Compact(&buf, doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
