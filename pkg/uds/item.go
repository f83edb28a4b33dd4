package uds

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/udsproject/uds/internal/gzsplice"
)

// MaxDataBytes is the largest `data` value UDS accepts (1 MiB of JSON).
const MaxDataBytes = 1 << 20

// Item is a stored key-value item or list item.
type Item struct {
	Key
	// Data is the stored JSON exactly as it was written (compacted): number
	// precision, key order and unicode are kept. It is never modified in
	// place: a read may share it with the string it was decoded from.
	Data json.RawMessage
	// Compressed, when set, holds the value as UDS stored it, gzip
	// compressed, and Data is nil: a list page sent gzip encoded carries
	// the stored stream on without inflating it (store.ListQuery's
	// KeepCompressed).
	Compressed *gzsplice.Member
	// Binary, when set, is the item's value and Data is nil: bytes with
	// their content type rather than JSON.
	Binary      *Binary
	ClassName   string
	CreatedDate time.Time
	CreatedBy   string
	UpdatedDate time.Time
	UpdatedBy   string
	// Version counts the writes of this incarnation of the item, from 1.
	Version int64
	// ExpiresAt, when set, is the instant (to the millisecond) from which
	// the item is gone.
	ExpiresAt time.Time
}

// DataLen is the length of the value's JSON, whether it is held as Data
// or still compressed; for a binary value, of what a page carries of it:
// its bytes in base64 (none for a large value) and its content type.
func (it *Item) DataLen() int {
	if it.Binary != nil {
		return base64.StdEncoding.EncodedLen(len(it.Binary.Bytes)) + len(it.Binary.ContentType)
	}
	if it.Compressed != nil {
		return it.Compressed.Size()
	}
	return len(it.Data)
}

// MaxTTL is the longest expiry UDS accepts: ten years.
const MaxTTL = 315360000 * time.Second

// MaxVersion is the highest version an item may carry: 2^53-1, the largest
// integer every JSON reader (JavaScript's numbers among them) holds
// exactly, so that ETags and If-Match keep protecting the item through any
// client, and a version can never wrap on the next write.
const MaxVersion = 1<<53 - 1

// ExpiredAt reports whether the item is gone at now.
func (it Item) ExpiredAt(now time.Time) bool {
	return !it.ExpiresAt.IsZero() && !now.Before(it.ExpiresAt)
}

// Revision identifies one state of an item: its write count and the moment
// it was created. The creation time keeps a deleted-and-recreated item from
// reusing the ETags of its predecessor.
type Revision struct {
	Version int64
	Created time.Time
}

// Revision returns the item's current revision.
func (it Item) Revision() Revision {
	return Revision{Version: it.Version, Created: it.CreatedDate}
}

// ETag renders the revision as a strong HTTP entity tag.
func (r Revision) ETag() string {
	return `"` + strconv.FormatInt(r.Version, 10) + "-" + strconv.FormatInt(r.Created.UnixMilli(), 36) + `"`
}

// ParseETag parses a strong entity tag made by ETag. Well-formed tags that
// UDS never issued (weak ones included) parse as not ok: they match nothing.
// So do other spellings of a revision ("05-x", "+5-x", "5-X"): entity tags
// are compared as strings (RFC 9110), so they name no revision UDS issued.
func ParseETag(tag string) (Revision, bool) {
	if len(tag) < 2 || tag[0] != '"' || tag[len(tag)-1] != '"' {
		return Revision{}, false
	}
	v, c, found := strings.Cut(tag[1:len(tag)-1], "-")
	if !found {
		return Revision{}, false
	}
	version, err1 := strconv.ParseInt(v, 10, 64)
	millis, err2 := strconv.ParseInt(c, 36, 64)
	rev := Revision{Version: version, Created: time.UnixMilli(millis).UTC()}
	if err1 != nil || err2 != nil || version < 0 || rev.ETag() != tag {
		return Revision{}, false
	}
	return rev, true
}

// Precondition is a parsed If-Match header. The zero value imposes nothing.
type Precondition struct {
	// Any is If-Match: * — the item must exist.
	Any bool
	// Revisions lists the acceptable revisions; the write happens only if
	// the item is at one of them.
	Revisions []Revision
	// Creator, when set, is the only subject that may change or delete the
	// item (an owner-write namespace): an item another subject created,
	// or one without a recorded creator, is ErrForbidden. It is checked
	// before the revisions.
	Creator string
}

// Matches reports whether an item at rev satisfies the precondition.
func (p Precondition) Matches(rev Revision) bool {
	if p.Any {
		return true
	}
	for _, r := range p.Revisions {
		if r.Version == rev.Version && r.Created.Equal(rev.Created) {
			return true
		}
	}
	return !p.IsSet()
}

// IsSet reports whether the precondition constrains the write.
func (p Precondition) IsSet() bool { return p.Any || len(p.Revisions) > 0 }

// Write is a create or update of one item.
type Write struct {
	Key
	Data json.RawMessage
	// Binary, when set, is the value written instead of Data.
	Binary    *Binary
	ClassName string
	// Subject is the authenticated caller; it becomes createdBySubject (and
	// so the owner) on create and updatedBySubject on every write.
	Subject string
	IfMatch Precondition
	// ExpiresAt, when set, makes the item expire then; a write without it
	// leaves an item that does not expire.
	ExpiresAt time.Time
	// History is the namespace's history policy: what the write keeps of
	// the version it replaces.
	History History
	// Indexes are the namespace's declared indexes, ready or not: the
	// write keeps each one's entry for the item up to date.
	Indexes []Index
}

// Range selects list items: sort keys in [Start, End), either bound optional.
type Range struct {
	Start, End string
	Descending bool
}
