package store

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
func writeTime() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// FormatTime renders a timestamp the way UDS stores and returns it.
func FormatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

// itemOverhead stands in, in the size measure, for the attributes every
// item carries beside its key and value (audit fields, version, owner key,
// size, schema version). A constant keeps the measure independent of who
// wrote the item, so an update knows the new size before it reads the old.
const itemOverhead = 100

// creatorAllowance is what the item size check reserves for the creator's
// attributes (createdBySubject and ownerKey), which an update does not know.
const creatorAllowance = 1024

// encodedValue is an item's value in its DynamoDB form.
type encodedValue struct {
	// name is the attribute that holds the value: dataValue (JSON text) or
	// dataValueGz (gzip of the JSON).
	name string
	av   types.AttributeValue
	// size is the item's quota size: key, stored value and class name
	// bytes plus itemOverhead.
	size int64
}

// encodeValue prepares the value of w for storage. It is stored compressed
// when that makes it smaller; a value that cannot fit a DynamoDB item even
// then is uds.ErrTooLarge.
func encodeValue(w *uds.Write) (encodedValue, error) {
	v := encodedValue{name: schema.AttrDataValue, av: &types.AttributeValueMemberS{Value: string(w.Data)}}
	stored := len(w.Data)
	if len(w.Data) > compressAbove {
		if z := compress(w.Data); len(z) < len(w.Data) {
			v = encodedValue{name: schema.AttrDataValueGzip, av: &types.AttributeValueMemberB{Value: z}}
			stored = len(z)
		}
	}
	keyBytes := len(w.DataKey()) + len(w.SortKey)
	v.size = int64(keyBytes+stored+len(w.ClassName)) + itemOverhead
	// The real DynamoDB size adds attribute names, timestamps and the
	// subjects; bound it from above so DynamoDB never has to refuse.
	names := 0
	for _, n := range []string{schema.AttrDataKey, schema.AttrSortKey, v.name, schema.AttrClassName,
		schema.AttrCreatedDate, schema.AttrCreatedBySubject, schema.AttrUpdatedDate, schema.AttrUpdatedBySubject,
		schema.AttrVersion, schema.AttrItemSize, schema.AttrOwnerKey, schema.AttrSchemaVersion,
		schema.AttrWriteToken, schema.AttrExpiresAt, schema.AttrExpiresAtMillis} {
		names += len(n)
	}
	// 96 bytes hold the numbers (version, size, schema version, expiry)
	// and the 32-character write token.
	upper := keyBytes + stored + len(w.ClassName) + names + 2*len(timeLayout) + len(w.Subject) + len(w.App) + creatorAllowance + 96
	if upper > MaxItemBytes {
		return v, &uds.TooLargeError{Reason: fmt.Sprintf("the value takes %d bytes after compression; with its key and attributes it does not fit DynamoDB's %d-byte item limit", stored, MaxItemBytes)}
	}
	return v, nil
}

// encodeItem renders a new item (version 1) in its DynamoDB form.
func encodeItem(it *uds.Item, v encodedValue) map[string]types.AttributeValue {
	av := map[string]types.AttributeValue{
		schema.AttrDataKey:          &types.AttributeValueMemberS{Value: it.DataKey()},
		v.name:                      v.av,
		schema.AttrCreatedDate:      &types.AttributeValueMemberS{Value: FormatTime(it.CreatedDate)},
		schema.AttrCreatedBySubject: &types.AttributeValueMemberS{Value: it.CreatedBy},
		schema.AttrUpdatedDate:      &types.AttributeValueMemberS{Value: FormatTime(it.UpdatedDate)},
		schema.AttrUpdatedBySubject: &types.AttributeValueMemberS{Value: it.UpdatedBy},
		schema.AttrVersion:          &types.AttributeValueMemberN{Value: strconv.FormatInt(it.Version, 10)},
		schema.AttrItemSize:         &types.AttributeValueMemberN{Value: strconv.FormatInt(v.size, 10)},
		schema.AttrOwnerKey:         &types.AttributeValueMemberS{Value: ownerKey(it.App, it.CreatedBy)},
		schema.AttrSchemaVersion:    &types.AttributeValueMemberN{Value: schemaVersion},
	}
	if it.SortKey != "" {
		av[schema.AttrSortKey] = &types.AttributeValueMemberS{Value: it.SortKey}
	}
	if it.ClassName != "" {
		av[schema.AttrClassName] = &types.AttributeValueMemberS{Value: it.ClassName}
	}
	if !it.ExpiresAt.IsZero() {
		av[schema.AttrExpiresAt], av[schema.AttrExpiresAtMillis] = expiryAVs(it.ExpiresAt)
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

// decodeItem turns a DynamoDB item back into a uds.Item. Items written before
// UDS (the seed's Java service) lack version and size and still decode.
func decodeItem(key uds.Key, av map[string]types.AttributeValue) (uds.Item, error) {
	it := decodeMeta(key, av)
	switch v := av[schema.AttrDataValueGzip].(type) {
	case *types.AttributeValueMemberB:
		r, err := gzip.NewReader(bytes.NewReader(v.Value))
		if err != nil {
			return it, fmt.Errorf("decompress %s: %w", key.DataKey(), err)
		}
		// UDS never stores more than uds.MaxDataBytes: reading one byte
		// past it is enough to refuse a value that expands further (a
		// corrupt or foreign one) without holding all of it.
		data, err := io.ReadAll(io.LimitReader(r, uds.MaxDataBytes+1))
		if err != nil {
			return it, fmt.Errorf("decompress %s: %w", key.DataKey(), err)
		}
		if len(data) > uds.MaxDataBytes {
			return it, fmt.Errorf("decompress %s: the stored value expands past %d bytes", key.DataKey(), uds.MaxDataBytes)
		}
		it.Data = data
	default:
		it.Data = json.RawMessage(str(av, schema.AttrDataValue))
	}
	return it, nil
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

func parseTime(s string) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC()
	}
	return time.Time{}
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
