package store

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/internal/safe"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// maxRecomputeAttempts bounds how often recompute starts over because a
// write changed the usage record while the data was being summed.
const maxRecomputeAttempts = 5

// Recompute rebuilds an owner's usage in an app from the items stored (the
// owner index of both data tables) and stores it, reporting the drift:
// what the record said minus what the data holds. The owner's expired
// items are reclaimed first. An item that expires after that but is still
// stored is summed too: the record counts it until its removal releases
// it, and a sum without it would be released a second time then.
//
// The owner index is eventually consistent, so a sum taken while the owner
// writes can miss a write that the record already counts. A correction is
// therefore applied only when the record has not changed for the quiet
// period (every usage change stamps it), and only if it still says what
// was read when it is stored: recompute never stores a total below the
// real one. Otherwise the result says when to try again.
func (s *Store) Recompute(ctx context.Context, app, user string) (uds.Recomputed, error) {
	op := "recompute usage of " + user + " in " + app
	for attempt := 0; attempt < maxRecomputeAttempts; attempt++ {
		rs, err := s.readRecords(ctx, app, user, true)
		record, appLimits := rs.user, limitsOf(rs.app)
		if err != nil {
			return uds.Recomputed{}, err
		}
		actual, gone, err := s.ownedItems(ctx, app, user)
		if err != nil {
			return uds.Recomputed{}, err
		}
		summed := s.now()
		if len(gone) > 0 && attempt == 0 {
			// Expired items still stored are removed (and released)
			// first, so that the usage answered is what the live items
			// hold.
			s.reclaimFound(ctx, gone)
			continue
		}
		q := uds.Quota{
			App: app, User: user, Used: usageOf(record),
			Limits: uds.Resolve(limitsOf(record), appLimits, s.globalLimits),
		}
		drift := q.Used.Plus(actual.Negate())
		if drift == (uds.Usage{}) {
			return uds.Recomputed{Quota: q, Applied: true}, nil
		}
		lastWrite := time.UnixMilli(num(record, schema.AttrLastWrite))
		if wait := s.recomputeQuiet - s.now().Sub(lastWrite); wait > 0 {
			return uds.Recomputed{Quota: q, Drift: drift, RetryAfter: wait}, nil
		}
		refused, err := s.transact(ctx, op, s.storeUsage(app, user, record, actual, summed))
		switch {
		case err != nil:
			return uds.Recomputed{}, err
		case refused.conditionFailed(0):
			continue // a write moved the record meanwhile
		case refused != nil:
			return uds.Recomputed{}, failed(op, errUnexpectedCancel(refused))
		}
		q.Used = actual
		return uds.Recomputed{Quota: q, Drift: drift, Applied: true}, nil
	}
	return uds.Recomputed{}, &uds.UnavailableError{Op: op, Err: errors.New("usage kept changing")}
}

// clockMargin is added to the instant recompute's sum was taken before it
// is compared with the times DynamoDB's stream gives TTL deletions (rounded
// down to the second, by DynamoDB's clock): a deletion the sum may have
// missed always counts as before it. A deletion the sum did see that falls
// within the margin is not released, an over-count the next recompute
// repairs, never an under-count.
const clockMargin = time.Second

// streamTimeMargin is how far before a recompute's sum a write must be for
// streamed counting to take it as in the sum: the stream's instants are
// rounded down, to the second by DynamoDB and to the minute by DynamoDB
// Local, and a write the sum missed must never be taken for one it holds.
// A write within the margin is counted again, an over-count the next
// recompute repairs.
const streamTimeMargin = time.Minute

// storeUsage sets the owner's usage to actual, summed at summed, if the
// record still says what was read (a missing record reads as zero usage).
// It stamps the record with the instant its total accounts for removals
// up to (schema.AttrRecomputedAt): DynamoDB's TTL deletes expired items
// on its own, and the expiry function releases them from the stream some
// seconds later; one deleted before the sum is not in it, and its release
// must not take it off the corrected total a second time. It also stamps
// the instant before which every write is surely in the sum
// (schema.AttrSumCovers), which streamed counting does not charge again.
func (s *Store) storeUsage(app, user string, record map[string]types.AttributeValue, actual uds.Usage, summed time.Time) types.TransactWriteItem {
	before := usageOf(record)
	values := map[string]types.AttributeValue{
		":b":  &types.AttributeValueMemberN{Value: strconv.FormatInt(actual.Bytes, 10)},
		":i":  &types.AttributeValueMemberN{Value: strconv.FormatInt(actual.Items, 10)},
		":h":  &types.AttributeValueMemberN{Value: strconv.FormatInt(actual.History, 10)},
		":ob": &types.AttributeValueMemberN{Value: strconv.FormatInt(before.Bytes, 10)},
		":oi": &types.AttributeValueMemberN{Value: strconv.FormatInt(before.Items, 10)},
		":s":  &types.AttributeValueMemberS{Value: AppShard(app, user)},
		":ra": &types.AttributeValueMemberN{Value: strconv.FormatInt(summed.Add(clockMargin).UnixMilli(), 10)},
		// Writes older than the quiet period (which outlasts the owner
		// index's lag) and the stream's rounding of their instants are
		// surely in the sum.
		":sc": &types.AttributeValueMemberN{Value: strconv.FormatInt(summed.Add(-s.recomputeQuiet-streamTimeMargin).UnixMilli(), 10)},
	}
	cond := "#b = :ob AND #i = :oi"
	if before == (uds.Usage{}) {
		cond = "attribute_not_exists(#b) OR (" + cond + ")"
	}
	if lw, ok := record[schema.AttrLastWrite]; ok {
		cond = "(" + cond + ") AND #lw = :lw"
		values[":lw"] = lw
	} else {
		cond = "(" + cond + ") AND attribute_not_exists(#lw)"
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:           aws.String(s.tables.Usage),
		Key:                 usageKey(app, user),
		UpdateExpression:    aws.String("SET #b = :b, #i = :i, #hb = :h, #s = :s, #ra = :ra, #sc = :sc"),
		ConditionExpression: aws.String(cond),
		ExpressionAttributeNames: map[string]string{
			"#b": schema.AttrUsedBytes, "#i": schema.AttrUsedItems, "#s": schema.AttrAppShard, "#lw": schema.AttrLastWrite,
			"#ra": schema.AttrRecomputedAt, "#hb": schema.AttrHistoryBytes, "#sc": schema.AttrSumCovers,
		},
		ExpressionAttributeValues: values,
	}}
}

// ownedItems reads an owner's items in both data tables through the owner
// index: held is what every item stored adds up to, expired or not (each
// counts until its removal releases it), and the expired ones (at most
// maxReclaim) come back to be reclaimed.
func (s *Store) ownedItems(ctx context.Context, app, user string) (held uds.Usage, gone []listEntry, err error) {
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs [3]error
	)
	now := s.now()
	// add takes one page of the index into the sums.
	add := func(items []map[string]types.AttributeValue) {
		mu.Lock()
		defer mu.Unlock()
		for _, it := range items {
			size := num(it, schema.AttrItemSize)
			if _, kept := it[schema.AttrHistoryKey]; kept {
				// A kept version holds bytes, not an item; it counts
				// until its removal releases it.
				held = held.Plus(uds.Usage{Bytes: size, History: size})
				continue
			}
			held = held.Plus(uds.Usage{Bytes: size, Items: 1})
			if !expired(it, now) {
				continue
			}
			if key, ok := keyOf(it); ok && len(gone) < maxReclaim {
				gone = append(gone, listEntry{key: key, state: it})
			}
		}
	}
	// The index holds the table's keys, so the list table's sort key and
	// the history table's keys too.
	for i, t := range []struct{ name, projection string }{
		{s.tables.Data, "#k, #o, #z, #xm"}, {s.tables.List, "#k, #s, #o, #z, #xm"}, {s.tables.History, "#hk, #o, #z"},
	} {
		names := map[string]string{"#o": schema.AttrOwnerKey, "#z": schema.AttrItemSize}
		switch t.name {
		case s.tables.History:
			names["#hk"] = schema.AttrHistoryKey
		case s.tables.List:
			names["#s"] = schema.AttrSortKey
			fallthrough
		default:
			names["#k"], names["#xm"] = schema.AttrDataKey, schema.AttrExpiresAtMillis
		}
		in := &dynamodb.QueryInput{
			TableName:                aws.String(t.name),
			IndexName:                aws.String(schema.IndexByOwner),
			KeyConditionExpression:   aws.String("#o = :o"),
			ProjectionExpression:     aws.String(t.projection),
			ExpressionAttributeNames: names,
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":o": &types.AttributeValueMemberS{Value: ownerKey(app, user)},
			},
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A panic fails the sum like an error, not the process.
			perr := safe.Call(func() {
				for {
					out, err := s.client.Query(ctx, in)
					if err != nil {
						errs[i] = err
						return
					}
					add(out.Items)
					if out.LastEvaluatedKey == nil {
						return
					}
					in.ExclusiveStartKey = out.LastEvaluatedKey
				}
			})
			if perr != nil {
				errs[i] = perr
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		if indexNotReady(err) {
			return uds.Usage{}, nil, errIndexNotReady
		}
		return uds.Usage{}, nil, failed("sum usage of "+user+" in "+app, err)
	}
	return held, gone, nil
}
