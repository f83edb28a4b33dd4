package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/udsproject/uds/pkg/policy"
	"github.com/udsproject/uds/pkg/uds"
)

// hostileValues are data values that have broken JSON readers: numbers no
// float holds, escapes, lone surrogates, repeated member names (plain and
// escaped), nesting at and past the limit.
var hostileValues = []string{
	`1`, `-0`, `1e1000000`, `-1E-400`, `0.1e-999999`, `123456789012345678901234567890.5`, `1.0`,
	`"x"`, `"\ud800"`, `"\u0000"`, `"é\u2028<&>"`, `"\\\"\/"`, `true`, `null`, `[]`, `{}`,
	`{"n":99,"n":1}`, `{"a":1,"\u0061":2}`, `[{"a":{"b":1,"c":{},"b":2}}]`, `{"Data":1,"data":2}`,
	`{"a":1,"A":2}`, `{"":1,"a":{"":2}}`, deepJSON(200),
}

// writeSeeds are POST and PUT bodies from the tests of bad input: member
// names in another case, unknown and repeated members, every form of
// ttl, expiresAt and className, white space, invalid UTF-8, a byte-order
// mark and trailing content.
func writeSeeds() []string {
	seeds := []string{
		``, ` `, `null`, `[1,2]`, `data=1`, `{"data":{"a":`, `{}`, `{"className":"x"}`, `{"data":null}`,
		`{"data":1,"createdBySubject":"mallory"}`, `{"Data":1}`, `{"data":1,"DATA":2}`, `{"data":1,"TTL":60}`,
		`{"data":1,"data":2}`, `{"d\u0061ta":1}`, `{"data":1,"className":5}`, `{"data":1,"className":"a\u0000b"}`,
		`{"data":1,"className":null}`, `{"data":1,"className":"C\u00e9"}`, `{"data":1} {"data":2}`, "{\"data\":\"\xff\"}",
		"\ufeff{\"data\":1}", ` { "data" : [ 1 , 2 ] , "className" : "x" } `, `{"data":1,"ttl":null,"expiresAt":null}`,
		`{"data":1,"className":"` + strings.Repeat("c", maxClassNameBytes+1) + `"}`,
		`{"data":1,"ttl":60,"expiresAt":"2030-01-15T10:30:00Z"}`,
		deepJSON(10000), `{"data":` + deepJSON(9999) + `}`, `{"data":` + deepJSON(10000) + `}`,
	}
	for _, v := range hostileValues {
		seeds = append(seeds, `{"data":`+v+`}`)
	}
	for _, b := range []string{
		`"dataBase64":"iVBORw0KGgo=","contentType":"image/png"`, `"dataBase64":"","contentType":"application/octet-stream"`,
		`"dataBase64":"AA","contentType":"image/png"`, `"dataBase64":"A===","contentType":"image/png"`, `"dataBase64":"AA==\n","contentType":"a/b"`,
		`"dataBase64":"AA==","contentType":"application/json"`, `"dataBase64":"AA==","contentType":"text/plain; charset=utf-8"`,
		`"dataBase64":"AA==","contentType":"image"`, `"dataBase64":"AA==","contentType":""`, `"dataBase64":"AA==","contentType":"a/b\u0000"`,
		`"dataBase64":"AA=="`, `"contentType":"image/png"`, `"dataBase64":null,"contentType":"image/png"`, `"dataBase64":1,"contentType":"image/png"`,
		`"data":1,"dataBase64":"AA==","contentType":"image/png"`, `"data":null,"dataBase64":"AA==","contentType":"image/png"`,
		`"dataBase64":"AA==","contentType":"image/png","ttl":60`, `"dataBase64":"_-8=","contentType":"image/png"`,
	} {
		seeds = append(seeds, `{`+b+`}`)
	}
	for _, ttl := range []string{`60`, `0`, `01`, `-1`, `1.0`, `1e3`, `"60"`, `315360000`, `315360001`, `9223372036854775808`} {
		seeds = append(seeds, `{"data":1,"ttl":`+ttl+`}`)
	}
	for _, at := range []string{`1700000000000`, `"2030-01-15T10:30:00Z"`, `"2030-01-15T10:30:00.123456789+05:30"`,
		`"2000-01-01T00:00:00Z"`, `"2999-01-01T00:00:00Z"`, `"x"`, `""`, `"2030-01-15 10:30:00"`} {
		seeds = append(seeds, `{"data":1,"expiresAt":`+at+`}`)
	}
	return seeds
}

// FuzzParseWrite parses item bodies (POST and PUT, and every write of a
// batch): what it accepts is an object of the write's members only, whose
// data is stored as json.Compact has it, whose className is the string
// sent and whose expiry is the one asked for; the one-pass reader of the
// common form agrees with the strict decoder.
func FuzzParseWrite(f *testing.F) {
	for _, s := range writeSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkOnePass(t, body)
		var w uds.Write
		err := parseWrite(body, &w, fuzzNow)
		if err != nil {
			checkRefusal(t, body, err)
			checkInvalidField(t, err, "body", "data", "className", "ttl", "expiresAt", "dataBase64", "contentType")
			return
		}
		m := objectMembers(t, body, "data", "className", "ttl", "expiresAt", "dataBase64", "contentType")
		if w.Binary != nil {
			checkInlineBinary(t, w, m)
		} else {
			checkStoredJSON(t, w.Data, m["data"])
		}
		var class string
		if present(m["className"]) && json.Unmarshal(m["className"], &class) != nil {
			t.Fatalf("accepted className %s, which is not a string", m["className"])
		}
		if w.ClassName != class {
			t.Fatalf("className %q, sent %s", w.ClassName, m["className"])
		}
		checkExpiry(t, m["ttl"], m["expiresAt"], w.ExpiresAt, fuzzNow)
	})
}

// checkInlineBinary checks a binary value a JSON body carried: its bytes
// are dataBase64's in standard base64, its content type is contentType
// (a media type that is not JSON), and there is no data.
func checkInlineBinary(t *testing.T, w uds.Write, m map[string]json.RawMessage) {
	t.Helper()
	var encoded, contentType string
	if json.Unmarshal(m["dataBase64"], &encoded) != nil || json.Unmarshal(m["contentType"], &contentType) != nil {
		t.Fatalf("accepted dataBase64 %s and contentType %s, which are not both strings", m["dataBase64"], m["contentType"])
	}
	bytes, err := base64.StdEncoding.Strict().DecodeString(encoded)
	switch {
	case err != nil:
		t.Fatalf("accepted dataBase64 %q, which is not standard base64", encoded)
	case string(bytes) != string(w.Binary.Bytes) || int64(len(bytes)) != w.Binary.Size:
		t.Fatalf("dataBase64 %q stored as %d bytes (size %d)", encoded, len(w.Binary.Bytes), w.Binary.Size)
	case present(m["data"]) || w.Data != nil:
		t.Fatalf("accepted data %s beside a binary value", m["data"])
	case uds.IsJSONType(w.Binary.ContentType) || uds.MediaType(w.Binary.ContentType) != uds.MediaType(contentType):
		t.Fatalf("contentType %q stored as %q", contentType, w.Binary.ContentType)
	}
}

// checkOnePass holds splitWriteBody, the one-pass reader of the common
// form of a write body, to the strict decoder: whatever it takes, the
// decoder takes, with the same members.
func checkOnePass(t *testing.T, body []byte) {
	t.Helper()
	if !utf8.Valid(body) { // parseWrite refuses it before either reads it
		return
	}
	var fast, slow writeBody
	data, ok := splitWriteBody(body, &fast)
	if !ok {
		return
	}
	if err := decodeStrict(body, &slow); err != nil {
		t.Fatalf("the one-pass reader takes %q, which the strict decoder refuses: %v", body, err)
	}
	fast.Data = data
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("the one-pass reader reads %q as %+v, the strict decoder as %+v", body, fast, slow)
	}
}

// checkExpiry checks the expiry a write was given against its ttl and
// expiresAt members, taken against now: the ttl from now exactly.
func checkExpiry(t *testing.T, ttl, at json.RawMessage, got, now time.Time) {
	t.Helper()
	if !got.IsZero() && (got.Location() != time.UTC || !got.Equal(got.Truncate(time.Millisecond))) {
		t.Fatalf("expiry %v is not UTC to the millisecond", got)
	}
	switch {
	case present(ttl):
		n, err := strconv.ParseInt(string(ttl), 10, 64)
		if err != nil || n < 1 || n > int64(uds.MaxTTL/time.Second) {
			t.Fatalf("accepted ttl %s", ttl)
		}
		d := time.Duration(n) * time.Second
		if !got.Equal(now.Add(d).UTC().Truncate(time.Millisecond)) {
			t.Fatalf("ttl %s gave expiry %v, taken against %v", ttl, got, now)
		}
	case present(at):
		var s string
		if err := json.Unmarshal(at, &s); err != nil {
			t.Fatalf("accepted expiresAt %s, which is not a string", at)
		}
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || !want.After(now) || want.Sub(now) > uds.MaxTTL {
			t.Fatalf("accepted expiresAt %q (%v), taken against %v", s, err, now)
		}
		if !got.Equal(want.Truncate(time.Millisecond)) {
			t.Fatalf("expiresAt %q gave expiry %v", s, got)
		}
	case !got.IsZero():
		t.Fatalf("expiry %v without ttl or expiresAt", got)
	}
}

// FuzzBatchBody parses batch bodies as the batch route does (decodeBatch,
// then checkBatch): an accepted batch holds 1 to its limit of operations,
// each as its single-item route would take it (body, If-Match), and an
// atomic one no GET and no item twice.
func FuzzBatchBody(f *testing.F) {
	op := func(method, path, body string) string {
		if body != "" {
			body = `,"body":` + body
		}
		return `{"method":"` + method + `","path":"` + path + `"` + body + `}`
	}
	batch := func(atomic bool, ops ...string) string {
		return `{"atomic":` + strconv.FormatBool(atomic) + `,"operations":[` + strings.Join(ops, ",") + `]}`
	}
	many := make([]string, uds.MaxAtomicOps+1)
	for i := range many {
		many[i] = op("DELETE", fmt.Sprintf("kv/k%d", i), "")
	}
	for _, s := range []string{
		batch(false, op("POST", "kv/a", `{"data":1}`), op("GET", "kv/b", ""), op("put", "/kv/c/", `{"data":{"x":[1]},"ttl":60}`),
			op("DELETE", "lists/l/2024%2F01", "")),
		batch(true, op("POST", "kv/a", `{"data":1}`), op("PUT", "kv/b/s", `{"data":"x","className":"C"}`)),
		batch(true, op("POST", "kv/a", `{"data":1}`), op("DELETE", "kv/a", "")),
		batch(true, op("GET", "kv/a", "")),
		batch(true, op("POST", "kv/a?restore=1", ""), `{"method":"POST","path":"kv/b?restore=2","ifMatch":"*"}`),
		batch(false, many...), batch(true, many...), batch(false),
		`{"operations":[{"method":"PUT","path":"kv/a","body":{"data":1},"ifMatch":"\"1-lq2x0a\", W/\"2-x\""}]}`,
		`{"operations":[{"method":"GET","path":"kv/a","ifNoneMatch":"*"},{"method":"GET","path":"kv/a","ifMatch":"*"}]}`,
		`{"operations":[{"method":"DELETE","path":"kv/a","ifNoneMatch":"\"1-a\""}]}`,
		`{"operations":[{"method":"PATCH","path":"kv/a"}]}`,
		batch(true, op("PATCH", "kv/a", `{"x":null,"y":[1]}`), `{"method":"patch","path":"kv/b/s","contentType":"application/json-patch+json","body":[{"op":"move","from":"/a","path":"/b"}],"ifMatch":"*"}`),
		`{"operations":[{"method":"PATCH","path":"kv/a","contentType":"application/merge-patch+json; charset=utf-8","body":"x"}]}`,
		`{"operations":[{"method":"PATCH","path":"kv/a","contentType":"application/json-patch+json","body":[{"op":"test","path":"/a"}]}]}`,
		`{"operations":[{"method":"PATCH","path":"kv/a","contentType":"text/plain","body":{}}]}`,
		`{"operations":[{"method":"PUT","path":"kv/a","contentType":"application/json-patch+json","body":{"data":1}}]}`,
		`{"operations":[{"method":"POST","path":"kv/a"}]}`,
		`{"operations":[{"method":"GET","path":"kv/a","body":{"data":1}}]}`,
		`{"operations":[],"OPERATIONS":[{"method":"GET","path":"kv/a"}]}`,
		`{"operations":[{"method":"GET","path":"kv/a"}],"operations":[{"method":"POST","path":"kv/a","body":{"data":1}}]}`,
		`{"operations":[{"Method":"POST","path":"kv/a","body":{"data":1}}]}`,
		`{"operations":[{"method":"POST","path":"kv/a","body":{"data":1},"owner":"x"}]}`,
		`{"operations":[{"method":"POST","path":"kv/a","body":{"DATA":1}}]}`,
		`{"operations":[{"method":"POST","path":"kv/a","body":{"data":{"n":99,"n":1}}}]}`,
		`{"operations":[{"method":"POST","path":"kv/a/z//","body":{"data":1}}]}`,
		`{"operations":[{"method":"POST","path":"kv/a/list","body":{"data":1}}]}`,
		`{"operations":[{"method":"POST","path":"kv","body":{"data":1}}]}`,
		`{"operations":[{"method":"POST","path":"k%7Cv/a%zz","body":{"data":1}}]}`,
		`{"operations":{"method":"GET","path":"kv/a"}}`, `{"atomic":"yes","operations":[]}`, `[]`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := decodeBatch(body)
		var ops []batchOp
		if err == nil {
			ops, err = checkBatch(fuzzApp, "alice", &b, fuzzNow)
		}
		if err != nil {
			checkRefusal(t, body, err)
			checkInvalidField(t, err, "body", "operations", "atomic")
			return
		}
		objectMembers(t, body, "atomic", "operations")
		limit := uds.MaxBatchOps
		if b.Atomic {
			limit = uds.MaxAtomicOps
		}
		if len(ops) != len(b.Operations) || len(ops) < 1 || len(ops) > limit {
			t.Fatalf("accepted %d operations of %d (atomic %v)", len(ops), len(b.Operations), b.Atomic)
		}
		seen := map[uds.Key]bool{}
		for i, op := range ops {
			checkBatchOperation(t, b.Operations[i], op, b.Atomic)
			if b.Atomic && seen[op.Write.Key] {
				t.Fatalf("an atomic batch writes %+v twice", op.Write.Key)
			}
			seen[op.Write.Key] = true
		}
	})
}

// FuzzPatchBody parses PATCH bodies of both kinds (parsePatch) and
// applies each accepted one to a document a PUT would take: what it
// accepts is UTF-8 and names no member twice, and so is what it makes of
// the document, so that a patch never stores what a PUT refuses.
func FuzzPatchBody(f *testing.F) {
	patches := []string{
		`{"a":1}`, `{"a":null,"b":{"c":[1]}}`, `[1,2]`, `"x"`, `null`, ``, `{`, "{\"s\":\"\xff\"}", "{\"\xff\":1}",
		`[{"op":"add","path":"/a","value":1}]`, `[{"op":"add","path":"/q","value":{"a":1,"a":2}}]`,
		`[{"op":"replace","path":"","value":{"age":-5,"age":3}}]`, `[{"op":"move","from":"/a","path":"/b"}]`,
		`[{"op":"add","path":"/\u00e9","value":2}]`, `[{"op":"add","op":"remove","path":"/a"}]`,
	}
	for _, p := range append(patches, hostileValues...) {
		for _, kind := range []bool{false, true} {
			f.Add(kind, []byte(`{"a":1,"\u00e9":{"\ud800":[0]}}`), []byte(p))
		}
	}
	f.Fuzz(func(t *testing.T, jsonPatch bool, doc, body []byte) {
		kind := MergePatchType
		if jsonPatch {
			kind = JSONPatchType
		}
		patch, err := parsePatch(kind, body)
		if err != nil {
			checkRefusal(t, body, err)
			checkInvalidField(t, err, "patch")
			return
		}
		if !utf8.Valid(body) {
			t.Fatalf("%s %q accepted: not UTF-8", kind, body)
		}
		if _, err := compactJSON(nil, body); err != nil {
			t.Fatalf("%s %q accepted, which a JSON body may not be: %v", kind, body, err)
		}
		if _, err := compactJSON(nil, doc); err != nil || !utf8.Valid(doc) {
			return // a document no write stores
		}
		out, err := patch(doc)
		if err != nil {
			return // a conflict or a result too large: nothing is written
		}
		if _, err := compactJSON(nil, out); err != nil || !utf8.Valid(out) {
			t.Fatalf("%s %s makes %s of %s, which a PUT refuses (%v)", kind, body, out, doc, err)
		}
	})
}

// checkBatchOperation checks an accepted operation against what its
// single-item route takes.
func checkBatchOperation(t *testing.T, o batchOpJSON, op batchOp, atomic bool) {
	t.Helper()
	switch op.Method {
	case "POST", "PUT", "PATCH", "DELETE":
	case "GET":
		if atomic {
			t.Fatalf("an atomic batch takes %+v", o)
		}
	default:
		t.Fatalf("accepted method %q", o.Method)
	}
	if op.Method != strings.ToUpper(o.Method) || op.Write.Subject != "alice" {
		t.Fatalf("%+v became %+v", o, op)
	}
	checkOperationPath(t, op, o.Path)
	writes := op.Method == "POST" && !op.restores() || op.Method == "PUT"
	patches := op.Method == "PATCH"
	if (writes || patches) != present(o.Body) || (patches != (op.patch != nil)) || (!patches && o.ContentType != "") {
		t.Fatalf("%s with body %s and contentType %q accepted", op.Method, o.Body, o.ContentType)
	}
	if patches {
		kind := MergePatchType
		if o.ContentType != "" {
			var err error
			if kind, err = patchKind(o.ContentType); err != nil {
				t.Fatalf("contentType %q accepted in a batch, refused on the route: %v", o.ContentType, err)
			}
		}
		if _, err := parsePatch(kind, o.Body); err != nil {
			t.Fatalf("patch %s accepted in a batch, refused on the route: %v", o.Body, err)
		}
	}
	var want uds.Write
	if writes {
		if err := parseWrite(o.Body, &want, fuzzNow); err != nil {
			t.Fatalf("body %s accepted in a batch, refused on its route: %v", o.Body, err)
		}
	}
	if !bytes.Equal(op.Write.Data, want.Data) || op.Write.ClassName != want.ClassName || op.Write.ExpiresAt.IsZero() != want.ExpiresAt.IsZero() {
		t.Fatalf("body %s is %+v in a batch, %+v on its route", o.Body, op.Write, want)
	}
	var pre uds.Precondition
	if o.IfMatch != "" {
		var err error
		if pre, err = parseIfMatch(o.IfMatch); err != nil || (op.Method != "PUT" && op.Method != "PATCH" && op.Method != "DELETE" && !op.restores()) {
			t.Fatalf("ifMatch %q accepted on %s (%v)", o.IfMatch, op.Method, err)
		}
	}
	if !reflect.DeepEqual(op.Write.IfMatch, pre) {
		t.Fatalf("ifMatch %q is %+v in a batch, %+v on a route", o.IfMatch, op.Write.IfMatch, pre)
	}
	if o.IfNoneMatch != "" && op.Method != "GET" {
		t.Fatalf("ifNoneMatch accepted on %s", op.Method)
	}
}

// recordMembers are the members of an exported record.
var recordMembers = fieldsOf(reflect.TypeFor[recordJSON]()).names

// FuzzImportRecords parses import bodies: every accepted record is a valid
// item of the app (key, owner, subjects, version, dates to the
// millisecond, an expiry within ten years), its data stored as
// json.Compact has it; and the records, exported, import back to the
// same records (an export, imported and exported again, gives the same
// bytes).
func FuzzImportRecords(f *testing.F) {
	const good = `{"namespace":"kv","id":"ok","owner":"alice","data":1,"createdDate":"2026-01-02T03:04:05.678Z","createdBySubject":"alice","updatedDate":"2026-01-02T03:04:05.678Z","updatedBySubject":"alice","version":1}`
	with := func(old, new string) string { return `{"records":[` + strings.Replace(good, old, new, 1) + `]}` }
	for _, s := range []string{
		`{"records":[` + good + `]}`, `{"records":[` + good + `,` + good + `]}`, `{"records":[]}`, `{"records":[`, `{"Records":[]}`, `{}`,
		with(`"version":1`, `"version":1,"app":"x"`), with(`"version":1`, `"Version":1`), with(`"version":1`, `"version":1,"version":2`),
		with(`"data":1`, `"data":{"n":99,"n":1}`), with(`"version":1`, `"version":9007199254740991`),
		with(`"version":1`, `"version":9007199254740992`), with(`"version":1`, `"version":-1`), with(`"version":1`, `"version":1.5`),
		with(`"owner":"alice"`, "\"owner\":\"al\xffce\""), with(`"owner":"alice"`, `"owner":"al\udc00ce"`),
		with(`"owner":"alice"`, `"owner":"a\u0001"`), with(`"owner":"alice"`, `"owner":""`),
		with(`"owner"`, `"private":true,"owner"`), with(`"owner":"alice"`, `"private":true,"owner":"`+strings.Repeat("o", 1024)+`"`),
		with(`"version":1`, `"version":1,"expiresAt":"2999-01-01T00:00:00Z"`), with(`"version":1`, `"version":1,"expiresAt":"2020-01-01T00:00:00Z"`),
		with(`"2026-01-02T03:04:05.678Z"`, `"yesterday"`), with(`"2026-01-02T03:04:05.678Z"`, `"2026-01-02T03:04:05.678912345+05:30"`),
		with(`"2026-01-02T03:04:05.678Z"`, `"0000-01-01T00:00:00+01:00"`), with(`"2026-01-02T03:04:05.678Z"`, `"9999-12-31T23:00:00-05:00"`),
		with(`"kv"`, `"a|b"`), with(`"ok"`, `""`), with(`"id":"ok"`, `"id":"ok","sortKey":"list"`),
		with(`"id":"ok"`, `"id":"ok","sortKey":"2024/01/x"`), with(`"id":"ok"`, `"id":"ok","sortKey":"z/"`),
		with(`"data":1`, `"data":null`), with(`"data":1`, `"data":1,"className":"a\u0001"`),
		with(`"data":1`, `"contentType":"image/png","size":5000000,"large":true`), `{"records":[` + good + `,` + strings.NewReplacer(`"ok"`, `"big"`, `"data":1`, `"contentType":"image/png","size":5000000,"large":true`).Replace(good) + `]}`, with(`"data":1`, `"data":`+deepJSON(200)),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := parseRecords(body, fuzzApp)
		if err != nil {
			checkRefusal(t, body, err)
			checkInvalidField(t, err, "body", "records")
			return
		}
		var raw []json.RawMessage
		if err := json.Unmarshal(objectMembers(t, body, "records", "cursor", "apps")["records"], &raw); err != nil || len(raw) != len(b.records)+len(b.left) ||
			len(raw) < 1 || len(raw) > uds.MaxImportRecords {
			t.Fatalf("accepted %d records and left out %d of %d (%v)", len(b.records), len(b.left), len(raw), err)
		}
		for n := range b.records {
			checkRecord(t, &b.records[n], objectMembers(t, raw[b.at[n]], recordMembers...))
		}
		for _, l := range b.left {
			if m := objectMembers(t, raw[l.Index], recordMembers...); string(m["large"]) != "true" {
				t.Fatalf("left out record %d, not a large value: %s", l.Index, raw[l.Index])
			}
		}
		if len(b.records) == 0 {
			return
		}
		exported := exportRecords(t, b.records)
		again, err := parseRecords(exported, fuzzApp)
		if err != nil {
			t.Fatalf("the export of accepted records does not import: %v\n%s", err, exported)
		}
		if back := exportRecords(t, again.records); !bytes.Equal(back, exported) {
			t.Fatalf("records exported as\n%s\nimport back as\n%s", exported, back)
		}
	})
}

// checkRecord checks an accepted record against the members it came from.
func checkRecord(t *testing.T, rec *uds.Record, m map[string]json.RawMessage) {
	t.Helper()
	checkStoredJSON(t, rec.Data, m["data"])
	k := rec.Key
	list, err := uds.NewKey(k.App, k.Namespace, k.ID)
	if err != nil || k.App != fuzzApp {
		t.Fatalf("record key %+v: %v", k, err)
	}
	if k.SortKey != "" {
		if list, err = list.WithSortKey(k.SortKey); err != nil {
			t.Fatalf("record key %+v: %v", k, err)
		}
	}
	private := string(m["private"]) == "true"
	if private != (k.Owner != "") || (private && k.Owner != rec.Owner) {
		t.Fatalf("record (private %s, owner %q) has key %+v", m["private"], rec.Owner, k)
	}
	if list.Owner = k.Owner; list != k || len(k.DataKey()) > uds.MaxDataKeyBytes {
		t.Fatalf("record key %+v is not valid", k)
	}
	for _, s := range []string{rec.Owner, rec.CreatedBy, rec.UpdatedBy} {
		if !uds.ValidSubject(s) {
			t.Fatalf("record takes subject %q", s)
		}
	}
	if rec.Owner == "" || rec.Version < 0 || rec.Version > uds.MaxVersion || checkClassName(rec.ClassName) != nil {
		t.Fatalf("record takes owner %q, version %d, className %q", rec.Owner, rec.Version, rec.ClassName)
	}
	for _, tm := range []time.Time{rec.CreatedDate, rec.UpdatedDate, rec.ExpiresAt} {
		if !tm.IsZero() && (tm.Location() != time.UTC || !tm.Equal(tm.Truncate(time.Millisecond))) {
			t.Fatalf("record time %v is not UTC to the millisecond", tm)
		}
	}
	if time.Until(rec.ExpiresAt) > uds.MaxTTL {
		t.Fatalf("record expires at %v, past ten years ahead", rec.ExpiresAt)
	}
}

// exportRecords is records as the export route writes them.
func exportRecords(t *testing.T, records []uds.Record) []byte {
	t.Helper()
	out := exportJSON{Records: make([]recordJSON, len(records))}
	for i := range records {
		out.Records[i] = toRecordJSON(&records[i])
	}
	return encodeJSON(t, out)
}

// encodeJSON encodes v as writeJSON does, without escaping HTML.
func encodeJSON(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// FuzzPolicyBody parses policy bodies, the envelope around a schema
// (pkg/policy's FuzzCheck fuzzes schemas and data): an accepted policy
// has the access mode sent, the schema sent, compacted, which compiles,
// and the history sent, whole numbers within bounds; and the policy as the
// admin routes show it can be set again and means the same.
func FuzzPolicyBody(f *testing.F) {
	for _, s := range []string{
		`{"access":"shared"}`, `{"access":"private","schema":null}`, `{"access":"owner-write","schema":{"type":"object","required":["title"],"properties":{"title":{"type":"string"}}}}`,
		`{"Access":"private"}`, `{"access":"PRIVATE"}`, `{"access":null}`, `{"access":1}`, `{}`, `{"schema":{}}`, `{"access":"shared","access":"private"}`,
		`{"access":"shared","schema":{"type":"number","type":"string"}}`, `{"access":"shared","schema":{"$ref":"https://example.com/s.json"}}`,
		`{"access":"shared","schema":{"$schema":"http://json-schema.org/draft-04/schema#","maximum":1e1000001,"exclusiveMaximum":true}}`,
		`{"access":"shared","schema":{"$schema":"nope"}}`, `{"access":"shared","schema":true}`, `{"access":"shared","schema":"x"}`,
		`{"access":"shared","schema":{"pattern":"("}}`, `{"access":"shared","schema":{"description":"<&>\u2028"}}`,
		`{"access":"shared","schema":` + deepJSON(500) + `}`, `{"access":"shared","schema":{"type":"object"},"version":3}`,
		`{"access":"shared","schema":{"properties":{"a":{"minimum":-0.0e-1000001}}}}`,
	} {
		f.Add([]byte(s))
	}
	for _, h := range []string{
		`null`, `{}`, `{"versions":10}`, `{"versions":10,"days":30}`, `{"versions":0}`, `{"versions":0,"days":30}`,
		`{"versions":100,"days":3650}`, `{"versions":101}`, `{"versions":1,"days":3651}`, `{"versions":-1}`, `{"versions":1,"days":-1}`,
		`{"versions":1,"days":0}`, `{"versions":1,"days":null}`, `{"versions":null}`, `{"versions":-0}`, `{"versions":1.0}`,
		`{"versions":1.5}`, `{"versions":1e1}`, `{"versions":"5"}`, `{"versions":true}`, `{"versions":9223372036854775808}`,
		`{"versions":1e1000000}`, `{"versions":1,"Days":3}`, `{"Versions":1}`, `{"versions":1,"keep":2}`, `{"versions":1,"versions":2}`,
		`{"days":30}`, `5`, `[]`, `"on"`, `{"versions":{"n":1}}`,
	} {
		f.Add([]byte(`{"access":"shared","history":` + h + `}`))
	}
	for _, ix := range []string{
		`null`, `[]`, `[{"name":"byStatus","path":"/status","type":"string"}]`, `[{"name":"n","path":"","type":"number"}]`,
		`[{"name":"a","path":"/a~1b/0","type":"string"},{"name":"b","path":"/b","type":"number"}]`, `[{"name":"a","path":"a","type":"string"}]`,
		`[{"name":"a","path":"/a~2","type":"string"}]`, `[{"name":"a","type":"string"}]`, `[{"name":"a","path":"/a","type":"bool"}]`,
		`[{"name":"a b","path":"/a","type":"string"}]`, `[{"name":"","path":"/a","type":"string"}]`, `[{"name":"a","path":"/a","type":"string","unique":true}]`,
		`[{"name":"a","path":"/a","type":"string"},{"name":"a","path":"/b","type":"string"}]`, `{"name":"a"}`, `[1]`, `[null]`,
		`[{"name":"a","path":null,"type":"string"}]`, `[{"name":"a","path":"/a","type":"string","name":"b"}]`,
	} {
		f.Add([]byte(`{"access":"shared","indexes":` + ix + `}`))
	}
	for _, b := range []string{
		`null`, `{}`, `{"contentTypes":["image/png"]}`, `{"contentTypes":["image/*","application/pdf"],"maxBytes":1048576}`,
		`{"contentTypes":[]}`, `{"contentTypes":["IMAGE/PNG"]}`, `{"contentTypes":["*/*"]}`, `{"contentTypes":["image/"]}`, `{"contentTypes":["/png"]}`,
		`{"contentTypes":["application/json"]}`, `{"contentTypes":["application/ld+json"]}`, `{"contentTypes":["text/plain; charset=utf-8"]}`,
		`{"contentTypes":["image/png"],"maxBytes":0}`, `{"contentTypes":["image/png"],"maxBytes":5368709120}`, `{"contentTypes":["image/png"],"maxBytes":5368709121}`,
		`{"contentTypes":["image/png"],"maxBytes":1.5}`, `{"contentTypes":["image/png"],"maxBytes":"1"}`, `{"contentTypes":["image/png"],"maxBytes":null}`,
		`{"contentTypes":"image/png"}`, `{"contentTypes":[1]}`, `{"contentTypes":["image/png"],"ContentTypes":["a/b"]}`, `{"maxBytes":5}`, `["image/png"]`,
	} {
		f.Add([]byte(`{"access":"shared","binary":` + b + `}`))
	}
	var cache policy.Cache
	f.Fuzz(func(t *testing.T, body []byte) {
		pol, err := parsePolicy(body, &cache)
		if err != nil {
			checkRefusal(t, body, err)
			checkInvalidField(t, err, "body", "access", "schema", "history", "indexes", "binary")
			return
		}
		m := objectMembers(t, body, "access", "schema", "history", "indexes", "binary")
		var access string
		if err := json.Unmarshal(m["access"], &access); err != nil || string(pol.Access) != access {
			t.Fatalf("access %s read as %q", m["access"], pol.Access)
		}
		if present(m["schema"]) {
			if !bytes.Equal(pol.Schema, compactOf(t, m["schema"])) {
				t.Fatalf("schema %s stored as %s", m["schema"], pol.Schema)
			}
			if _, err := policy.Compile(pol.Schema); err != nil {
				t.Fatalf("accepted a schema that does not compile: %v", err)
			}
		} else if pol.Schema != nil {
			t.Fatalf("no schema sent, %s stored", pol.Schema)
		}
		if want := historySent(t, m["history"]); pol.History != want {
			t.Fatalf("history %s read as %+v, want %+v", m["history"], pol.History, want)
		}
		if want := indexesSent(t, m["indexes"]); !reflect.DeepEqual(pol.Indexes, want) {
			t.Fatalf("indexes %s read as %+v, want %+v", m["indexes"], pol.Indexes, want)
		}
		checkBinaryRule(t, m["binary"], pol.Binary)
		shown := policyBody(fuzzApp, "ns", pol, fuzzNow)
		declared := make([]map[string]any, len(shown.Indexes))
		for i, ix := range shown.Indexes {
			declared[i] = map[string]any{"name": ix.Name, "path": ix.Path, "type": ix.Type}
		}
		again, err := parsePolicy(encodeJSON(t, map[string]any{"access": shown.Access, "schema": shown.Schema, "history": shown.History, "indexes": declared, "binary": shown.Binary}), &cache)
		if err != nil || !reflect.DeepEqual(again, pol) {
			t.Fatalf("the policy shown (%s, %s, %+v) sets %+v (%v), not %+v", shown.Access, shown.Schema, shown.History, again, err, pol)
		}
	})
}

// checkBinaryRule checks the binary rule an accepted policy body's binary
// member set: none when absent or null; otherwise 1 to uds.MaxBinaryTypes
// content types, each the one sent in lower case and none JSON, and a
// size cap of 1 to 5 GB, or 0 when not given.
func checkBinaryRule(t *testing.T, raw json.RawMessage, got *uds.BinaryRule) {
	t.Helper()
	if !present(raw) {
		if got != nil {
			t.Fatalf("no binary rule sent, %+v set", got)
		}
		return
	}
	m := objectMembers(t, raw, "contentTypes", "maxBytes")
	var types []string
	if err := json.Unmarshal(m["contentTypes"], &types); err != nil || len(types) == 0 || len(types) > uds.MaxBinaryTypes || got == nil || len(got.ContentTypes) != len(types) {
		t.Fatalf("binary contentTypes %s set as %+v", m["contentTypes"], got)
	}
	for i, ct := range types {
		if got.ContentTypes[i] != strings.ToLower(strings.TrimSpace(ct)) || uds.IsJSONType(got.ContentTypes[i]) || !strings.Contains(got.ContentTypes[i], "/") {
			t.Fatalf("content type %q set as %q", ct, got.ContentTypes[i])
		}
	}
	if got.MaxBytes < 0 || got.MaxBytes > uds.MaxObjectBytes || (got.MaxBytes == 0) != !present(m["maxBytes"]) {
		t.Fatalf("maxBytes %s set as %d", m["maxBytes"], got.MaxBytes)
	}
}

// historySent is the history an accepted policy body's history member
// sets, read on its own: none when absent or null, otherwise an object of
// versions (required, 0 to 100) and days (1 to 3650 when given, 0 when
// absent or null), with no days without versions.
func historySent(t *testing.T, raw json.RawMessage) uds.History {
	t.Helper()
	if !present(raw) {
		return uds.History{}
	}
	m := objectMembers(t, raw, "versions", "days")
	number := func(name string, least, limit int) int {
		if !present(m[name]) {
			return 0
		}
		n, err := strconv.Atoi(string(m[name]))
		if err != nil || n < least || n > limit {
			t.Fatalf("accepted history.%s %s", name, m[name])
		}
		return n
	}
	if !present(m["versions"]) {
		t.Fatalf("accepted history %s without versions", raw)
	}
	h := uds.History{Versions: number("versions", 0, uds.MaxHistoryVersions), Days: number("days", 1, uds.MaxHistoryDays)}
	if !h.On() && h.Days != 0 {
		t.Fatalf("accepted history %s: days without versions", raw)
	}
	return h
}

// indexesSent is the indexes an accepted policy body's indexes member
// declares, read on its own: none when absent, null or empty, otherwise each
// object's name, path and type, checked as uds.ValidateIndexes checks
// them.
func indexesSent(t *testing.T, raw json.RawMessage) []uds.Index {
	t.Helper()
	if !present(raw) {
		return nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("accepted indexes %s, not an array", raw)
	}
	if len(list) == 0 {
		return nil
	}
	out := make([]uds.Index, len(list))
	for i, item := range list {
		m := objectMembers(t, item, "name", "path", "type")
		var path string
		if !present(m["path"]) || json.Unmarshal(m["path"], &path) != nil {
			t.Fatalf("accepted index %s without a path", item)
		}
		var name, typ string
		_ = json.Unmarshal(m["name"], &name)
		_ = json.Unmarshal(m["type"], &typ)
		out[i] = uds.Index{Name: name, Path: path, Type: uds.IndexType(typ)}
	}
	if err := uds.ValidateIndexes(out); err != nil {
		t.Fatalf("accepted indexes %s: %v", raw, err)
	}
	return out
}

// FuzzLimitsBody parses quota bodies: accepted limits are the whole
// numbers sent, each -1 or more (0 where none is sent), and read back the
// same from the body that shows them.
func FuzzLimitsBody(f *testing.F) {
	for _, s := range []string{
		`{"limitBytes":1048576,"limitItems":100}`, `{"limitBytes":-1}`, `{"limitItems":0}`, `{}`, `{"limitBytes":null}`,
		`{"limitBytes":-2}`, `{"limitBytes":1.5}`, `{"limitBytes":1e3}`, `{"limitBytes":-0}`, `{"limitBytes":"5"}`, `{"limitBytes":true}`,
		`{"limitBytes":9223372036854775807}`, `{"limitBytes":9223372036854775808}`, `{"limitBytes":1e1000000}`,
		`{"LimitBytes":5}`, `{"limitBytes":5,"limitBytes":-1}`, `{"limitBytes":5,"applicationUuid":"` + fuzzApp + `"}`, `[]`, ``, `null`, ` null `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		l, err := parseLimits(body)
		if err != nil {
			checkRefusal(t, body, err)
			checkInvalidField(t, err, "body", "limitBytes", "limitItems")
			return
		}
		m := objectMembers(t, body, "limitBytes", "limitItems")
		for _, lim := range []struct {
			name string
			got  int64
		}{{"limitBytes", l.Bytes}, {"limitItems", l.Items}} {
			want := int64(0)
			if raw := m[lim.name]; present(raw) {
				var err error
				if want, err = strconv.ParseInt(string(raw), 10, 64); err != nil || want < uds.Unlimited {
					t.Fatalf("accepted %s %s", lim.name, raw)
				}
			}
			if lim.got != want {
				t.Fatalf("%s %s read as %d", lim.name, m[lim.name], lim.got)
			}
		}
		again, err := parseLimits(encodeJSON(t, limitsJSON{LimitBytes: l.Bytes, LimitItems: l.Items}))
		if err != nil || again != l {
			t.Fatalf("limits %+v read back as %+v (%v)", l, again, err)
		}
	})
}

// FuzzRegistrationBody parses app registrations: an accepted body names
// the app by its "name" member trimmed, a valid name, and describes it by
// its "description" member as sent (none when absent or null), and a body
// of the two read back gives the same.
func FuzzRegistrationBody(f *testing.F) {
	for _, s := range []string{
		`{"name":"Fitness","description":"Workouts and goals"}`, `{"name":"  Fitness  "}`, `{"name":"hmh","description":null}`,
		`{"name":""}`, `{"name":"   "}`, `{"name":null}`, `{}`, `{"description":"x"}`, `{"name":5}`, `{"name":"a\u0000b"}`,
		`{"name":"a","description":"line\nbreak"}`, `{"name":"a","description":"` + strings.Repeat("d", uds.MaxAppDescriptionBytes+1) + `"}`,
		`{"name":"` + strings.Repeat("é", uds.MaxAppNameRunes) + `"}`, `{"name":"` + strings.Repeat("n", uds.MaxAppNameRunes+1) + `"}`,
		`{"Name":"a"}`, `{"name":"a","name":"b"}`, `{"n\u0061me":"a"}`, `{"name":"a","applicationUuid":"` + fuzzApp + `"}`,
		"{\"name\":\"\xff\"}", `{"name":"\ud800"}`, `[]`, ``, `{"name":"a"} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		name, description, err := parseRegistration(body)
		if err != nil {
			checkRefusal(t, body, err)
			checkInvalidField(t, err, "body", "name", "description")
			return
		}
		m := objectMembers(t, body, "name", "description")
		var sent, described string
		if err := json.Unmarshal(m["name"], &sent); err != nil || name != strings.TrimSpace(sent) {
			t.Fatalf("name %s read as %q (%v)", m["name"], name, err)
		}
		if checked, err := uds.ParseAppName(name); err != nil || checked != name {
			t.Fatalf("accepted the name %q: %v", name, err)
		}
		if present(m["description"]) {
			if err := json.Unmarshal(m["description"], &described); err != nil {
				t.Fatal(err)
			}
		}
		if description != described {
			t.Fatalf("description %s read as %q", m["description"], description)
		}
		again, againDescription, err := parseRegistration(encodeJSON(t, map[string]string{"name": name, "description": description}))
		if err != nil || again != name || againDescription != description {
			t.Fatalf("%q, %q read back as %q, %q (%v)", name, description, again, againDescription, err)
		}
	})
}

// FuzzEraseBody parses erase bodies: an empty body, or an object whose
// only member, "holdDays", is a whole number of days from 0 to
// uds.MaxHoldDays (0 when absent or null); an accepted body reads back
// the same.
func FuzzEraseBody(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"holdDays":30}`, `{"holdDays":0}`, `{"holdDays":null}`, `{"holdDays":3650}`, `{"holdDays":3651}`,
		`{"holdDays":-1}`, `{"holdDays":1.5}`, `{"holdDays":1e2}`, `{"holdDays":"30"}`, `{"holdDays":true}`,
		`{"holdDays":9223372036854775808}`, `{"HoldDays":1}`, `{"holdDays":1,"holdDays":2}`, `{"h\u006fldDays":2}`,
		`{"holdDays":1,"user":"alice"}`, `[]`, `null`, `30`, `{"holdDays":1} {}`, `{"holdDays":1`, "{\"holdDays\":\xff}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		days, err := parseErase(body)
		if err != nil {
			checkRefusal(t, body, err)
			checkInvalidField(t, err, "body", "holdDays")
			return
		}
		want := int64(0)
		if len(body) > 0 {
			m := objectMembers(t, body, "holdDays")
			if raw := m["holdDays"]; present(raw) {
				var err error
				if want, err = strconv.ParseInt(string(raw), 10, 64); err != nil || want < 0 || want > uds.MaxHoldDays {
					t.Fatalf("accepted holdDays %s", raw)
				}
			}
		}
		if int64(days) != want {
			t.Fatalf("holdDays in %q read as %d", body, days)
		}
		if again, err := parseErase(encodeJSON(t, map[string]int{"holdDays": days})); err != nil || again != days {
			t.Fatalf("holdDays %d read back as %d (%v)", days, again, err)
		}
	})
}
