package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Strays are items of a namespace in the key space its policy does not
// use: shared keys in a private namespace, private ones elsewhere. No data
// route reaches them, but they count in their owners' usage and keep any
// later change into or out of private refused (the namespace holds data).
// A change into or out of private never leaves any (policy_change.go);
// they come from releases before it, or from writes outside UDS. An
// administrator lists them (to keep a copy: they read as export records)
// and removes them, releasing their usage as any removal does.
//
// Items are keyed by hash alone, so both are filtered scans of the two
// data tables: their cost grows with the tables, and only this repair pays
// it.

// StrayPosition is where a page of strays ended: the table, and the key of
// the last item read. The zero position is the start.
type StrayPosition struct {
	List    bool   `json:"l,omitempty"`
	DataKey string `json:"k,omitempty"`
	SortKey string `json:"s,omitempty"`
}

// StrayQuery selects one page of a namespace's strays.
type StrayQuery struct {
	App, Namespace string
	// Private says which key space the namespace's policy uses: strays
	// sit in the other.
	Private bool
	After   StrayPosition
	Limit   int
	// MaxBytes bounds the page as RecordBytes (required) measures it: the
	// page ends, after at least one record, before a record that would
	// pass it.
	MaxBytes    int
	RecordBytes func(*uds.Record) int
	// Deadline, when set, ends the page once passed, so that a large
	// table is answered in pages in time.
	Deadline time.Time
}

// StrayPage is one page of strays; Next is nil on the last page.
type StrayPage struct {
	Records []uds.Record
	Next    *StrayPosition
}

// Strays reads one page of a namespace's strays after q.After, as records
// (their owners, audit fields, versions). Expired items are left out: they
// are gone, and their removal releases them.
func (s *Store) Strays(ctx context.Context, q StrayQuery) (StrayPage, error) {
	var page StrayPage
	size := 0
	tables := []bool{false, true}
	if q.After.List {
		tables = tables[1:] // the page starts in the list table
	}
	now := s.now()
	for _, list := range tables {
		start := StrayPosition{List: list}
		if list == q.After.List {
			start = q.After
		}
		// last is where the next page goes on: after the last record
		// taken in this table, or from where this table's scan started.
		last := start
		err := s.scanStrays(ctx, q, start, func(it map[string]types.AttributeValue, key uds.Key, at StrayPosition) bool {
			if expired(it, now) {
				return true
			}
			data, err := decodeItem(key, it)
			if err != nil {
				return true // not readable: not listed, still removable
			}
			who, _ := owner(q.App, it)
			rec := uds.Record{Item: data, Owner: who}
			n := q.RecordBytes(&rec)
			if len(page.Records) > 0 && size+n > q.MaxBytes {
				page.Next = &last
				return false
			}
			page.Records, size, last = append(page.Records, rec), size+n, at
			if len(page.Records) == q.Limit {
				page.Next = &at
				return false
			}
			return true
		}, func(at StrayPosition) bool {
			if !q.Deadline.IsZero() && time.Now().After(q.Deadline) {
				page.Next = &at
				return false
			}
			return true
		})
		if err != nil || page.Next != nil {
			return page, err
		}
	}
	return page, nil
}

// RemoveStrays removes every stray of a namespace (live or expired), each
// at the revision read, releasing its owner's usage in the same
// transaction, and returns how many it removed. When ctx ends first the
// error is a *uds.IncompleteError that says how many: the caller repeats.
func (s *Store) RemoveStrays(ctx context.Context, app, namespace string, private bool) (int, error) {
	q := StrayQuery{App: app, Namespace: namespace, Private: private}
	removed := 0
	op := "remove the strays of " + app + "/" + namespace
	for _, list := range []bool{false, true} {
		var (
			batch    []listEntry
			owners   = map[string]bool{}
			bytes    int64
			flushErr error
		)
		// flush removes the batch in one transaction with its owners'
		// releases.
		flush := func() {
			n, err := s.removeEntries(ctx, op, nil, batch)
			removed += n
			batch, owners, bytes, flushErr = nil, map[string]bool{}, 0, err
		}
		err := s.scanStrays(ctx, q, StrayPosition{List: list}, func(it map[string]types.AttributeValue, key uds.Key, _ StrayPosition) bool {
			who, _ := owner(app, it)
			size := num(it, schema.AttrItemSize)
			fits := len(batch)+len(owners)+1 < maxTxActions || (owners[who] && len(batch)+len(owners) < maxTxActions)
			if len(batch) > 0 && (!fits || bytes+size > maxTxBytes) {
				if flush(); flushErr != nil {
					return false
				}
			}
			batch = append(batch, listEntry{key: key, state: it})
			owners[who] = true
			bytes += size
			return true
		}, nil)
		if err == nil && flushErr == nil && len(batch) > 0 {
			flush()
		}
		err = errors.Join(err, flushErr)
		if err == nil {
			err = ctx.Err()
		}
		switch {
		case err == nil:
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
			return removed, &uds.IncompleteError{Deleted: removed}
		default:
			return removed, fmt.Errorf("%s after %d items: %w", op, removed, err)
		}
	}
	return removed, nil
}

// scanStrays scans one data table from start for the namespace's items in
// the key space its policy does not use, strongly consistent, and hands
// each to item with its position, until item or page (called after each
// page the scan reads, with the position it reached) says stop.
func (s *Store) scanStrays(ctx context.Context, q StrayQuery, start StrayPosition,
	item func(map[string]types.AttributeValue, uds.Key, StrayPosition) bool, page func(StrayPosition) bool) error {
	table := s.tables.Data
	if start.List {
		table = s.tables.List
	}
	prefix := q.App + uds.KeyDelimiter + q.Namespace + uds.KeyDelimiter
	in := &dynamodb.ScanInput{
		TableName:                aws.String(table),
		FilterExpression:         aws.String("begins_with(#k, :p)"),
		ConsistentRead:           aws.Bool(true),
		ExpressionAttributeNames: map[string]string{"#k": schema.AttrDataKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": &types.AttributeValueMemberS{Value: prefix},
		},
	}
	if start.DataKey != "" {
		in.ExclusiveStartKey = map[string]types.AttributeValue{schema.AttrDataKey: &types.AttributeValueMemberS{Value: start.DataKey}}
		if start.List {
			in.ExclusiveStartKey[schema.AttrSortKey] = &types.AttributeValueMemberS{Value: start.SortKey}
		}
	}
	for {
		out, err := s.client.Scan(ctx, in)
		if err != nil {
			return failed("scan "+table+" for the strays of "+q.App+"/"+q.Namespace, err)
		}
		for _, it := range out.Items {
			key, ok := keyOf(it)
			// Namespace and id hold no delimiter, so a fourth part (an
			// owner) is what puts a key in a private key space.
			if !ok || (key.Owner != "") != !q.Private {
				continue
			}
			at := StrayPosition{List: start.List, DataKey: str(it, schema.AttrDataKey), SortKey: key.SortKey}
			if !item(it, key, at) {
				return nil
			}
		}
		if out.LastEvaluatedKey == nil {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
		at := StrayPosition{List: start.List, DataKey: str(out.LastEvaluatedKey, schema.AttrDataKey), SortKey: str(out.LastEvaluatedKey, schema.AttrSortKey)}
		if page != nil && !page(at) {
			return nil
		}
	}
}
