package httpapi

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/udsproject/uds/pkg/uds"
)

// Every JSON body UDS reads is decoded by decodeStrict, under three rules
// that encoding/json alone does not keep:
//   - exactly one JSON value, and no object that names a member twice, at
//     any depth (compactJSON; I-JSON, RFC 7493): readers disagree on which
//     of two members counts, so such a body could be checked as one thing
//     and stored as another;
//   - member names of the envelope match a field's name exactly:
//     encoding/json would take "Data" or "DATA" for "data", and the last
//     of two spellings would win;
//   - members no field names are refused, so a typo is never dropped.
//
// Values the envelope carries as raw JSON (an item's data, a schema) are
// free-form: their member names are not looked at beyond the first rule.

// decodeStrict decodes body into v, a pointer to a struct. A repeated or
// unknown member name is a *uds.InvalidError naming it (a repeated one
// with its JSON pointer; an unknown one with the path of the object that
// holds it, "operations[2]", as the field); any other failure is the
// decoder's error, for the caller to describe with jsonProblem.
func decodeStrict(body []byte, v any) error {
	// JSON text is UTF-8 (RFC 8259); encoding/json would turn each bad
	// byte into U+FFFD, so that two different bodies read the same.
	if !utf8.Valid(body) {
		return uds.Invalid("body", "is not valid UTF-8")
	}
	c, err := compactJSON(make([]byte, 0, len(body)), body)
	var dup *duplicateNameError
	switch {
	case errors.As(err, &dup):
		return dup.refusal("body")
	case err != nil:
		return err
	}
	// A body decoded into a struct is an object: null, which the decoder
	// takes as leaving every field as it is, would read as one that sets
	// nothing (an admin PUT's null cleared every limit).
	if t := reflect.TypeOf(v).Elem(); t.Kind() == reflect.Struct && string(c) == "null" {
		return uds.Invalid("body", "is null; send a JSON object")
	}
	// Every member name is one of v's fields once checkMembers passes, so
	// what the decoder can still refuse is a value of the wrong type.
	if _, err := checkMembers(c, 0, reflect.TypeOf(v).Elem(), "body"); err != nil {
		return err
	}
	return json.Unmarshal(c, v)
}

// decodeBody decodes a request body with decodeStrict; what is not a
// refused member name is described against the body's expected shape
// ("{\"records\": [...]}").
func decodeBody(body []byte, v any, shape string) error {
	err := decodeStrict(body, v)
	var invalid *uds.InvalidError
	if err == nil || errors.As(err, &invalid) {
		return err
	}
	return uds.Invalid("body", "is not %s: %s", shape, jsonProblem(err))
}

// jsonProblem describes what decodeStrict refused, without echoing Go type
// names: the syntax error the compactor found, or a value of the wrong
// type.
func jsonProblem(err error) string {
	var syntax *jsonSyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return syntax.Error()
	case errors.As(err, &typ):
		if typ.Field != "" {
			return typ.Field + " has the wrong type"
		}
		return "expected an object"
	}
	return "malformed JSON"
}

// checkMembers checks the value at c[i] (compact, valid JSON) against type
// t: an object decoded into a struct may name only its fields, exactly,
// and so may the objects of its struct-typed fields and slices. It
// returns where the value ends. Values of another shape than t are left to
// the decoder, which describes them.
func checkMembers(c []byte, i int, t reflect.Type, field string) (int, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && c[i] == '{':
		fields := fieldsOf(t)
		i++
		for c[i] != '}' {
			if c[i] == ',' {
				i++
			}
			end := skipJSON(c, i)
			quoted, err := unquoteName(c[i:end])
			if err != nil {
				return 0, err
			}
			name := string(quoted)
			f, known := fields.byName[name]
			if !known {
				return 0, unknownMember(field, name, fields.names)
			}
			if i, err = checkMembers(c, end+1, f, joinField(field, name)); err != nil {
				return 0, err
			}
		}
		return i + 1, nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8 && c[i] == '[':
		i++
		for n := 0; c[i] != ']'; n++ {
			if c[i] == ',' {
				i++
			}
			var err error
			if i, err = checkMembers(c, i, t.Elem(), field+"["+strconv.Itoa(n)+"]"); err != nil {
				return 0, err
			}
		}
		return i + 1, nil
	}
	return skipJSON(c, i), nil
}

// joinField is the path of a member below field: the top-level body's
// members are named on their own ("operations"), deeper ones after their
// parent ("operations[2].body").
func joinField(field, name string) string {
	if field == "body" {
		return name
	}
	return field + "." + name
}

// unknownMember refuses a member no field names, pointing to the field
// that differs only in case, if there is one.
func unknownMember(field, name string, known []string) error {
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return uds.Invalid(field, "has no member %q; member names are case-sensitive: did you mean %q?", uds.Truncate(name, 64), k)
		}
	}
	return uds.Invalid(field, "has no member %q; its members are %s", uds.Truncate(name, 64), quoteAll(known))
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// structFields are the JSON member names of a struct type and the types
// of their fields.
type structFields struct {
	byName map[string]reflect.Type
	names  []string
}

var fieldCache sync.Map // reflect.Type -> *structFields

// fieldsOf reads a struct's JSON field names from its tags, once per type.
func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	f := &structFields{byName: map[string]reflect.Type{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f.byName[name] = sf.Type
		f.names = append(f.names, name)
	}
	fieldCache.Store(t, f)
	return f
}
