package main

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/udsproject/uds/pkg/schema"
)

// Function names. Each is also the name of the zip the root Makefile builds
// (build/<name>.zip) and of the directory under functions/.
const (
	fnKV       = "kv"
	fnList     = "list"
	fnAdmin    = "admin"
	fnExpiry   = "expiry"
	fnChanges  = "changes"
	fnRealtime = "realtime"
	fnDeliver  = "deliver"
)

// functionSpec sizes one Lambda function.
//
// The API's three get 512 MB: Lambda allocates CPU in proportion to memory,
// and the work here (JSON parsing and re-encoding, gzip of large values,
// HMAC of cursors, parallel DynamoDB calls) is CPU-bound rather than
// memory-bound. At 512 MB an arm64 function answers a 1 MB body several
// times faster than at 128 MB for little more cost per request. The
// stream functions (expiry, changes) get 256 MB: their batches are small
// records and a few DynamoDB calls.
type functionSpec struct {
	Name string
	// ConstructID names the function in the template (and for
	// `sam local invoke`).
	ConstructID string
	MemoryMB    float64
	// Timeout is the function's limit. API Gateway gives up on an
	// integration after 29 seconds whatever the function does, so no
	// function needs more than that.
	Timeout     time.Duration
	Description string
	// Metrics is whether the function writes the request and batch EMF
	// records (namespace UDS) that the per-function graphs and the
	// throttles alarm read: the changes and realtime functions write a
	// log line per batch or connect and none of those; the changes and
	// deliver functions' realtime records (PublishFailures, Deliveries,
	// PostFailures) have alarms of their own (realtime.go).
	Metrics bool
}

func (f functionSpec) zipPath(assetDir string) string {
	return filepath.Join(assetDir, f.Name+".zip")
}

// functionSpecs lists the functions in a fixed order, so the template is
// stable from one synth to the next.
var functionSpecs = []functionSpec{
	{
		Name: fnKV, ConstructID: "KvFunction", MemoryMB: 512,
		// A key-value request is a handful of single-item calls; 10 s
		// leaves room for SDK retries under throttling and still fails
		// fast when something hangs.
		Timeout:     10 * time.Second,
		Description: "UDS key-value items and the caller's quota view",
		Metrics:     true,
	},
	{
		Name: fnList, ConstructID: "ListFunction", MemoryMB: 512,
		// Deleting a whole list runs batched deletes until its budget
		// (listDeleteAllBudget) is spent, up to API Gateway's 30 s limit.
		Timeout:     29 * time.Second,
		Description: "UDS sorted lists",
		Metrics:     true,
	},
	{
		Name: fnAdmin, ConstructID: "AdminFunction", MemoryMB: 512,
		// Recomputing a user's usage reads all of their items, which can
		// take as long as API Gateway allows.
		Timeout:     29 * time.Second,
		Description: "UDS administration: usage, quotas, namespace policies, export and import",
		Metrics:     true,
	},
	{
		Name: fnExpiry, ConstructID: "ExpiryFunction", MemoryMB: 256,
		// A batch of up to 100 stream records is 100 small transactions.
		Timeout:     60 * time.Second,
		Description: "UDS expiry: sums streamed usage, releases the usage of items DynamoDB's TTL deleted, and commits uploaded large values",
		Metrics:     true,
	},
	{
		Name: fnChanges, ConstructID: "ChangesFunction", MemoryMB: 256,
		// A batch of up to 100 stream records is up to 200 rows (an
		// expiring item has a second one), 8 BatchWriteItem calls of 25,
		// each written again while it takes longer than a second
		// (store.LogChanges, at most 8 rounds): well under a minute
		// unless DynamoDB throttles for long, and then the batch fails,
		// its rows are written again on the next try, and the lag
		// alarm tells.
		Timeout:     60 * time.Second,
		Description: "UDS changes feed: writes a row per change of an item of the data tables, from their streams, and publishes it to the realtime subscribers",
	},
	{
		Name: fnRealtime, ConstructID: "RealtimeFunction", MemoryMB: 256,
		// A connect verifies a token (its issuer's keys fetched within
		// 5 s when not cached) and writes a record; a message is one
		// SQS call.
		Timeout:     10 * time.Second,
		Description: "UDS realtime: the WebSocket API's routes; records connections and queues their messages",
	},
	{
		Name: fnDeliver, ConstructID: "DeliverFunction", MemoryMB: 512,
		// A subscribe from a cursor reads the feed's pages and may wait
		// a settle time for its horizon; a batch is up to ten events,
		// each posting its answers in order.
		Timeout:     60 * time.Second,
		Description: "UDS realtime delivery: takes each connection's events in order through the protocol and posts the answers",
	},
}

// functionSpecOf is the spec of function name.
func functionSpecOf(name string) functionSpec {
	for _, f := range functionSpecs {
		if f.Name == name {
			return f
		}
	}
	panic("no function " + name)
}

// listDeleteAllBudget is how long one DELETE .../list may keep deleting
// before it answers that the list was only partly deleted. It stays well
// under the list function's timeout so the answer is always sent.
const listDeleteAllBudget = 25 * time.Second

// tableAccess grants Actions on one table, or on one of its indexes when
// Index is set. LeadingKeys, when set, limits the grant to the items
// whose partition key matches one of its patterns (IAM's
// dynamodb:LeadingKeys, StringLike: * matches any characters).
// Attributes, when set, limits it to requests that name no other
// attribute (IAM's dynamodb:Attributes; the key's attributes among them).
type tableAccess struct {
	Table       schema.Table
	Index       string
	Actions     []string
	LeadingKeys []string
	Attributes  []string
}

// functionAccess is the complete DynamoDB permission set of the stack:
// function name → the tables and indexes it may touch, and how. Nothing else
// in the stack grants DynamoDB access, so this is the one place to adjust
// when the store starts making a new call.
//
// The data functions read the apps and usage tables for the limits in
// effect (the store caches them, fetching an app's default and a user's
// override with one BatchGetItem). Every write that changes usage is a
// TransactWriteItems of the data write and a conditional usage update; IAM
// authorises each action of a transaction as the single-item call it
// stands for (PutItem, UpdateItem, DeleteItem), so those are the grants.
// The admin function reads the same records for its quota views, and
// recompute stores a corrected total with a one-action transaction.
//
// The history table takes part in the same transactions: a write in a
// namespace with a history policy puts the replaced version and updates
// the item's history head beside the data write, deletes the versions the
// policy prunes, and checks the head where it only has to be unchanged
// (ConditionCheckItem). Reads take GetItem and BatchGetItem: an item's
// head names its kept versions, so listing them needs no Query. A write
// or read of an item with history reads the item, its head and a version
// in one BatchGetItem across the item's table and the history table, and
// dropping an item's versions checks that the item stays as read
// (ConditionCheckItem on the item's table).
//
// The rate limits read their configuration with the limits: the data
// functions read an app's record and a user's usage record with one
// BatchGetItem (cached like the limits), and lease tokens from a rate
// bucket's item in the apps table with one conditional UpdateItem. Those
// items' keys begin "rate#", which no app's record has (an app's key is
// its UUID), and the grant is limited to them: a data function changes no
// app's limits. The admin function reads and sets the rate limits on the
// app's record and the user's usage record (GetItem, UpdateItem), and
// leases nothing: the admin routes are not limited.
//
// The index table takes part in them too: a write in a namespace that
// declares indexes puts the entries its value gains and deletes those it
// loses, in the transaction that writes the item, whichever function
// serves it. Entries are never updated: an entry is a key and nothing
// the item does not already name.
var functionAccess = map[string][]tableAccess{
	fnKV: {
		// The kv function also serves batches, whose operations address
		// list items too and whose atomic form reads with BatchGetItem.
		{Table: schema.Data, Actions: []string{
			"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchGetItem",
			"dynamodb:ConditionCheckItem",
		}},
		// A query of an index serves key-value and list items alike. It
		// removes an entry that no longer leads to its item (expired,
		// or rewritten while a build ran) in a transaction that checks
		// the item is still as the query read it, on whichever data
		// table holds it: hence ConditionCheckItem here as on the data
		// table. That removal is best effort and its failures go
		// unreported: TestIndexDynamoDBActions (pkg/httpapi) is what
		// notices a grant missing for it.
		{Table: schema.List, Actions: []string{
			"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchGetItem",
			"dynamodb:ConditionCheckItem",
		}},
		{Table: schema.History, Actions: historyItemActions},
		// Index queries (GET /data/{app}/{namespace}?index=) read an
		// index's partitions with Query, strongly consistent, and then
		// the items with BatchGetItem on the data tables; the stale
		// entries they meet are deleted.
		{Table: schema.IndexEntries, Actions: []string{"dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:Query"}},
		{Table: schema.Usage, Actions: []string{
			"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:BatchGetItem",
		}},
		{Table: schema.Apps, Actions: []string{
			"dynamodb:GetItem", "dynamodb:BatchGetItem",
		}},
		rateBuckets,
		// A write refused for quota looks for its owner's expired items.
		{Table: schema.Data, Index: schema.IndexByOwner, Actions: []string{"dynamodb:Query"}},
		{Table: schema.List, Index: schema.IndexByOwner, Actions: []string{"dynamodb:Query"}},
		// Every request reads its namespace's policy (cached).
		{Table: schema.Namespaces, Actions: []string{"dynamodb:GetItem"}},
		catalogueMarks[0], catalogueMarks[1],
		// A read of the changes feed (GET /data/{app}/{namespace}?changes=)
		// starts with a walk of the namespace's items: the app's owners
		// from the usage table's app index, each owner's items through
		// the owner indexes (granted above), read with BatchGetItem. It
		// then queries the feed's partitions of its key space, strongly
		// consistent. TestChangesDynamoDBActions (pkg/httpapi) lists what
		// it takes.
		{Table: schema.Usage, Index: schema.IndexByAppShard, Actions: []string{"dynamodb:Query"}},
		{Table: schema.Changes, Actions: []string{"dynamodb:Query"}},
	},
	fnList: {
		{Table: schema.List, Actions: []string{
			"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
			"dynamodb:Query", "dynamodb:BatchGetItem", "dynamodb:ConditionCheckItem",
		}},
		{Table: schema.History, Actions: historyItemActions},
		// List items in a namespace with indexes have entries like any
		// other; deleting a whole list there removes its items one by
		// one, each with its entries.
		{Table: schema.IndexEntries, Actions: []string{"dynamodb:PutItem", "dynamodb:DeleteItem"}},
		{Table: schema.Usage, Actions: []string{
			"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:BatchGetItem",
		}},
		{Table: schema.Apps, Actions: []string{
			"dynamodb:GetItem", "dynamodb:BatchGetItem",
		}},
		rateBuckets,
		// ...and removes them, key-value items included.
		{Table: schema.Data, Actions: []string{"dynamodb:DeleteItem"}},
		{Table: schema.Data, Index: schema.IndexByOwner, Actions: []string{"dynamodb:Query"}},
		{Table: schema.List, Index: schema.IndexByOwner, Actions: []string{"dynamodb:Query"}},
		{Table: schema.Namespaces, Actions: []string{"dynamodb:GetItem"}},
		catalogueMarks[0], catalogueMarks[1],
	},
	fnAdmin: {
		// A user's apps are a query on the usage table's hash key; an
		// app's users are parallel queries on the sharded app index. A
		// user's rate limit override is read alone (GetItem). An erase
		// of a user's data puts its record in the user's partition and
		// deletes their usage records (TestEraseDynamoDBActions lists
		// what it takes).
		{Table: schema.Usage, Actions: []string{
			"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:BatchGetItem",
			"dynamodb:PutItem", "dynamodb:DeleteItem",
		}},
		{Table: schema.Usage, Index: schema.IndexByAppShard, Actions: []string{"dynamodb:Query"}},
		// Quota views read usage and the app default in one BatchGetItem;
		// the app limits and rate limits views read the app alone; limit
		// and rate limit changes update. The registry updates an app's
		// record and puts or deletes its name's claim in one
		// transaction, looks a name up by its claim, and lists
		// registered apps with a Query of the byName index.
		{Table: schema.Apps, Actions: []string{"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:BatchGetItem",
			"dynamodb:PutItem", "dynamodb:DeleteItem"}},
		{Table: schema.Apps, Index: schema.IndexByName, Actions: []string{"dynamodb:Query"}},
		// Recompute and export read an owner's items through the owner
		// index of both data tables. Recompute, and an import whose key
		// holds an expired item, remove expired items (a transaction
		// of deletes). Export reads the items themselves with
		// BatchGetItem; import writes each record as a put inside a
		// transaction, which also returns the item in the way when its
		// condition fails (no read permission needed for that). The
		// actions export and import take are listed by
		// TestExportImportDynamoDBActions (pkg/httpapi). A change of
		// namespace policy that moves a namespace's items to another key
		// space first scans the data tables for an item of it. An erase
		// scans them for the user's name in others' items, which it
		// updates, and reads whether an item holds a key whose history
		// it empties (its head goes when none does).
		{Table: schema.Data, Actions: []string{
			"dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:BatchGetItem", "dynamodb:Scan",
			"dynamodb:UpdateItem", "dynamodb:GetItem",
		}},
		{Table: schema.List, Actions: []string{
			"dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:BatchGetItem", "dynamodb:Scan",
			"dynamodb:UpdateItem", "dynamodb:GetItem",
		}},
		{Table: schema.Data, Index: schema.IndexByOwner, Actions: []string{"dynamodb:Query"}},
		{Table: schema.List, Index: schema.IndexByOwner, Actions: []string{"dynamodb:Query"}},
		// Kept versions count in their owner's usage, so recompute and
		// export find an owner's versions through the history table's
		// owner index as they find the owner's items. Export and import
		// read and write versions and history heads with the data
		// functions' actions, and dropping kept versions that no item
		// key leads to (a namespace's, when its policy changes) finds
		// them with a Scan, as a policy change scans the data tables.
		{Table: schema.History, Actions: append([]string{"dynamodb:Scan"}, historyItemActions...)},
		{Table: schema.History, Index: schema.IndexByOwner, Actions: []string{"dynamodb:Query"}},
		// Building a namespace's indexes (POST .../indexes/build) scans
		// the data tables, strongly consistent, for the items stored
		// before the indexes were declared and puts their entries, and
		// scans the index table for the entries of dropped indexes and
		// deletes them, both with BatchWriteItem (one IAM action for its
		// puts and deletes alike). Import puts an imported item's entries
		// inside its transaction, and removes the entries of an expired
		// item it finds on a record's key with the item.
		{Table: schema.IndexEntries, Actions: []string{"dynamodb:Scan", "dynamodb:BatchWriteItem", "dynamodb:PutItem", "dynamodb:DeleteItem"}},
		// Namespace policies: read (import checks each record's key space
		// against its namespace's), set and listed per app.
		{Table: schema.Namespaces, Actions: []string{"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:Query"}},
	},
	fnExpiry: {
		// A release is a transaction of the owner's usage change and a
		// marker in the apps table that makes a redelivered record a no-op,
		// for a kept version that DynamoDB's TTL removed as for an item.
		// In the streamed quota mode it adds an owner's changes to the
		// owner's usage (UpdateItem) beside the high-water marks of the
		// stream shards it has applied, which it reads first (GetItem).
		// Reading the streams is granted with the event source mappings.
		{Table: schema.Usage, Actions: []string{"dynamodb:GetItem", "dynamodb:UpdateItem"}},
		{Table: schema.Apps, Actions: []string{"dynamodb:PutItem"}},
		// An item the TTL removed takes its index entries with it: the
		// namespace's policy names its indexes, and the entries go in a
		// transaction that checks no item has taken the key since.
		{Table: schema.Namespaces, Actions: []string{"dynamodb:GetItem"}},
		{Table: schema.Data, Actions: []string{"dynamodb:ConditionCheckItem"}},
		{Table: schema.List, Actions: []string{"dynamodb:ConditionCheckItem"}},
		{Table: schema.IndexEntries, Actions: []string{"dynamodb:DeleteItem"}},
		// A commit of an upload creates its item, which may be its
		// namespace's first.
		catalogueMarks[0], catalogueMarks[1],
	},
	fnChanges: {
		// The feed's rows are put with BatchWriteItem, which IAM
		// authorises as itself whatever puts it holds; the function
		// reads nothing of the tables, and deletes nothing (rows leave
		// by the table's TTL). Reading the data tables' streams is
		// granted with the event source mappings.
		{Table: schema.Changes, Actions: []string{"dynamodb:BatchWriteItem"}},
		// Publishing what landed finds a feed's subscribers with a
		// strongly consistent Query of the connections table.
		{Table: schema.Connections, Actions: []string{"dynamodb:Query"}},
	},
	fnRealtime: {
		// $connect puts a connection's record; $disconnect reads which
		// subscribers' records it has (GetItem), removes them in batches
		// and removes the record.
		{Table: schema.Connections, Actions: []string{
			"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:BatchWriteItem", "dynamodb:DeleteItem",
		}},
	},
	// The deliver function also reads the changes feed (accessOf).
	fnDeliver: {
		// A session is read and saved (UpdateItem, conditional on the
		// connection's record), a subscription's watch listed on the
		// record (UpdateItem) and put or removed (PutItem, DeleteItem),
		// and a connection closed as $disconnect closes it.
		{Table: schema.Connections, Actions: []string{
			"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
		}},
		// A subscribe is charged to the rate limits as a request of the
		// data routes (store.LeaseTokens).
		rateBuckets,
	},
}

// accessOf is function fn's DynamoDB grants: functionAccess's, and for
// the deliver function its reads of the feed beside them.
func accessOf(fn string) []tableAccess {
	if fn == fnDeliver {
		return append(slices.Clone(functionAccess[fn]), feedReads()...)
	}
	return functionAccess[fn]
}

// feedReads are the deliver function's reads of the changes feed and of
// what it shows: the kv function's grants (its feed route is the one the
// deliver function runs, TestChangesDynamoDBActions lists what it takes)
// narrowed to their reads. Deriving them keeps the two together as the
// feed's reads change; TestRealtime writes them out.
func feedReads() []tableAccess {
	reads := []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}
	var out []tableAccess
	for _, a := range functionAccess[fnKV] {
		var actions []string
		for _, action := range a.Actions {
			if slices.Contains(reads, action) {
				actions = append(actions, action)
			}
		}
		if len(actions) > 0 && len(a.LeadingKeys) == 0 && len(a.Attributes) == 0 {
			out = append(out, tableAccess{Table: a.Table, Index: a.Index, Actions: actions})
		}
	}
	return out
}

// objectAccess is the complete S3 permission set of the stack: function
// name → key prefix → the actions it may take on the bucket's objects
// under that prefix (defineBucket grants them there, and s3:ListBucket on
// the bucket beside them). Uploads land under uploads/; a commit copies
// each to values/, where no presigned POST reaches, and the item names the
// copy (items committed before that name their upload's object).
// HeadObject is authorised as s3:GetObject.
//
// The data functions sign the presigned POST of an upload, whose policy
// puts the object with its pending tag: S3 authorises the POST as the
// signer's PutObject and PutObjectTagging under uploads/. They commit an
// upload by copying it (GetObject on the source, PutObject and
// PutObjectTagging on the target, the copy's tags being replaced by none;
// a value above 256 MiB is copied in parts, which S3 authorises as
// PutObject on the target and GetObject on the source, and a copy in
// parts that fails is aborted, AbortMultipartUpload on the target) and
// deleting the upload's object, read a large value (HeadObject for a
// commit's checks, GetObject for ?inline, and the presigned GET they
// redirect to, which S3 authorises as the signer's GetObject), and delete
// the object of a value deleted or replaced, or of an upload the commit
// refuses. The admin function reads values for export and deletes those
// an import or a removal replaces. The expiry function commits the
// uploads the bucket's event announces, as the data functions do, and
// removes an upload's object that no reservation awaits once it has read
// its pending tag.
var objectAccess = map[string]map[string][]string{
	fnKV:    dataObjectActions,
	fnList:  dataObjectActions,
	fnAdmin: {uploadsPrefix: {"s3:GetObject", "s3:DeleteObject"}, valuesPrefix: {"s3:GetObject", "s3:DeleteObject"}},
	fnExpiry: {
		uploadsPrefix: {"s3:GetObject", "s3:GetObjectTagging", "s3:DeleteObject"},
		valuesPrefix:  {"s3:PutObject", "s3:PutObjectTagging", "s3:AbortMultipartUpload", "s3:GetObject", "s3:DeleteObject"},
	},
}

// dataObjectActions are the S3 actions of the functions that serve data
// routes (see objectAccess).
var dataObjectActions = map[string][]string{
	uploadsPrefix: {"s3:PutObject", "s3:PutObjectTagging", "s3:GetObject", "s3:DeleteObject"},
	valuesPrefix:  {"s3:PutObject", "s3:PutObjectTagging", "s3:AbortMultipartUpload", "s3:GetObject", "s3:DeleteObject"},
}

// catalogueMarks are the grants of the functions that create items (the
// data functions, and the expiry function, which commits uploads) on the
// records the catalogue of what holds data marks after a namespace's
// first item (store/catalog.go): an update of a namespace's record and of
// its app's that names the mark and, on the app's, its place in the
// registry's index, and no other attribute, so that a data function sets
// no policy and changes no limits.
var catalogueMarks = []tableAccess{
	{Table: schema.Namespaces, Actions: []string{"dynamodb:UpdateItem"},
		Attributes: []string{schema.AttrApp, schema.AttrNamespace, schema.AttrHeldSince}},
	{Table: schema.Apps, Actions: []string{"dynamodb:UpdateItem"},
		Attributes: []string{schema.AttrApp, schema.AttrHeldSince, schema.AttrRegistry, schema.AttrAppNameKey}},
}

// rateBuckets is the data functions' grant on the rate buckets' items in
// the apps table (store.LeaseTokens): an update of those items alone.
var rateBuckets = tableAccess{Table: schema.Apps, Actions: []string{"dynamodb:UpdateItem"}, LeadingKeys: []string{"rate#*"}}

// historyItemActions are the item actions of every function that reads or
// writes kept versions and history heads (see functionAccess).
var historyItemActions = []string{
	"dynamodb:GetItem", "dynamodb:BatchGetItem",
	"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem",
}
