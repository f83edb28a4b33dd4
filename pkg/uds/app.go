package uds

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// AppRegistration is an app's entry in the registry: the name and
// description operators know it by. Data paths keep the app's id; a name
// resolves to it only where an operator types one.
type AppRegistration struct {
	App         string
	Name        string
	Description string
	// NameKey is the folded name the registry holds the name under:
	// FoldAppName(Name), or the lower-cased name of a registration from
	// before names were case folded that could not be folded
	// (docs/decisions/browser.md, "Smaller findings").
	NameKey          string
	Created, Updated time.Time
	// Limits are the app's default per-user limits (zero where none is
	// set): they share the app's record, so the registry reads them free.
	Limits Limits
	// HeldSince is when the app first held data, as the catalogue marked
	// it (zero: not marked, or not read).
	HeldSince time.Time
}

// BehaviorApp is the reserved application id of the values computed about
// a user that belong to no app (seed 000's calculatedBehavior, data.cb.*).
// It is the same in every deployment. Its namespaces are private unless a
// policy says otherwise, so that a caller reads and writes only its own
// values; operators read any user's through the admin API, and set its
// quota, as for any app.
const BehaviorApp = "00000000-0000-0000-0000-0000000000cb"

// CreatedContentName is seed 000's reserved app name for the content users
// create (data.user.*). In a deployment that names a created-content app,
// only that app may be registered under it.
const CreatedContentName = "hmh"

// Bounds of a registration.
const (
	MaxAppNameRunes        = 100
	MaxAppDescriptionBytes = 1000
)

// DefaultAccess is the access mode of an app's namespaces that have none
// set: private in BehaviorApp, shared (the empty Access) elsewhere.
func DefaultAccess(app string) Access {
	if app == BehaviorApp {
		return AccessPrivate
	}
	return ""
}

// ParseAppName validates an app's name and returns it trimmed of the
// white space around it.
func ParseAppName(s string) (string, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", Invalid("name", "must not be empty")
	case !utf8.ValidString(s):
		return "", Invalid("name", "is not valid UTF-8")
	case utf8.RuneCountInString(s) > MaxAppNameRunes:
		return "", Invalid("name", "is %d characters; at most %d", utf8.RuneCountInString(s), MaxAppNameRunes)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "", Invalid("name", "must not contain control characters")
	}
	return s, nil
}

// ParseAppDescription validates an app's description: one line of text.
func ParseAppDescription(s string) (string, error) {
	switch {
	case !utf8.ValidString(s):
		return "", Invalid("description", "is not valid UTF-8")
	case len(s) > MaxAppDescriptionBytes:
		return "", Invalid("description", "is %d bytes; at most %d", len(s), MaxAppDescriptionBytes)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "", Invalid("description", "must not contain control characters (newlines included)")
	}
	return s, nil
}

// FoldAppName is the form in which names are unique and looked up: two
// names equal under Unicode simple case folding (strings.EqualFold), such
// as "ΟΔΟΣ" and "οδος" or "stats" and "ſtats", name one app. Each rune
// becomes the lower case of its upper case where that is one of its case
// variants, and its lower case otherwise: the same key for every rune of
// a fold orbit, which is the lower-cased name that names were keyed by
// before, except where the name holds one of the few lower-case variants
// that lower-casing kept apart (ſ, ς, µ, ϑ and the like).
func FoldAppName(name string) string { return strings.Map(foldRune, name) }

// foldRune is a rune's key in FoldAppName.
func foldRune(r rune) rune {
	if c := unicode.ToLower(unicode.ToUpper(r)); c == r || sameFold(r, c) {
		return c
	}
	return unicode.ToLower(r)
}

// sameFold reports whether c is in r's simple case fold orbit.
func sameFold(r, c rune) bool {
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == c {
			return true
		}
	}
	return false
}

// NameTakenError refuses a registration whose name another app holds, or
// the reserved CreatedContentName for an app that is not the deployment's
// created-content app (App is then that app).
type NameTakenError struct {
	Name, App string
	Reserved  bool
}

func (e *NameTakenError) Error() string {
	if e.Reserved {
		return "app name " + e.Name + " is reserved for app " + e.App
	}
	return "app name " + e.Name + " is registered by app " + e.App
}

// Is makes errors.Is(err, ErrConflict) hold.
func (e *NameTakenError) Is(target error) bool { return target == ErrConflict }

// Code returns CodeConflict.
func (e *NameTakenError) Code() Code { return CodeConflict }
