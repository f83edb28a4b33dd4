package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// family is what a seed table holds.
type family int

const (
	familyApps family = iota
	familyJSON
	familyBlob
	familyBehavior
)

// String is the seed's name of the family's table.
func (f family) String() string {
	return [...]string{"apps", "appDataJson", "appDataBlob", "calculatedBehavior"}[f]
}

// target is where the records of a seed app name land, or why they do not.
type target struct {
	App, Namespace string
	// Refused says why the name has no app (the registry refused it);
	// its records are skipped with that reason.
	Refused string
}

// mapper turns the seed's items into UDS records.
type mapper struct {
	names Seed000Names
	// apps are the targets of the seed's app names; behavior the target
	// of calculatedBehavior.
	apps     map[string]target
	behavior target
	date     time.Time
}

// mapped is one seed item as the copy sees it: the record it becomes, or
// why it is skipped.
type mapped struct {
	rec uds.Record
	// sourceKey shows the item's key in reports.
	sourceKey string
	skip      string
	// compacted marks JSON text stored without its insignificant white
	// space.
	compacted bool
}

// appName splits a data table's hash key: the app name is what is left
// when the item's user and the separator are taken off its end.
func (m *mapper) appName(it map[string]types.AttributeValue) (name string, ok bool) {
	return strings.CutSuffix(attrS(it, m.names.AppUser), m.names.Separator+attrS(it, m.names.User))
}

// sourceKey renders an item's key for a report line, quoted so that any
// byte of it shows.
func (m *mapper) sourceKey(f family, it map[string]types.AttributeValue) string {
	hash := m.names.AppUser
	if f == familyBehavior {
		hash = m.names.User
	}
	return hash + "=" + quoteAttr(it[hash]) + " " + m.names.Key + "=" + quoteAttr(it[m.names.Key])
}

func quoteAttr(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return strconv.Quote(v.Value)
	case nil:
		return "(none)"
	}
	return "(" + attrType(av) + ")"
}

// record maps one item of a data table.
func (m *mapper) record(f family, it map[string]types.AttributeValue) mapped {
	out := mapped{sourceKey: m.sourceKey(f, it)}
	user, ok := it[m.names.User].(*types.AttributeValueMemberS)
	if !ok {
		out.skip = "it has no " + m.names.User + " attribute (a string)"
		return out
	}
	to := m.behavior
	if f != familyBehavior {
		name, ok := m.appName(it)
		if !ok {
			out.skip = fmt.Sprintf("its %s does not end with the separator %q and its user", m.names.AppUser, m.names.Separator)
			return out
		}
		if to, ok = m.apps[name]; !ok {
			// Written after discovery: the next run finds the app.
			out.skip = fmt.Sprintf("app name %q was not found by discovery (written since? run again)", name)
			return out
		}
	}
	if to.Refused != "" {
		out.skip = to.Refused
		return out
	}
	if !uds.ValidSubject(user.Value) || user.Value == "" {
		out.skip = fmt.Sprintf("the user is not a subject UDS takes (empty, over %d bytes, not UTF-8 or holding control characters)", uds.MaxSubjectBytes)
		return out
	}
	// The copy makes every namespace it writes private (makePrivate),
	// where the anonymous caller has no key space: nobody could reach
	// the record. The admin import refuses such records too.
	if user.Value == uds.Anonymous {
		out.skip = fmt.Sprintf("the user is %q, who has no key space in private namespace %q (the copy makes it private)", uds.Anonymous, to.Namespace)
		return out
	}
	id, ok := it[m.names.Key].(*types.AttributeValueMemberS)
	if !ok {
		out.skip = "it has no " + m.names.Key + " attribute (a string)"
		return out
	}
	key, err := uds.NewKey(to.App, to.Namespace, id.Value)
	if err == nil {
		key, err = key.InSpaceOf(user.Value)
	}
	if err != nil {
		out.skip = "key: " + reason(err)
		return out
	}
	rec := uds.Record{Item: uds.Item{Key: key, CreatedBy: user.Value, UpdatedBy: user.Value, Version: 1}, Owner: user.Value}
	if f == familyBlob {
		rec.Binary, err = m.blob(it)
	} else {
		rec.Data, out.compacted, err = m.json(it[m.names.Value])
	}
	if err == nil {
		rec.CreatedDate, rec.UpdatedDate, err = m.dates(it)
	}
	if err == nil {
		err = store.CheckRecord(&rec)
	}
	if err != nil {
		out.skip = reason(err)
		return out
	}
	out.rec = rec
	return out
}

// reason is an error as a report line gives it.
func reason(err error) string {
	var invalid *uds.InvalidError
	if errors.As(err, &invalid) {
		return invalid.Reason
	}
	return err.Error()
}

// dates are a record's createdDate and updatedDate: the source's, one
// standing for the other when only one is there, or m.date.
func (m *mapper) dates(it map[string]types.AttributeValue) (created, updated time.Time, err error) {
	read := func(name string) (time.Time, bool, error) {
		av, ok := it[name]
		if !ok {
			return time.Time{}, false, nil
		}
		s, ok := av.(*types.AttributeValueMemberS)
		if !ok {
			return time.Time{}, false, fmt.Errorf("%s is not a string (%s)", name, attrType(av))
		}
		t, err := uds.ParseInstant(name, s.Value)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("%s: %s", name, reason(err))
		}
		return t, true, nil
	}
	created, hasCreated, err := read(m.names.Created)
	if err != nil {
		return created, updated, err
	}
	updated, hasUpdated, err := read(m.names.Updated)
	switch {
	case err != nil:
	case !hasCreated && !hasUpdated:
		created, updated = m.date, m.date
	case !hasCreated:
		created = updated
	case !hasUpdated:
		updated = created
	}
	return created, updated, err
}

// blob reads appDataBlob's value: bytes, with their content type or
// DefaultBlobType.
func (m *mapper) blob(it map[string]types.AttributeValue) (*uds.Binary, error) {
	av, ok := it[m.names.Value]
	if !ok {
		return nil, errors.New("it has no " + m.names.Value + " attribute")
	}
	b, ok := av.(*types.AttributeValueMemberB)
	if !ok {
		return nil, fmt.Errorf("the value is not binary (it is %s)", attrType(av))
	}
	if len(b.Value) > uds.MaxInlineBytes {
		return nil, fmt.Errorf("the value is %d bytes; an item holds at most %d (larger values go through an upload to the bucket)", len(b.Value), uds.MaxInlineBytes)
	}
	ct := DefaultBlobType
	if av, ok := it[m.names.ContentType]; ok {
		s, ok := av.(*types.AttributeValueMemberS)
		if !ok {
			return nil, fmt.Errorf("%s is not a string (%s)", m.names.ContentType, attrType(av))
		}
		var err error
		if ct, err = uds.ParseContentType(m.names.ContentType, s.Value); err != nil {
			return nil, fmt.Errorf("%s: %s", m.names.ContentType, reason(err))
		}
	}
	return &uds.Binary{ContentType: ct, Bytes: b.Value, Size: int64(len(b.Value))}, nil
}

// json reads a JSON value: JSON text in a string, or a native document
// converted to JSON. The text is stored as every UDS write stores it,
// compacted; compacted reports whether that took white space out.
func (m *mapper) json(av types.AttributeValue) (data []byte, compacted bool, err error) {
	switch v := av.(type) {
	case nil:
		return nil, false, errors.New("it has no " + m.names.Value + " attribute")
	case *types.AttributeValueMemberS:
		data, err = jsonText(v.Value)
		compacted = err == nil && len(data) != len(v.Value)
	case *types.AttributeValueMemberNULL:
		err = errors.New("the value is null, which UDS does not store")
	default:
		data, err = appendJSON(nil, av)
	}
	if err == nil && len(data) > uds.MaxDataBytes {
		err = fmt.Errorf("the value takes %d bytes of JSON; at most %d are stored", len(data), uds.MaxDataBytes)
	}
	return data, compacted, err
}

// jsonText checks JSON text as a UDS write checks a body's data (one JSON
// value, UTF-8, no object naming a member twice, not null) and compacts
// it.
func jsonText(s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, errors.New("the value is not valid UTF-8")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return nil, fmt.Errorf("the value is not JSON: %v", err)
	}
	if buf.String() == "null" {
		return nil, errors.New("the value is null, which UDS does not store")
	}
	if name, dup := repeatedName(buf.Bytes()); dup {
		return nil, fmt.Errorf("the value names member %q twice in one object, which UDS refuses (readers disagree on which counts)", uds.Truncate(name, 64))
	}
	return buf.Bytes(), nil
}

// repeatedName finds a member name an object of valid JSON names twice.
func repeatedName(b []byte) (string, bool) {
	type level struct {
		names map[string]bool // nil in an array
		name  bool            // an object's next token is a name
	}
	var stack []level
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return "", false
		}
		top := len(stack) - 1
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, level{names: map[string]bool{}, name: true})
				continue
			case '[':
				stack = append(stack, level{})
				continue
			}
			stack = stack[:top]
			top--
		case string:
			if top >= 0 && stack[top].name {
				if stack[top].names[t] {
					return t, true
				}
				stack[top].names[t], stack[top].name = true, false
				continue
			}
		}
		// A value ended: in an object, a name comes next.
		if top >= 0 && stack[top].names != nil {
			stack[top].name = true
		}
	}
}

// appendJSON appends a native DynamoDB document as JSON: maps as objects
// (members in byte order of their names, DynamoDB keeps none), lists as
// arrays, numbers as they are written, booleans and null. Binary values
// and sets have no JSON form.
func appendJSON(dst []byte, av types.AttributeValue) ([]byte, error) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return appendString(dst, v.Value)
	case *types.AttributeValueMemberN:
		if v.Value == "" || !(v.Value[0] == '-' || '0' <= v.Value[0] && v.Value[0] <= '9') || !json.Valid([]byte(v.Value)) {
			return nil, fmt.Errorf("the value holds the number %q, which is not a JSON number", uds.Truncate(v.Value, 64))
		}
		return append(dst, v.Value...), nil
	case *types.AttributeValueMemberBOOL:
		return strconv.AppendBool(dst, v.Value), nil
	case *types.AttributeValueMemberNULL:
		return append(dst, "null"...), nil
	case *types.AttributeValueMemberL:
		dst = append(dst, '[')
		for i, e := range v.Value {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendJSON(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case *types.AttributeValueMemberM:
		names := make([]string, 0, len(v.Value))
		for n := range v.Value {
			names = append(names, n)
		}
		sort.Strings(names)
		dst = append(dst, '{')
		for i, n := range names {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendString(dst, n); err != nil {
				return nil, err
			}
			dst = append(dst, ':')
			if dst, err = appendJSON(dst, v.Value[n]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	}
	return nil, fmt.Errorf("the value holds a DynamoDB %s, which has no JSON form", attrType(av))
}

// appendString appends s as a JSON string, without escaping HTML
// characters (as UDS stores JSON written to it).
func appendString(dst []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return nil, errors.New("the value holds a string that is not valid UTF-8")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// attrType names a DynamoDB attribute type as reports show it.
func attrType(av types.AttributeValue) string {
	switch av.(type) {
	case *types.AttributeValueMemberS:
		return "string"
	case *types.AttributeValueMemberN:
		return "number"
	case *types.AttributeValueMemberB:
		return "binary"
	case *types.AttributeValueMemberBOOL:
		return "boolean"
	case *types.AttributeValueMemberNULL:
		return "null"
	case *types.AttributeValueMemberM:
		return "map"
	case *types.AttributeValueMemberL:
		return "list"
	case *types.AttributeValueMemberSS:
		return "string set"
	case *types.AttributeValueMemberNS:
		return "number set"
	case *types.AttributeValueMemberBS:
		return "binary set"
	}
	return "value of an unknown type"
}

// attrS is a string attribute's value, or "".
func attrS(it map[string]types.AttributeValue, name string) string {
	if s, ok := it[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}
