package uds

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Key limits imposed by DynamoDB: a partition key value is at most 2048
// bytes, a sort key value at most 1024 bytes.
const (
	MaxDataKeyBytes = 2048
	MaxSortKeyBytes = 1024
	// MaxNamespaceBytes bounds a namespace, which is the sort key of its
	// policy's record.
	MaxNamespaceBytes = MaxSortKeyBytes
	// KeyDelimiter joins the parts of a dataKey (the seed's format).
	KeyDelimiter = "|"
	// ReservedSortKey names the list resource itself, so it cannot be an
	// item's sort key.
	ReservedSortKey = "list"
)

// Key identifies a key-value item, a list (SortKey empty) or a list item.
type Key struct {
	App       string // lower-case UUID
	Namespace string
	ID        string
	SortKey   string
	// Owner, set in a private namespace, is the subject whose key space
	// holds the item; it is never shown as part of the item's path.
	Owner string
}

// DataKey is the partition key "{app}|{namespace}|{id}", followed by
// "|{owner}" in a private namespace. Namespace and id hold no delimiter,
// so the owner (which may) is everything after the third one.
func (k Key) DataKey() string {
	if k.Owner != "" {
		// One concatenation, so one allocation.
		return k.App + KeyDelimiter + k.Namespace + KeyDelimiter + k.ID + KeyDelimiter + k.Owner
	}
	return k.App + KeyDelimiter + k.Namespace + KeyDelimiter + k.ID
}

// DataKeyLen is len(k.DataKey()), without building the key: what a write
// counts of it in its size.
func (k Key) DataKeyLen() int {
	n := len(k.App) + len(k.Namespace) + len(k.ID) + 2*len(KeyDelimiter)
	if k.Owner != "" {
		n += len(KeyDelimiter) + len(k.Owner)
	}
	return n
}

// NewKey validates and normalises the parts of a key-value item or list key.
func NewKey(app, namespace, id string) (Key, error) {
	app, err := ParseApp(app)
	if err != nil {
		return Key{}, err
	}
	if err := checkNamespace(namespace); err != nil {
		return Key{}, err
	}
	if err := checkSegment("id", id); err != nil {
		return Key{}, err
	}
	k := Key{App: app, Namespace: namespace, ID: id}
	if n := k.DataKeyLen(); n > MaxDataKeyBytes {
		return Key{}, Invalid("id", "applicationUuid, namespace and id together take %d bytes; at most %d fit a DynamoDB partition key", n, MaxDataKeyBytes)
	}
	return k, nil
}

// ParseNamespace validates a namespace named on its own (admin routes).
func ParseNamespace(s string) (string, error) {
	return s, checkNamespace(s)
}

// checkNamespace validates a namespace: a key segment that is also, on
// its own, the sort key of its policy's record.
func checkNamespace(s string) error {
	if len(s) > MaxNamespaceBytes {
		return Invalid("namespace", "is %d bytes; at most %d fit a DynamoDB sort key, as which its policy is stored", len(s), MaxNamespaceBytes)
	}
	return checkSegment("namespace", s)
}

// WithSortKey validates a sort key and returns the list item key.
func (k Key) WithSortKey(sortKey string) (Key, error) {
	switch {
	case sortKey == "":
		return Key{}, Invalid("sortKey", "must not be empty")
	case sortKey == ReservedSortKey:
		return Key{}, Invalid("sortKey", "%q is reserved for the list itself", ReservedSortKey)
	case strings.HasSuffix(sortKey, "/"):
		// A path takes one trailing slash off, so .../z// would name "z/"
		// on one route and be read differently by another host or a
		// batch path; no sort key ends with one.
		return Key{}, Invalid("sortKey", "must not end with %q", "/")
	}
	if err := CheckSortKey("sortKey", sortKey); err != nil {
		return Key{}, err
	}
	k.SortKey = sortKey
	return k, nil
}

// CheckSortKey validates a sort key value (also used for range bounds).
func CheckSortKey(field, s string) error {
	switch {
	case s == "":
		return Invalid(field, "must not be empty")
	case len(s) > MaxSortKeyBytes:
		return Invalid(field, "is %d bytes; at most %d fit a DynamoDB sort key", len(s), MaxSortKeyBytes)
	case !utf8.ValidString(s):
		return Invalid(field, "is not valid UTF-8")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return Invalid(field, "must not contain control characters")
	}
	return nil
}

// ParseApp validates an application UUID and returns it in lower case, the
// form it takes inside keys.
func ParseApp(s string) (string, error) {
	if !isUUID(s) {
		return "", Invalid("applicationUuid", "%q is not a UUID (8-4-4-4-12 hexadecimal digits)", Truncate(s, 64))
	}
	return strings.ToLower(s), nil
}

// MaxSubjectBytes bounds a subject (a caller's identity): it becomes part
// of DynamoDB keys.
const MaxSubjectBytes = 1024

// Anonymous is the subject of callers without an authorizer (seed 002's
// public mode). It has no key space in a private namespace: every
// anonymous caller would share it.
const Anonymous = "anonymous"

// ValidSubject reports whether s can name a caller: valid UTF-8, at most
// MaxSubjectBytes and no control characters. Anything else goes: JWT
// subjects such as "auth0|abc" and IAM ARNs with "/" are subjects too.
// Invalid UTF-8 is refused because DynamoDB keys are UTF-8: the SDK would
// replace each bad byte with U+FFFD, and different subjects would share
// one owner record and one private key space.
func ValidSubject(s string) bool {
	return len(s) <= MaxSubjectBytes && utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// ParseUser validates a user (subject) named in an admin path: exactly the
// subjects the data routes accept can be named there.
func ParseUser(s string) (string, error) {
	switch {
	case s == "":
		return "", Invalid("user", "must not be empty")
	case !ValidSubject(s):
		return "", Invalid("user", "is longer than %d bytes, is not valid UTF-8 or holds control characters", MaxSubjectBytes)
	}
	return s, nil
}

func checkSegment(field, s string) error {
	switch {
	case s == "":
		return Invalid(field, "must not be empty")
	case !utf8.ValidString(s):
		return Invalid(field, "is not valid UTF-8")
	case strings.Contains(s, KeyDelimiter):
		return Invalid(field, "must not contain %q (the key delimiter)", KeyDelimiter)
	case strings.Contains(s, "/"):
		return Invalid(field, "must not contain %q", "/")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return Invalid(field, "must not contain control characters")
	}
	return nil
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// Truncate shortens s to at most n bytes and an ellipsis, without splitting
// a rune: what error messages repeat of a client's input.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
