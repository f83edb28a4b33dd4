package store

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/internal/gzsplice"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

const (
	// compressAbove is the JSON size from which values are stored gzip
	// compressed. Below one read unit (4 KB) compression cannot save
	// capacity and only costs CPU.
	compressAbove = 4 << 10
	// MaxItemBytes is DynamoDB's item size limit.
	MaxItemBytes = 400 << 10
	// timeLayout stores timestamps as RFC 3339 UTC with milliseconds, so
	// they sort as strings and distinguish items created in one second.
	timeLayout = "2006-01-02T15:04:05.000Z"
)

// writeTime is the timestamp of a write, at the precision it is stored.
func (s *Store) writeTime() time.Time { return s.now().UTC().Truncate(time.Millisecond) }

// FormatTime renders a timestamp the way UDS stores and returns it.
func FormatTime(t time.Time) string {
	// The layout's 24 bytes fit the array, which stays on the stack: the
	// string is the one allocation.
	var b [len(timeLayout)]byte
	return string(AppendTime(b[:0], t))
}

// AppendTime appends t as FormatTime renders it, by hand for the years
// UDS meets (t.Format costs ten times more, and a list page holds
// thousands of timestamps).
func AppendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, timeLayout)
	}
	hour, minute, second := t.Clock()
	milli := t.Nanosecond() / int(time.Millisecond)
	return append(b,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+second/10), byte('0'+second%10), '.', byte('0'+milli/100), byte('0'+milli/10%10), byte('0'+milli%10), 'Z')
}

// ValueCompression is the gzip level values are stored at. Level 2 is
// the first of compress/flate's full compressors: on JSON it stores about
// a fifth less than BestSpeed (fewer write and read units, smaller gzip
// list pages, which carry the stored streams on), and its output inflates
// in half the time, for a quarter more CPU once, on the write
// (docs/performance.md).
const ValueCompression = 2

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, ValueCompression)
	return w
}}

// itemOverhead stands in, in the size measure, for the attributes every
// item carries beside its key and value (audit fields, version, owner key,
// size, schema version). A constant keeps the measure independent of who
// wrote the item, so an update knows the new size before it reads the old.
const itemOverhead = 100

// creatorAllowance is what the item size check reserves for the creator's
// attributes, which an update does not know: the subject in
// createdBySubject and again in ownerKey, after the app and a delimiter.
const creatorAllowance = 2*uds.MaxSubjectBytes + len(uds.KeyDelimiter)

// encodedValue is an item's value in its DynamoDB form.
type encodedValue struct {
	// name is the attribute that holds the value: dataValue (JSON text),
	// dataValueGz (gzip of the JSON), dataBytes (a binary value's bytes)
	// or dataObject (the upload whose object holds a large value).
	name string
	av   types.AttributeValue
	// extra holds the attributes a binary value carries beside it: its
	// content type and, for a large one, its size.
	extra map[string]types.AttributeValue
	// size is the item's quota size: key, stored value and class name
	// bytes plus itemOverhead. A binary value counts its bytes and its
	// content type; a large one the object's bytes.
	size int64
	// itemBytes is what the value's item takes of DynamoDB, which a
	// transaction carries: as size, but a large value counts its object's
	// name, not its bytes.
	itemBytes int64
}

// objectAttrBytes is what a large value's item holds beside its object's
// name and content type: the object's size.
const objectAttrBytes = 20

// valueAttrs are every attribute that holds part of a value, whatever its
// form: a write sets those of its form and removes the others.
var valueAttrs = []string{schema.AttrDataValue, schema.AttrDataValueGzip, schema.AttrDataBytes,
	schema.AttrContentType, schema.AttrDataObject, schema.AttrObjectSize}

// encodeValue prepares the value of w for storage. JSON is stored
// compressed when that makes it smaller; a value that cannot fit a
// DynamoDB item even then is uds.ErrTooLarge.
func encodeValue(w *uds.Write) (encodedValue, error) {
	var v encodedValue
	// stored is what the value counts in the quota; held, what it takes
	// of the DynamoDB item.
	var stored, held int64
	switch b := w.Binary; {
	case b == nil:
		// The attribute's string shares the write's bytes instead of
		// copying them: the value is not changed once it is written (the
		// written item holds the same bytes), and the attribute goes no
		// further than the write's DynamoDB call.
		v = encodedValue{name: schema.AttrDataValue, av: &types.AttributeValueMemberS{Value: unsafe.String(unsafe.SliceData(w.Data), len(w.Data))}}
		stored = int64(len(w.Data))
		if len(w.Data) > compressAbove {
			if z := compress(w.Data); len(z) < len(w.Data) {
				v = encodedValue{name: schema.AttrDataValueGzip, av: &types.AttributeValueMemberB{Value: z}}
				stored = int64(len(z))
			}
		}
		held = stored
	case b.Large():
		v = encodedValue{name: schema.AttrDataObject, av: &types.AttributeValueMemberS{Value: b.Object},
			extra: map[string]types.AttributeValue{
				schema.AttrContentType: &types.AttributeValueMemberS{Value: b.ContentType},
				schema.AttrObjectSize:  &types.AttributeValueMemberN{Value: strconv.FormatInt(b.Size, 10)},
			}}
		stored = b.Size + int64(len(b.ContentType))
		held = int64(len(b.Object)+len(b.ContentType)) + objectAttrBytes
	default:
		bytes := b.Bytes
		if bytes == nil {
			bytes = []byte{}
		}
		v = encodedValue{name: schema.AttrDataBytes, av: &types.AttributeValueMemberB{Value: bytes},
			extra: map[string]types.AttributeValue{
				schema.AttrContentType: &types.AttributeValueMemberS{Value: b.ContentType},
			}}
		stored = int64(len(b.Bytes) + len(b.ContentType))
		held = stored
	}
	keyBytes := int64(w.DataKeyLen() + len(w.SortKey))
	v.size = keyBytes + stored + int64(len(w.ClassName)) + itemOverhead
	v.itemBytes = keyBytes + held + int64(len(w.ClassName)) + itemOverhead
	// The real DynamoDB size adds attribute names, timestamps and the
	// subjects; bound it from above so DynamoDB never has to refuse.
	names := 0
	for _, n := range []string{schema.AttrDataKey, schema.AttrSortKey, v.name, schema.AttrClassName,
		schema.AttrCreatedDate, schema.AttrCreatedBySubject, schema.AttrUpdatedDate, schema.AttrUpdatedBySubject,
		schema.AttrVersion, schema.AttrItemSize, schema.AttrOwnerKey, schema.AttrSchemaVersion,
		schema.AttrWriteToken, schema.AttrExpiresAt, schema.AttrExpiresAtMillis, schema.AttrContentType, schema.AttrObjectSize,
		schema.AttrStreamCounted} {
		names += len(n)
	}
	// 96 bytes hold the numbers (version, size, schema version, expiry)
	// and the 32-character write token; keptRowBytes, what the item's
	// row takes beyond it once history keeps it.
	upper := keyBytes + held + int64(len(w.ClassName)+names+2*len(timeLayout)+len(w.Subject)+len(w.App)+creatorAllowance+96+keptRowBytes)
	if upper > MaxItemBytes {
		return v, &uds.TooLargeError{Reason: fmt.Sprintf("the value takes %d bytes as stored; with its key and attributes it does not fit DynamoDB's %d-byte item limit", held, MaxItemBytes)}
	}
	return v, nil
}

// encodeItem renders a new item (version 1) in its DynamoDB form.
func encodeItem(it *uds.Item, v encodedValue) map[string]types.AttributeValue {
	// One allocation holds the attribute values every item has, and a
	// write's created and updated dates, one instant for a new item, share
	// one string.
	avs := &struct {
		key, created, createdBy, updated, updatedBy, owner types.AttributeValueMemberS
		version, size, schemaVersion                       types.AttributeValueMemberN
	}{
		key:           types.AttributeValueMemberS{Value: it.DataKey()},
		created:       types.AttributeValueMemberS{Value: FormatTime(it.CreatedDate)},
		createdBy:     types.AttributeValueMemberS{Value: it.CreatedBy},
		updatedBy:     types.AttributeValueMemberS{Value: it.UpdatedBy},
		owner:         types.AttributeValueMemberS{Value: ownerKey(it.App, it.CreatedBy)},
		version:       types.AttributeValueMemberN{Value: strconv.FormatInt(it.Version, 10)},
		size:          types.AttributeValueMemberN{Value: strconv.FormatInt(v.size, 10)},
		schemaVersion: types.AttributeValueMemberN{Value: schemaVersion},
	}
	avs.updated.Value = avs.created.Value
	if !it.UpdatedDate.Equal(it.CreatedDate) {
		avs.updated.Value = FormatTime(it.UpdatedDate)
	}
	// Sized for the item's attributes, so that it never grows; no more,
	// since a larger map takes longer to make and clear.
	n := 10 + len(v.extra)
	if it.SortKey != "" {
		n++
	}
	if it.ClassName != "" {
		n++
	}
	if !it.ExpiresAt.IsZero() {
		n += 2
	}
	av := make(map[string]types.AttributeValue, n)
	av[schema.AttrDataKey] = &avs.key
	av[v.name] = v.av
	av[schema.AttrCreatedDate] = &avs.created
	av[schema.AttrCreatedBySubject] = &avs.createdBy
	av[schema.AttrUpdatedDate] = &avs.updated
	av[schema.AttrUpdatedBySubject] = &avs.updatedBy
	av[schema.AttrVersion] = &avs.version
	av[schema.AttrItemSize] = &avs.size
	av[schema.AttrOwnerKey] = &avs.owner
	av[schema.AttrSchemaVersion] = &avs.schemaVersion
	if it.SortKey != "" {
		av[schema.AttrSortKey] = &types.AttributeValueMemberS{Value: it.SortKey}
	}
	if it.ClassName != "" {
		av[schema.AttrClassName] = &types.AttributeValueMemberS{Value: it.ClassName}
	}
	if !it.ExpiresAt.IsZero() {
		av[schema.AttrExpiresAt], av[schema.AttrExpiresAtMillis] = expiryAVs(it.ExpiresAt)
	}
	for name, value := range v.extra {
		av[name] = value
	}
	return av
}

// expiryAVs renders an expiry as the TTL attribute (epoch seconds, rounded
// up so DynamoDB never deletes an item early) and the exact instant.
func expiryAVs(t time.Time) (seconds, millis types.AttributeValue) {
	ms := t.UnixMilli()
	return &types.AttributeValueMemberN{Value: strconv.FormatInt((ms+999)/1000, 10)},
		&types.AttributeValueMemberN{Value: strconv.FormatInt(ms, 10)}
}

// expired reports whether a stored item is gone at now.
func expired(av map[string]types.AttributeValue, now time.Time) bool {
	ms, ok := av[schema.AttrExpiresAtMillis].(*types.AttributeValueMemberN)
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(ms.Value, 10, 64)
	return err == nil && n <= now.UnixMilli()
}

var schemaVersion = strconv.Itoa(schema.CurrentSchemaVersion)

func compress(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b) / 3)
	w := gzipWriters.Get().(*gzip.Writer)
	w.Reset(&buf)
	_, _ = w.Write(b) // writes to a bytes.Buffer cannot fail
	_ = w.Close()
	gzipWriters.Put(w)
	return buf.Bytes()
}

func ownerKey(app, owner string) string { return app + uds.KeyDelimiter + owner }

// splitOwnerKey is the app and owner an owner key names.
func splitOwnerKey(k string) (app, owner string) {
	app, owner, _ = strings.Cut(k, uds.KeyDelimiter)
	return app, owner
}

// decodeItem turns a DynamoDB item back into a uds.Item. Items written
// before UDS (the seed's Java service) lack version and size and still
// decode.
//
// Values UDS wrote (every item with a version) were validated as JSON on
// the way in and go out as stored; a value UDS did not write is checked
// here, so that no unvalidated bytes reach a client: one that is not JSON
// is an error (a 500, logged), not a broken page.
func decodeItem(key uds.Key, av map[string]types.AttributeValue) (uds.Item, error) {
	it := decodeMeta(key, av)
	if it.Binary = decodeBinary(av); it.Binary != nil {
		return it, nil
	}
	switch v := av[schema.AttrDataValueGzip].(type) {
	case *types.AttributeValueMemberB:
		data, err := decompress(v.Value)
		if err != nil {
			return it, fmt.Errorf("decompress %s: %w", key.DataKey(), err)
		}
		it.Data = data
	default:
		// The value shares the SDK's string rather than copying it (a
		// list page holds up to 5 MB of them): uds.Item.Data is never
		// written in place.
		text := str(av, schema.AttrDataValue)
		it.Data = unsafe.Slice(unsafe.StringData(text), len(text))
	}
	if it.Version < 1 && !json.Valid(it.Data) {
		return it, fmt.Errorf("the stored value of %s is not valid JSON", key.DataKey())
	}
	return it, nil
}

// decodeKeepingCompressed decodes an item as decodeItem does, except that a
// value UDS stored compressed stays so (uds.Item.Compressed) when a gzip
// answer can carry its stream on. Only values UDS wrote (with a version)
// qualify: they were validated when written, and Go's compress/gzip wrote
// them, which is what gzsplice relies on.
func decodeKeepingCompressed(key uds.Key, av map[string]types.AttributeValue) (uds.Item, error) {
	if v, ok := av[schema.AttrDataValueGzip].(*types.AttributeValueMemberB); ok && num(av, schema.AttrVersion) >= 1 {
		if m, ok := gzsplice.Parse(v.Value); ok && m.Size() <= uds.MaxDataBytes {
			it := decodeMeta(key, av)
			it.Compressed = &m
			return it, nil
		}
	}
	return decodeItem(key, av)
}

// decodeBinary decodes a binary value, or returns nil for a JSON one.
func decodeBinary(av map[string]types.AttributeValue) *uds.Binary {
	if b, ok := av[schema.AttrDataBytes].(*types.AttributeValueMemberB); ok {
		bytes := b.Value
		if bytes == nil {
			bytes = []byte{}
		}
		return &uds.Binary{ContentType: str(av, schema.AttrContentType), Bytes: bytes, Size: int64(len(bytes))}
	}
	if object := str(av, schema.AttrDataObject); object != "" {
		return &uds.Binary{ContentType: str(av, schema.AttrContentType), Object: object, Size: num(av, schema.AttrObjectSize)}
	}
	return nil
}

var gzipReaders sync.Pool

// decompress expands a stored gzip value. The gzip trailer gives the
// expanded size (modulo 2^32), so the value is read into a buffer of
// exactly that size, with pooled readers: list pages of compressed values
// spend their time inflating, not growing buffers. UDS never stores more
// than uds.MaxDataBytes: a value that claims or yields more (a corrupt or
// foreign one) is refused without being held whole.
func decompress(z []byte) ([]byte, error) {
	if len(z) < 18 { // a gzip header and trailer
		return nil, errors.New("not a gzip stream")
	}
	size := int(binary.LittleEndian.Uint32(z[len(z)-4:]))
	if size > uds.MaxDataBytes {
		return nil, fmt.Errorf("the stored value expands past %d bytes (its trailer says %d)", uds.MaxDataBytes, size)
	}
	r, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if r == nil {
		r, err = gzip.NewReader(bytes.NewReader(z))
	} else {
		err = r.Reset(bytes.NewReader(z))
	}
	if err != nil {
		return nil, err
	}
	defer gzipReaders.Put(r)
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	// The stream must end where the trailer said: one more byte, or a
	// checksum mismatch, is corruption.
	var extra [1]byte
	if n, err := r.Read(extra[:]); n > 0 || err != io.EOF {
		return nil, errors.New("the stored value does not match its gzip trailer")
	}
	return data, nil
}

// decodeMeta decodes everything but the value.
func decodeMeta(key uds.Key, av map[string]types.AttributeValue) uds.Item {
	it := uds.Item{
		Key:       key,
		ClassName: str(av, schema.AttrClassName),
		CreatedBy: str(av, schema.AttrCreatedBySubject),
		UpdatedBy: str(av, schema.AttrUpdatedBySubject),
		Version:   num(av, schema.AttrVersion),
	}
	it.CreatedDate = parseTime(str(av, schema.AttrCreatedDate))
	it.UpdatedDate = parseTime(str(av, schema.AttrUpdatedDate))
	if ms := num(av, schema.AttrExpiresAtMillis); ms > 0 {
		it.ExpiresAt = time.UnixMilli(ms).UTC()
	}
	return it
}

// owner returns whom a stored item's usage is charged to, and whether it is
// counted at all: items written before UDS carry no owner key and are
// counted from their first update on.
func owner(app string, av map[string]types.AttributeValue) (string, bool) {
	ok := str(av, schema.AttrOwnerKey)
	if ok == "" {
		return str(av, schema.AttrCreatedBySubject), false
	}
	return strings.TrimPrefix(ok, app+uds.KeyDelimiter), true
}

// parseTime reads a stored timestamp. UDS writes them in timeLayout,
// which is read by hand (time.Parse costs ten times more, and a list page
// holds two thousand of them); anything else, such as a legacy item's
// date, goes through time.Parse.
func parseTime(s string) time.Time {
	if t, ok := parseLayout(s); ok {
		return t
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC()
	}
	return time.Time{}
}

// parseLayout reads "2006-01-02T15:04:05.000Z".
func parseLayout(s string) (time.Time, bool) {
	if len(s) != len(timeLayout) || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' || s[23] != 'Z' {
		return time.Time{}, false
	}
	ok := true
	digits := func(from, to int) int {
		n := 0
		for i := from; i < to; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				ok = false
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := digits(0, 4), digits(5, 7), digits(8, 10)
	hour, minute, second, milli := digits(11, 13), digits(14, 16), digits(17, 19), digits(20, 23)
	if !ok || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, second, milli*int(time.Millisecond), time.UTC)
	if t.Day() != day { // 31 April and the like: time.Parse refuses them too
		return time.Time{}, false
	}
	return t, true
}

func str(av map[string]types.AttributeValue, name string) string {
	if v, ok := av[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func num(av map[string]types.AttributeValue, name string) int64 {
	if v, ok := av[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func keyAV(key uds.Key) map[string]types.AttributeValue {
	k := map[string]types.AttributeValue{
		schema.AttrDataKey: &types.AttributeValueMemberS{Value: key.DataKey()},
	}
	if key.SortKey != "" {
		k[schema.AttrSortKey] = &types.AttributeValueMemberS{Value: key.SortKey}
	}
	return k
}
