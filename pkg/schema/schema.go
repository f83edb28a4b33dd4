// Package schema is the single source of truth for the DynamoDB tables UDS
// uses: their default names, key attributes, secondary indexes and the
// environment variables that carry table names to the functions. The store
// (pkg/store), the local table bootstrapper and the CDK stack (infra/) all
// read it, so the code and the deployed tables cannot disagree.
//
// It has no dependencies on purpose: the CDK module imports it without
// pulling the AWS SDK, and the Lambda module imports it without pulling CDK.
package schema

// AttrType is a DynamoDB scalar attribute type used in a key schema.
type AttrType string

// Key attribute types.
const (
	String AttrType = "S"
	Number AttrType = "N"
	Binary AttrType = "B"
)

// KeyAttr names one key attribute and its type.
type KeyAttr struct {
	Name string
	Type AttrType
}

// Index describes a global secondary index. NonKeyAttributes lists the
// attributes projected beside the keys (an INCLUDE projection); an empty list
// means KEYS_ONLY.
type Index struct {
	Name             string
	Hash             KeyAttr
	Range            *KeyAttr
	NonKeyAttributes []string
}

// Table describes one table: its default name, the environment variable that
// overrides the name, its key schema and its indexes.
type Table struct {
	// ID is a stable identifier used for CDK construct IDs and outputs.
	ID          string
	DefaultName string
	EnvVar      string
	Hash        KeyAttr
	Range       *KeyAttr
	Indexes     []Index
	// Stream is what the table's stream carries; NoStream for a table
	// without one. The expiry function reads the streams: it releases the
	// usage of items and kept versions DynamoDB's TTL deleted, for which
	// old images suffice, and in the streamed quota mode sums each change
	// of an item in the data tables, for which it needs the item as it
	// was and as it became.
	Stream StreamView
}

// StreamView is what the records of a table's stream show of the item
// they change, spelled as DynamoDB's StreamViewType.
type StreamView string

// Stream views.
const (
	NoStream              StreamView = ""
	StreamOldImage        StreamView = "OLD_IMAGE"
	StreamNewAndOldImages StreamView = "NEW_AND_OLD_IMAGES"
)

// Attribute names of the data tables. The first group is the seed's
// (existing data stays readable); the rest are added by UDS.
const (
	AttrDataKey          = "dataKey"
	AttrSortKey          = "sortKey"
	AttrDataValue        = "dataValue"
	AttrClassName        = "className"
	AttrCreatedDate      = "createdDate"
	AttrCreatedBySubject = "createdBySubject"
	AttrUpdatedDate      = "updatedDate"
	AttrUpdatedBySubject = "updatedBySubject"

	// AttrDataValueGzip holds the gzip-compressed JSON when the value is
	// stored compressed; dataValue is then absent.
	AttrDataValueGzip = "dataValueGz"
	// AttrDataBytes holds a binary value's bytes, AttrContentType its
	// media type; dataValue is then absent.
	AttrDataBytes   = "dataBytes"
	AttrContentType = "contentType"
	// AttrDataObject names the object in the bucket that holds a large
	// binary value (uds.Binary's Object), and AttrObjectSize is its
	// length in bytes.
	AttrDataObject = "dataObject"
	AttrObjectSize = "objectSize"
	// An upload's reservation (store/upload.go) names the object on its
	// way (AttrPendingObject), the item it will become (AttrUploadItem,
	// AttrUploadSortKey) and that item's expiry (AttrUploadExpires, epoch
	// milliseconds). Whom it may replace is the commit's to judge, under
	// the policy in effect then.
	AttrPendingObject = "pendingObject"
	AttrUploadItem    = "uploadItem"
	AttrUploadSortKey = "uploadSortKey"
	AttrUploadExpires = "uploadExpires"
	// AttrVersion counts writes to an item; it backs ETag and If-Match.
	AttrVersion = "version"
	// AttrItemSize is the item's size in the quota byte measure.
	AttrItemSize = "itemSize"
	// AttrOwnerKey is "{applicationUuid}|{owner}", the owner index's hash key.
	AttrOwnerKey = "ownerKey"
	// AttrWriteToken is the random token of the last single-item update,
	// so that a retried update recognises its own earlier commit.
	AttrWriteToken = "writeToken"
	// AttrSchemaVersion lets later releases migrate items lazily.
	AttrSchemaVersion = "schemaVersion"
	// AttrExpiresAt is the TTL attribute: when an item expires, in epoch
	// seconds rounded up, so that DynamoDB deletes it.
	AttrExpiresAt = "expiresAt"
	// AttrExpiresAtMillis is the same instant in epoch milliseconds: UDS
	// treats an item as gone from it on, whatever DynamoDB has deleted.
	AttrExpiresAtMillis = "expiresAtMs"
)

// Attribute names of the usage and apps tables.
const (
	AttrUser      = "user"
	AttrApp       = "app"
	AttrAppShard  = "appShard"
	AttrUsedBytes = "usedBytes"
	AttrUsedItems = "usedItems"
	// AttrHistoryBytes is the part of usedBytes that kept versions hold.
	AttrHistoryBytes = "historyBytes"
	AttrLimitBytes   = "limitBytes"
	AttrLimitItems   = "limitItems"
	// AttrLastWrite is when the usage last changed (Unix milliseconds, the
	// writer's clock): recompute lowers a total only once it is quiet.
	AttrLastWrite = "lastWrite"
	// Rate limits: on an app's record (the limit of each caller and of the
	// app as a whole) and on a user's usage record (the override of the
	// caller limit), each a rate a second and a burst.
	AttrRateCallerPerSecond = "rateCallerPerSecond"
	AttrRateCallerBurst     = "rateCallerBurst"
	AttrRateAppPerSecond    = "rateAppPerSecond"
	AttrRateAppBurst        = "rateAppBurst"
	// AttrTAT is a rate bucket's theoretical arrival time (Unix
	// microseconds): the instant its tokens taken so far would all have
	// been paid for at the rate (package store's ratelimit.go).
	AttrTAT = "tat"
	// AttrRecomputedAt is the instant (Unix milliseconds, with a margin
	// for clocks) up to which recompute's last correction accounts for
	// removals: DynamoDB's TTL deletions from before it were already out of
	// the total it stored, and the expiry function does not release them
	// again.
	AttrRecomputedAt = "recomputedAt"
	// AttrSumCovers is the instant (Unix milliseconds) before which
	// recompute's last sum surely saw every item written: the stream
	// counting of a streamed app does not charge those writes again.
	AttrSumCovers = "sumCovers"
	// AttrQuotaMode is an app's quota mode (uds.QuotaMode) on its record;
	// absent, the default (strict).
	AttrQuotaMode = "quotaMode"
	// AttrStreamMarkPrefix begins the name of a usage record's stream
	// marks, one per stream shard that has counted the owner's changes: a
	// map of the last sequence number counted (S, zero-padded) and when
	// (N, Unix milliseconds), so a record delivered again is not counted
	// twice.
	AttrStreamMarkPrefix = "streamMark:"
	// An erase of a user's data (package store's erase.go) keeps its
	// state in the usage table, in the user's partition under the sort
	// key EraseRecord, which no app (a UUID) can be: its state
	// (uds.ErasureState), when it started, when its removals begin, when
	// it ended (Unix milliseconds), the days it holds the user's writes
	// refused after that, the pseudonym it writes into audit fields while
	// it runs, and one count per app and kind of what it removed, named
	// AttrErasedPrefix, the app, ":" and the kind (uds.ErasedItems, ...).
	EraseRecord        = "*erase"
	AttrEraseState     = "eraseState"
	AttrEraseStarted   = "eraseStarted"
	AttrEraseDeletes   = "eraseDeletesFrom"
	AttrEraseEnded     = "eraseEnded"
	AttrEraseHoldDays  = "eraseHoldDays"
	AttrErasePseudonym = "erasePseudonym"
	// AttrEraseObjects names the objects of the values an erase removed
	// that it has not yet removed from the bucket (a string set): the
	// removal notes them in its transaction, and the erase removes them
	// and their names after, whatever cut it short.
	AttrEraseObjects = "eraseObjects"
	// AttrEraseScan is where an erase's scan for the user's name in
	// others' items got to (package store's erase_audit.go).
	AttrEraseScan    = "eraseScan"
	AttrErasedPrefix = "erased:"
	// AttrErasePrevious lists the receipts of the user's earlier erases,
	// oldest first, each a map of its record's attributes: an erase
	// asked for again once the last one's hold is over starts anew and
	// keeps them.
	AttrErasePrevious = "erasePrevious"
	// The registry (package store's registry.go): an app's record holds
	// its name as registered, its description and when it was registered
	// and last changed (RFC 3339), and, while registered, AttrRegistry
	// (the constant RegistryPartition) and AttrAppNameKey (the folded
	// name), the keys of the byName index. A claim item, keyed "name#"
	// and the folded name, holds the name for its app (AttrClaimedBy), so
	// that no two apps share one.
	AttrAppName        = "appName"
	AttrAppDescription = "appDescription"
	AttrRegistered     = "registeredDate"
	AttrRegistryUpdate = "registryUpdated"
	AttrRegistry       = "registry"
	AttrAppNameKey     = "appNameKey"
	AttrClaimedBy      = "claimedBy"
)

// RegistryPartition is the byName index's one partition: registrations
// change rarely and are listed whole, by name.
const RegistryPartition = "apps"

// HeldPartition is the byName index's partition of the apps that hold
// data and are not registered, keyed by their id in AttrAppNameKey (the
// catalogue, package store's catalog.go): a registration moves an app to
// RegistryPartition, and its removal moves it back.
const HeldPartition = "held"

// AttrHeldSince marks, on a namespace's record in the namespaces table
// and on an app's record in the apps table, that the namespace (the app)
// has held data since then (RFC 3339): the catalogue of what holds data
// (package store's catalog.go).
const AttrHeldSince = "heldSince"

// Attribute names of the namespaces table (namespace policies; the
// updatedDate attribute is shared with the data tables).
const (
	AttrNamespace     = "namespace"
	AttrAccess        = "access"
	AttrJSONSchema    = "jsonSchema"
	AttrPolicyVersion = "policyVersion"
	// A change into or out of private under way: the policy it sets
	// (access absent for the defaults, schema absent for none), when it
	// was announced, from when it may complete and when it lapses, in
	// Unix milliseconds. AttrSettlesAt exists exactly while one is.
	AttrPendingAccess = "pendingAccess"
	AttrPendingSchema = "pendingSchema"
	AttrPendingSince  = "pendingSince"
	AttrSettlesAt     = "settlesAt"
	AttrLapsesAt      = "lapsesAt"
	// AttrHistory is the namespace's history policy, a map of
	// AttrHistoryVersions and AttrHistoryDays (0: no age limit), absent
	// when the namespace keeps no versions. It is never pending: a change
	// stores it at once.
	AttrHistory         = "history"
	AttrHistoryVersions = "versions"
	AttrHistoryDays     = "days"
	// AttrIndexes holds the namespace's declared indexes (JSON text: name,
	// path, type, ID, whether ready, items built), and AttrIndexBuild the
	// work their last change left (JSON text), absent when none is.
	AttrIndexes    = "indexes"
	AttrIndexBuild = "indexBuild"
	// AttrBinaryRule holds what the namespace accepts of binary values
	// (JSON text: content types, size cap), absent for the default. Like
	// the history, a change stores it at once.
	AttrBinaryRule = "binaryRule"
)

// Attribute names of the index table (data_index). An entry names its
// item by the item's own key attributes (AttrDataKey, AttrSortKey).
const (
	// AttrIndexKey is an entry's partition: the app, namespace, index ID
	// and write shard, and in a private namespace the owner.
	AttrIndexKey = "indexKey"
	// AttrIndexSort orders an index's entries: the indexed value, then
	// the item's key, in an encoding whose byte order is theirs.
	AttrIndexSort = "indexSort"
)

// IndexShards is the number of write shards of each index of a shared or
// owner-write namespace: an index's entries spread over this many
// partitions whatever their values, so a value that many items share is
// no hotter than the index as a whole, and a query reads every shard.
// Changing it strands entries in shards no longer read, so it is fixed for
// the life of a deployment.
const IndexShards = 8

// Attribute names of the history table (data_history). A kept version
// carries the replaced item's own attributes beside these.
const (
	// AttrHistoryKey names one item's history: a digest of the table and
	// the item's key, so that any item key fits the partition key.
	AttrHistoryKey = "historyKey"
	// AttrKeptAt is when the version was replaced (Unix milliseconds).
	AttrKeptAt = "keptAt"
	// AttrKeptOrder is a kept entry's sort key in the history table's
	// owner index: the item's digest and the zero-padded version, so that
	// an owner's entries come in the same order in every app.
	AttrKeptOrder = "keptOrder"
	// AttrDeleted marks a delete marker: the entry a delete leaves above
	// the version it kept, with who deleted the item and when, and no
	// value.
	AttrDeleted = "deleted"
	// AttrStreamCounted (BOOL true) marks an item written in an app whose
	// quota mode is streamed: its owner's usage counts it from the table's
	// stream, not in the write's transaction, and every write path leaves
	// its size to the stream (package store's usage.go, charged).
	AttrStreamCounted = "streamCounted"
	// AttrKept, AttrLastVersion and AttrHeadRevision are the attributes of
	// an item's history head (the entry at version HeadVersion): the kept
	// versions' sizes, owners and audit fields, the highest version number
	// a kept version or delete marker of the key has used, and a counter
	// that every change of the head bumps.
	AttrKept         = "kept"
	AttrLastVersion  = "lastVersion"
	AttrHeadRevision = "headRevision"
	// AttrObjectsFrom is, in a history head, the lowest version number
	// from which the head's kept list names each large version's object;
	// a head written before heads named objects lacks it, and the entries
	// of the versions it lists say.
	AttrObjectsFrom = "objectsFrom"
)

// HeadVersion is the history table's sort key of an item's history head;
// kept versions take their own version numbers, from 0 (an item written
// before versions were counted) up.
const HeadVersion = -1

// Index names.
const (
	IndexByOwner    = "byOwner"
	IndexByAppShard = "byAppShard"
	IndexByName     = "byName"
)

// AppShards is the number of write shards of the usage table's app index.
// Changing it strands usage records in shards that are no longer queried, so
// it is fixed for the life of a deployment.
const AppShards = 16

// CurrentSchemaVersion is written into every item this release stores.
const CurrentSchemaVersion = 1

// ownerIndex has no sort key: recompute only sums an owner's item sizes,
// and the item's own key could not serve (a dataKey may take 2,048 bytes,
// an index sort key at most 1,024). Every item that names an owner is in
// it, whatever release wrote it. It projects the size and the expiry:
// recompute sums live items, and a refused write finds the owner's
// expired items there.
var ownerIndex = Index{
	Name:             IndexByOwner,
	Hash:             KeyAttr{AttrOwnerKey, String},
	NonKeyAttributes: []string{AttrItemSize, AttrExpiresAtMillis},
}

// Data is the key-value table (seed 002's data_store).
var Data = Table{
	ID:          "DataTable",
	DefaultName: "data_store",
	EnvVar:      "UDS_TABLE_DATA",
	Hash:        KeyAttr{AttrDataKey, String},
	Indexes:     []Index{ownerIndex},
	Stream:      StreamNewAndOldImages,
}

// List is the sorted-list table (seed 002's data_store_list).
var List = Table{
	ID:          "ListTable",
	DefaultName: "data_store_list",
	EnvVar:      "UDS_TABLE_LIST",
	Hash:        KeyAttr{AttrDataKey, String},
	Range:       &KeyAttr{AttrSortKey, String},
	Indexes:     []Index{ownerIndex},
	Stream:      StreamNewAndOldImages,
}

// History holds the versions that writes in namespaces with a history
// policy replaced, one partition per item, and each item's history head.
// Its owner index serves recompute and export as the data tables' does,
// sorted (schema.AttrKeptOrder) so that an export lists an owner's kept
// entries in the same order whatever app holds them; its stream
// lets the expiry function release versions that DynamoDB's TTL removed
// after the policy's age limit.
var History = Table{
	ID:          "HistoryTable",
	DefaultName: "data_history",
	EnvVar:      "UDS_TABLE_HISTORY",
	Hash:        KeyAttr{AttrHistoryKey, String},
	Range:       &KeyAttr{AttrVersion, Number},
	Indexes: []Index{{
		Name:             IndexByOwner,
		Hash:             KeyAttr{AttrOwnerKey, String},
		Range:            &KeyAttr{AttrKeptOrder, String},
		NonKeyAttributes: []string{AttrItemSize, AttrExpiresAtMillis},
	}},
	Stream: StreamOldImage,
}

// IndexEntries holds the entries of the namespaces' declared indexes (package
// store's index.go): one per indexed item and index, written in the
// transaction of the item's write, so a strongly consistent query of it
// sees every acknowledged write.
var IndexEntries = Table{
	ID:          "IndexTable",
	DefaultName: "data_index",
	EnvVar:      "UDS_TABLE_INDEX",
	Hash:        KeyAttr{AttrIndexKey, String},
	Range:       &KeyAttr{AttrIndexSort, Binary},
}

// Usage holds per (user, app) usage and the per-user limit override. Its hash
// key is the user, so one query lists a user's apps; the app index is write
// sharded so no partition carries one app's whole load.
var Usage = Table{
	ID:          "UsageTable",
	DefaultName: "data_usage",
	EnvVar:      "UDS_TABLE_USAGE",
	Hash:        KeyAttr{AttrUser, String},
	Range:       &KeyAttr{AttrApp, String},
	Indexes: []Index{{
		Name:             IndexByAppShard,
		Hash:             KeyAttr{AttrAppShard, String},
		Range:            &KeyAttr{AttrUser, String},
		NonKeyAttributes: []string{AttrApp, AttrUsedBytes, AttrUsedItems},
	}},
}

// Apps holds each application's default per-user limits and rate limits,
// and its registration (seed 000's apps). Only registered apps are in the
// sparse byName index, which lists them by name.
var Apps = Table{
	ID:          "AppsTable",
	DefaultName: "apps",
	EnvVar:      "UDS_TABLE_APPS",
	Hash:        KeyAttr{AttrApp, String},
	Indexes: []Index{{
		Name:  IndexByName,
		Hash:  KeyAttr{AttrRegistry, String},
		Range: &KeyAttr{AttrAppNameKey, String},
		NonKeyAttributes: []string{AttrAppName, AttrAppDescription, AttrRegistered, AttrRegistryUpdate,
			AttrLimitBytes, AttrLimitItems},
	}},
}

// Namespaces holds the policies of namespaces (access mode and JSON
// Schema), keyed by app so that one query lists an app's policies.
var Namespaces = Table{
	ID:          "NamespacesTable",
	DefaultName: "namespace_policies",
	EnvVar:      "UDS_TABLE_NAMESPACES",
	Hash:        KeyAttr{AttrApp, String},
	Range:       &KeyAttr{AttrNamespace, String},
}

// Changes holds the changes feed (package store's changes.go): one small
// row per change of an item of the data tables, written from their
// streams by the changes function, in partitions of a namespace's key
// space (changesBuckets of them, so that a busy namespace spreads its
// writes), sorted by when the row was written. Rows expire after the
// feed's retention (AttrExpiresAt, the tables' TTL attribute).
var Changes = Table{
	ID:          "ChangesTable",
	DefaultName: "data_changes",
	EnvVar:      "UDS_TABLE_CHANGES",
	Hash:        KeyAttr{AttrChangesKey, String},
	Range:       &KeyAttr{AttrChangeSeq, String},
}

// Attribute names of the changes table. A row names its item by the data
// tables' own key (AttrDataKey, AttrSortKey) and carries the version the
// change wrote or removed (AttrVersion).
const (
	// AttrChangesKey is a row's partition: app, namespace, key space and
	// bucket.
	AttrChangesKey = "changesKey"
	// AttrChangeSeq orders a partition's rows: the millisecond the row
	// was written (or an expiry's), fixed width, then a suffix that makes
	// it unique.
	AttrChangeSeq = "seq"
	// AttrChangeRemoved marks a row of a removal (delete, expiry, erase).
	AttrChangeRemoved = "removed"
	// AttrChangeAt is when the change was made, in epoch milliseconds:
	// the stream record's time, or an expiry's instant.
	AttrChangeAt = "at"
)

// Connections holds the deployed realtime endpoint's WebSocket
// connections and who subscribes to what (package wsgateway): a
// connection's record, under "c|" and its id, carries its caller and its
// session; a subscriber's record, under "f|" and the feed it reads (app,
// namespace and key space), names a connection and a subscription, so
// that one strongly consistent query finds whom a change goes to. Records
// leave by the TTL (AttrExpiresAt) some time after API Gateway has closed
// their connection, whether or not $disconnect came.
//
// It is not in Tables: only the deployed endpoint has it (the local
// server keeps its connections in memory), it holds no user data, and a
// deployment that imports its tables creates it all the same.
var Connections = Table{
	ID:          "ConnectionsTable",
	DefaultName: "realtime_connections",
	EnvVar:      "UDS_TABLE_CONNECTIONS",
	Hash:        KeyAttr{AttrRealtimeKey, String},
	Range:       &KeyAttr{AttrRealtimeSort, String},
}

// Attribute names of the connections table.
const (
	// AttrRealtimeKey is a record's partition: "c|" and a connection's
	// id, or "f|" and a feed.
	AttrRealtimeKey = "rtKey"
	// AttrRealtimeSort is "connection" for a connection's record, and a
	// connection's id, "|" and a subscription's id for a subscriber's.
	AttrRealtimeSort = "rtSort"
)

// Tables lists every table UDS uses.
var Tables = []Table{Data, List, History, IndexEntries, Usage, Apps, Namespaces, Changes}

// TableNames holds the physical name of each table of a deployment.
type TableNames struct {
	Data, List, History, Index, Usage, Apps, Namespaces, Changes string
}

// Name returns the physical name of t.
func (n TableNames) Name(t Table) string {
	switch t.ID {
	case Data.ID:
		return n.Data
	case List.ID:
		return n.List
	case History.ID:
		return n.History
	case IndexEntries.ID:
		return n.Index
	case Usage.ID:
		return n.Usage
	case Apps.ID:
		return n.Apps
	case Namespaces.ID:
		return n.Namespaces
	case Changes.ID:
		return n.Changes
	}
	return ""
}
