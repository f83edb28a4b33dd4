package uds

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// IndexType is the JSON type an index holds: an item whose value at the
// index's path has another type is not in the index.
type IndexType string

// Index types.
const (
	IndexString IndexType = "string"
	IndexNumber IndexType = "number"
)

// Bounds of a namespace's declared indexes.
const (
	MaxIndexes = 5
	// MaxIndexedStringBytes is the longest string an index holds (UTF-8
	// bytes); an item with a longer one is not in the index. The indexed
	// value and the item's key share DynamoDB's 1,024-byte sort key.
	MaxIndexedStringBytes = 512
	maxIndexNameBytes     = 64
	maxIndexPathBytes     = 256
)

// Index is a field of a namespace's items that queries may select and
// order by: the value at Path (a JSON Pointer into data) when it has Type.
type Index struct {
	Name string
	Path string
	Type IndexType
	// ID names the index's entries: every declaration of an index gets a
	// new one, so that an index removed and declared again never meets
	// the entries of its predecessor. The store assigns it.
	ID string
	// Ready is set once the index holds every item stored before it was
	// declared; until then queries on it are refused.
	Ready bool
	// Done counts the items its build has indexed.
	Done int64
}

// Same reports whether two declarations index the same field the same way.
func (ix Index) Same(other Index) bool {
	return ix.Name == other.Name && ix.Path == other.Path && ix.Type == other.Type
}

// IndexBuild is the work a change of a namespace's indexes left: building
// the indexes not yet ready from the items stored, and removing the
// entries of the indexes removed. It starts at SettlesAt, once every
// function writes under the change (a write that read the policy before
// it could still commit until then), and proceeds in bounded steps.
type IndexBuild struct {
	SettlesAt time.Time
	// Dropped lists the IDs of removed indexes whose entries remain.
	Dropped []string
	// Removed counts the entries of dropped indexes removed so far.
	Removed int64
	// Position is where the next step resumes, in the store's terms;
	// empty at the start.
	Position string
}

// ValidateIndexes checks a namespace's declared indexes: at most
// MaxIndexes, each with a name (letters, digits, '_' and '-'), a JSON
// Pointer and a known type, no two with one name.
func ValidateIndexes(ixs []Index) error {
	if len(ixs) > MaxIndexes {
		return Invalid("indexes", "a namespace takes at most %d indexes, got %d", MaxIndexes, len(ixs))
	}
	seen := map[string]bool{}
	for i, ix := range ixs {
		field := "indexes[" + strconv.Itoa(i) + "]"
		switch {
		case !validIndexName(ix.Name):
			return Invalid(field+".name", "must be 1 to %d letters, digits, '_' or '-', got %q", maxIndexNameBytes, Truncate(ix.Name, 64))
		case seen[ix.Name]:
			return Invalid(field+".name", "%q names two indexes", ix.Name)
		case ix.Type != IndexString && ix.Type != IndexNumber:
			return Invalid(field+".type", `must be "string" or "number", got %q`, Truncate(string(ix.Type), 64))
		}
		if _, err := ParsePointer(ix.Path); err != nil {
			return Invalid(field+".path", "%s", err)
		}
		seen[ix.Name] = true
	}
	return nil
}

func validIndexName(s string) bool {
	if s == "" || len(s) > maxIndexNameBytes {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ParsePointer parses a JSON Pointer (RFC 6901) into its reference
// tokens: "" is the whole document, "/a/b" member b of member a, with "~1"
// standing for '/' and "~0" for '~'.
func ParsePointer(p string) ([]string, error) {
	switch {
	case p == "":
		return nil, nil
	case len(p) > maxIndexPathBytes:
		return nil, errors.New("is longer than " + strconv.Itoa(maxIndexPathBytes) + " bytes")
	case !utf8.ValidString(p):
		return nil, errors.New("is not valid UTF-8")
	case p[0] != '/':
		return nil, errors.New(`must be a JSON Pointer: "" or starting with "/", got ` + strconv.Quote(Truncate(p, 64)))
	}
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || t[j+1] != '0' && t[j+1] != '1') {
				return nil, errors.New(`has a "~" that is not "~0" or "~1": ` + strconv.Quote(Truncate(p, 64)))
			}
		}
		tokens[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(t)
	}
	return tokens, nil
}

// IndexValue is a value an index holds: a string or a number.
type IndexValue struct {
	Str string
	Num float64
}

// ValueOf finds the value ix holds for data: false when the value at the
// path is missing, of another type, a string longer than
// MaxIndexedStringBytes, or a number outside float64's range.
func (ix Index) ValueOf(data json.RawMessage) (IndexValue, bool) {
	tokens, err := ParsePointer(ix.Path)
	if err != nil {
		return IndexValue{}, false
	}
	raw := data
	for _, t := range tokens {
		if raw, err = member(raw, t); err != nil || raw == nil {
			return IndexValue{}, false
		}
	}
	return ix.parse(raw)
}

// parse reads a JSON scalar of ix's type.
func (ix Index) parse(raw json.RawMessage) (IndexValue, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return IndexValue{}, false
	}
	switch {
	case ix.Type == IndexString && raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil || len(s) > MaxIndexedStringBytes {
			return IndexValue{}, false
		}
		return IndexValue{Str: s}, true
	case ix.Type == IndexNumber && (raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9'):
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || math.IsInf(f, 0) {
			return IndexValue{}, false
		}
		return IndexValue{Num: f + 0}, true // -0 is 0
	}
	return IndexValue{}, false
}

// ParseIndexValue reads a query's bound for ix: a string as given, or a
// number in JSON's syntax.
func (ix Index) ParseIndexValue(field, s string) (IndexValue, error) {
	if ix.Type == IndexString {
		if !utf8.ValidString(s) {
			return IndexValue{}, Invalid(field, "is not valid UTF-8")
		}
		if len(s) > MaxIndexedStringBytes {
			return IndexValue{}, Invalid(field, "is %d bytes; index %s holds strings of at most %d", len(s), ix.Name, MaxIndexedStringBytes)
		}
		return IndexValue{Str: s}, nil
	}
	// A number as JSON writes one, and nothing around it.
	v, ok := ix.parse(json.RawMessage(s))
	if !ok || !json.Valid([]byte(s)) || strings.TrimSpace(s) != s {
		return IndexValue{}, Invalid(field, "must be a number (index %s holds numbers), got %q", ix.Name, Truncate(s, 64))
	}
	return v, nil
}

// member returns the value of object member or array element token in
// raw: nil when raw has none.
func member(raw json.RawMessage, token string) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, nil
	}
	switch raw[0] {
	case '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, err
		}
		return obj[token], nil
	case '[':
		// RFC 6901: an array index is "0" or digits without a leading
		// zero.
		n, err := strconv.Atoi(token)
		if err != nil || n < 0 || strconv.Itoa(n) != token {
			return nil, nil
		}
		var arr []json.RawMessage
		if err := json.Unmarshal(raw, &arr); err != nil {
			return nil, err
		}
		if n >= len(arr) {
			return nil, nil
		}
		return arr[n], nil
	}
	return nil, nil
}

// IndexNotReadyError refuses a query on an index that is still being
// built from the items stored before it was declared.
type IndexNotReadyError struct {
	Name      string
	Done      int64
	SettlesAt time.Time
}

func (e *IndexNotReadyError) Error() string {
	return "index " + e.Name + " is still being built (" + strconv.FormatInt(e.Done, 10) + " items indexed so far)"
}

// ErrIndexNotReady: the index is declared but not built yet; an
// *IndexNotReadyError says how far the build got.
var ErrIndexNotReady = NewError(CodeIndexNotReady, "index not ready")

// Is makes errors.Is(err, ErrIndexNotReady) hold.
func (e *IndexNotReadyError) Is(target error) bool { return target == ErrIndexNotReady }

// Code returns CodeIndexNotReady.
func (e *IndexNotReadyError) Code() Code { return CodeIndexNotReady }
