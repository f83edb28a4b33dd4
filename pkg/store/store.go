// Package store owns every DynamoDB call UDS makes. It speaks the domain of
// package uds and hides the tables' attribute layout (package schema).
package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Client is the part of the DynamoDB API the store uses. *dynamodb.Client
// satisfies it; tests wrap it to count calls and consumed capacity.
type Client interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

// Tables names the physical tables; the configuration reads them.
type Tables = schema.TableNames

// Store is the DynamoDB-backed data store. It is safe for concurrent use.
type Store struct {
	client Client
	// landed, when set, takes the feed's rows as they land (WithLanded).
	landed       func([]FeedRow)
	tables       Tables
	globalLimits uds.Limits
	globalRates  uds.RateLimits
	limits       ttlCache[ownerRef, inEffect]
	policies     ttlCache[namespaceRef, uds.Policy]
	// tracked keeps owners' usage as their records last said, for the
	// quota check of writes in streamed mode.
	tracked ttlCache[ownerRef, uds.Usage]
	// streamReclaims notes, for the tracked usage's lifetime, the owners
	// whose expired items a streamed write refused by that usage
	// reclaimed (commit.go, reclaimForStream).
	streamReclaims ttlCache[ownerRef, bool]
	recomputeQuiet time.Duration
	// policySettle and policyWindow time a change into or out of private
	// (policy_change.go).
	policySettle, policyWindow time.Duration
	// objects is the bucket of large values; nil where none is configured.
	objects Objects
	// uploadLapse is how long a reservation waits for its commit.
	uploadLapse time.Duration
	// noStreams refuses the streamed quota mode (WithoutStreams).
	noStreams bool
	// createdContentApp holds the reserved name uds.CreatedContentName
	// in the registry; empty where the deployment names none.
	createdContentApp string
	// cataloguing holds the namespaces (app and namespace) this process
	// is marking in the catalogue, so that the first writes of a
	// namespace that run at once mark it once (catalog.go).
	cataloguing sync.Map
	// registryFolded is set once the registry's claims are known to be
	// keyed by uds.FoldAppName (foldRegistry).
	registryFolded atomic.Bool
	// now is the store's clock: every instant it stores or compares
	// (audit dates, expiry, the quiet period, cache lifetimes, a policy
	// change's times) is read from it. Only the export deadline, which the
	// host sets in real time, and the release markers' lifetime, which
	// DynamoDB's TTL keeps, are not.
	now func() time.Time
}

// DefaultLimitsTTL is how long limits and namespace policies are cached
// unless WithLimitsTTL says otherwise.
const DefaultLimitsTTL = 30 * time.Second

// DefaultTrackedTTL is how long a write in streamed mode trusts the
// owner's usage as last read, unless WithTrackedTTL says otherwise: what
// an owner writes within it, beside the stream's lag, can pass its limit.
const DefaultTrackedTTL = time.Second

// Option configures a Store.
type Option func(*Store)

// WithDefaultLimits sets the global per-user limits, used where neither the
// app nor the user sets one (0: unlimited).
func WithDefaultLimits(l uds.Limits) Option { return func(s *Store) { s.globalLimits = l } }

// WithLimitsTTL sets how long limits and namespace policies are cached, and
// so how long a change of them takes to be enforced.
func WithLimitsTTL(d time.Duration) Option {
	return func(s *Store) { s.limits.ttl, s.policies.ttl = d, d }
}

// WithTrackedTTL sets how long a write in streamed mode trusts the
// owner's usage as last read (0: read it for every write).
func WithTrackedTTL(d time.Duration) Option { return func(s *Store) { s.tracked.ttl = d } }

// WithRecomputeQuiet sets how long an owner's usage must have been quiet
// before recompute may lower it: longer than the longest request plus the
// owner index's propagation lag.
func WithRecomputeQuiet(d time.Duration) Option { return func(s *Store) { s.recomputeQuiet = d } }

// WithClock replaces time.Now as the store's clock. Tests move it ahead to
// expire items and end quiet periods at once, however long their writes
// took.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithLanded has LogChanges call landed with the rows of each of its
// BatchWriteItem calls as soon as the call has written them, so that the
// realtime endpoint delivers each change as its row lands (see FeedRow).
func WithLanded(landed func([]FeedRow)) Option { return func(s *Store) { s.landed = landed } }

// New returns a Store over client.
func New(client Client, tables Tables, opts ...Option) *Store {
	s := &Store{client: client, tables: tables, recomputeQuiet: config.DefaultRecomputeQuiet,
		policySettle: DefaultPolicySettle, policyWindow: DefaultPolicyWindow, now: time.Now,
		uploadLapse: uds.UploadWindow + uds.UploadGrace}
	s.limits.ttl, s.policies.ttl, s.tracked.ttl = DefaultLimitsTTL, DefaultLimitsTTL, DefaultTrackedTTL
	for _, o := range opts {
		o(s)
	}
	s.streamReclaims.ttl = s.tracked.ttl
	return s
}

// table returns the table that holds the item key names: list items have a
// sort key, key-value items do not.
func (s *Store) table(key uds.Key) string {
	if key.SortKey != "" {
		return s.tables.List
	}
	return s.tables.Data
}
