package store

import (
	"encoding/json"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// itemState is what a write knows of the item it replaces or removes,
// decoded once from the attribute map it was read as. The map stays with
// it: the write's conditions name exactly what was read (exactRevision),
// and a kept version copies it whole.
type itemState struct {
	key uds.Key
	av  map[string]types.AttributeValue
	// owner is who the item's usage is charged to; for an item written
	// before UDS (counted false), its creator, who becomes its owner when
	// it is next written.
	owner     string
	counted   bool
	size      int64
	createdBy string
	// token is the write token of the request that last wrote the item,
	// by which a retry recognises its own commit.
	token string
	// expiresAt is the item's expiry instant in milliseconds, 0 if none.
	expiresAt int64
	// object names a large value's object, "" for a value held in the
	// item; objectSize is that object's size, which size counts.
	object     string
	objectSize int64
}

// stateOf decodes what a write needs of an item read at key; nil when
// the key holds none.
func stateOf(key uds.Key, av map[string]types.AttributeValue) *itemState {
	if av == nil {
		return nil
	}
	who, counted := owner(key.App, av)
	return &itemState{
		key: key, av: av, owner: who, counted: counted,
		size:      num(av, schema.AttrItemSize),
		createdBy: str(av, schema.AttrCreatedBySubject), token: str(av, schema.AttrWriteToken),
		expiresAt: num(av, schema.AttrExpiresAtMillis),
		object:    str(av, schema.AttrDataObject), objectSize: num(av, schema.AttrObjectSize),
	}
}

// itemBytes is what the item takes of DynamoDB, which a transaction that
// keeps it as a version carries: its size, but for a large value its
// object's name and not its bytes (as encodeValue counts a new value).
func (st *itemState) itemBytes() int64 {
	if st.object == "" {
		return st.size
	}
	return st.size - st.objectSize + int64(len(st.object)) + objectAttrBytes
}

// expired reports whether the item's instant has passed at now.
func (st *itemState) expired(now time.Time) bool {
	return st.expiresAt > 0 && st.expiresAt <= now.UnixMilli()
}

// entriesMayBeGone reports whether a query may have removed the item's
// index entries as stale (removeStale) by the time a write made at now
// commits: once the item expired, and a query met its entries. A write
// commits within its request's budget (25 s by default), so an item that
// expires within a minute of now counts as expired already.
func (st *itemState) entriesMayBeGone(now time.Time) bool {
	return st.expired(now.Add(time.Minute))
}

// revision is the revision an If-Match names the item by.
func (st *itemState) revision() uds.Revision { return decodeMeta(st.key, st.av).Revision() }

// held is what the item adds to its owner's usage, whichever way it is
// counted (usage.go, held).
func (st *itemState) held() uds.Usage { return held(st.av) }

// charged is what transactions charged for the item, and so what one
// that replaces or removes it releases (usage.go, charged).
func (st *itemState) charged() uds.Usage { return charged(st.av) }

// data is the item's JSON value as stored, nil for a binary one or when
// the value was not read.
func (st *itemState) data() json.RawMessage {
	if st == nil {
		return nil
	}
	return storedData(st.key, st.av)
}
