package store

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Streamed counting (docs/decisions/quotas.md, "Quota modes"). Items written in
// streamed mode (schema.AttrStreamCounted) are charged and released here,
// from the data tables' streams, rather than in the writes' transactions.
// The stream delivers every record at least once, in order within a shard
// the first time, and perhaps again later. Each owner's usage record
// therefore keeps, per shard, a mark: the last sequence number it counted.
// The changes of one owner in one batch move the record in one UpdateItem
// that adds them and moves the mark, conditional on the mark being below
// them: a batch delivered again counts nothing twice, and an owner's
// changes cost one small write per batch, however many they are.
//
// A recompute sums the items themselves and stores the total
// (recompute.go); a change the stream counts after that may already be in
// the sum. The record says which: a charge from before schema.AttrSumCovers
// was surely in the sum, and a release from before
// schema.AttrRecomputedAt surely not; either is left out, and a change
// between the two instants is counted, an over-count in the safe direction.

// StreamChange is one record of a data table's stream: its sequence number
// in its shard, when DynamoDB made it, and the item's images before and
// after (nil where there is none).
type StreamChange struct {
	Sequence string
	At       time.Time
	Old, New map[string]types.AttributeValue
}

// markLife is how long a shard's mark is kept after it last counted. A
// record is delivered again only while its batch is retried (or, rarely,
// once more soon after), so an hour covers every redelivery but one after
// an outage of the stream function longer than that, which would then
// count again: an over-count, which recompute repairs, never an
// under-count. Marks of older shards go, so the usage record (which every
// count and quota check reads and writes whole) holds about one mark per
// shard of the tables that counted the owner within the hour.
const markLife = time.Hour

// maxCountAttempts bounds how often one owner's changes are read and
// counted again while recompute or another delivery moves the record.
const maxCountAttempts = 8

// ownerChange is one change's effect on one owner's usage.
type ownerChange struct {
	index int // in the batch
	seq   string
	at    time.Time
	delta uds.Usage
}

// CountStreamed counts the changes of items written in streamed mode among
// changes, which are records of one stream shard in the order the stream
// gave them, into their owners' usage records, once each however often
// they are delivered. Changes of other items are left alone. It returns
// how many changes, from the first, are counted: all of them, or up to the
// first change of the first owner whose record could not be written (with
// the error); the stream delivers the rest again.
func (s *Store) CountStreamed(ctx context.Context, shard string, changes []StreamChange) (int, error) {
	groups := map[string][]ownerChange{}
	var order []string
	add := func(i int, c *StreamChange, image map[string]types.AttributeValue, sign int64) {
		// Kept versions are charged in the transactions that keep them,
		// whatever they copied of the item.
		if _, kept := image[schema.AttrHistoryKey]; kept || !streamCounted(image) {
			return
		}
		app, _, _ := strings.Cut(str(image, schema.AttrDataKey), uds.KeyDelimiter)
		who, counted := owner(app, image)
		if !counted {
			return
		}
		k := ownerKey(app, who)
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		u := held(image)
		groups[k] = append(groups[k], ownerChange{index: i, seq: c.Sequence, at: c.At,
			delta: uds.Usage{Bytes: sign * u.Bytes, Items: sign * u.Items}})
	}
	for i := range changes {
		add(i, &changes[i], changes[i].Old, -1)
		add(i, &changes[i], changes[i].New, 1)
	}
	if len(order) > 0 && shard == "" {
		return 0, errors.New("stream records of streamed items without their shard: the event source mapping needs its tumbling window")
	}
	for n, k := range order {
		app, who, _ := strings.Cut(k, uds.KeyDelimiter)
		if err := s.countOwner(ctx, app, who, shard, groups[k]); err != nil {
			// Every owner before this one is counted; this one and those
			// after it are counted again from its first change on.
			first := len(changes)
			for _, rest := range order[n:] {
				first = min(first, groups[rest][0].index)
			}
			return first, err
		}
	}
	return len(changes), nil
}

// countOwner counts one owner's changes from one shard. The first attempt
// assumes the record has counted none of them and no recompute happened
// since they were made, which is what a steady stream meets; when its
// condition fails, the record is read and only what it has not counted is
// added.
func (s *Store) countOwner(ctx context.Context, app, who, shard string, changes []ownerChange) error {
	op := "count streamed usage of " + who + " in " + app
	mark := schema.AttrStreamMarkPrefix + shard
	var record map[string]types.AttributeValue
	for attempt := 0; attempt < maxCountAttempts; attempt++ {
		todo := changes
		if attempt > 0 {
			todo = uncounted(record, mark, changes)
			if len(todo) == 0 {
				return nil
			}
		}
		in := s.streamedUsageUpdate(app, who, mark, record, attempt > 0, todo)
		out, err := s.client.UpdateItem(ctx, in)
		switch {
		case err == nil:
			s.pruneMarks(ctx, app, who, out.Attributes)
			return nil
		case !isConditionFailed(err):
			return failed(op, err)
		}
		got, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(s.tables.Usage), Key: usageKey(app, who), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return failed(op, err)
		}
		record = got.Item
	}
	return &uds.UnavailableError{Op: op, Err: errors.New("the usage record kept changing")}
}

// uncounted returns the changes the record has not counted: those after
// its mark for the shard, without those a recompute's sum already holds.
func uncounted(record map[string]types.AttributeValue, mark string, changes []ownerChange) []ownerChange {
	last := markSequence(record, mark)
	covers := time.UnixMilli(num(record, schema.AttrSumCovers))
	recomputed := time.UnixMilli(num(record, schema.AttrRecomputedAt))
	var out []ownerChange
	for _, c := range changes {
		if padSequence(c.seq) <= last {
			continue
		}
		if _, done := record[schema.AttrRecomputedAt]; done {
			charge := c.delta.Items > 0 || (c.delta.Items == 0 && c.delta.Bytes > 0)
			if (charge && c.at.Before(covers)) || (!charge && c.at.Before(recomputed)) {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// streamedUsageUpdate adds changes to the owner's record and moves the
// shard's mark past them. A first attempt holds only while the mark is
// below the changes and no recompute came after the first of them; a later
// one only while the mark and the recompute are as record shows them. A
// release never takes usage below zero: an owner's usage can hold less
// than the release only when a recompute's sum left the item out, and
// then nothing more is released.
func (s *Store) streamedUsageUpdate(app, who, mark string, record map[string]types.AttributeValue, read bool, changes []ownerChange) *dynamodb.UpdateItemInput {
	var sum uds.Usage
	earliest := changes[0].at
	for _, c := range changes {
		sum = sum.Plus(c.delta)
		if c.at.Before(earliest) {
			earliest = c.at
		}
	}
	now := s.now()
	names := map[string]string{
		"#ub": schema.AttrUsedBytes, "#ui": schema.AttrUsedItems, "#s": schema.AttrAppShard,
		"#lw": schema.AttrLastWrite, "#m": mark, "#ra": schema.AttrRecomputedAt,
	}
	values := map[string]types.AttributeValue{
		":s":  &types.AttributeValueMemberS{Value: AppShard(app, who)},
		":lw": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
		":m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			"s": &types.AttributeValueMemberS{Value: padSequence(changes[len(changes)-1].seq)},
			"t": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
		}},
	}
	var conds []string
	if read {
		used := usageOf(record)
		// Never below zero: the release stops at what the record holds.
		sum.Bytes, sum.Items = max(sum.Bytes, -used.Bytes), max(sum.Items, -used.Items)
		conds = append(conds, asRead(record, names, values, []attrRef{
			{mark, "#m", ":om"}, {schema.AttrRecomputedAt, "#ra", ":ora"},
			{schema.AttrUsedBytes, "#ub", ":oub"}, {schema.AttrUsedItems, "#ui", ":oui"},
		}))
	} else {
		names["#ms"] = "s"
		values[":first"] = &types.AttributeValueMemberS{Value: padSequence(changes[0].seq)}
		values[":at"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(earliest.UnixMilli(), 10)}
		conds = append(conds, "attribute_not_exists(#m) OR #m.#ms < :first", "attribute_not_exists(#ra) OR #ra <= :at")
		if sum.Bytes < 0 {
			values[":nb"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(-sum.Bytes, 10)}
			conds = append(conds, "#ub >= :nb")
		}
		if sum.Items < 0 {
			values[":ni"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(-sum.Items, 10)}
			conds = append(conds, "#ui >= :ni")
		}
	}
	values[":b"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(sum.Bytes, 10)}
	values[":i"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(sum.Items, 10)}
	return &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.tables.Usage),
		Key:                       usageKey(app, who),
		UpdateExpression:          aws.String("ADD #ub :b, #ui :i SET #s = :s, #lw = :lw, #m = :m"),
		ConditionExpression:       aws.String(joinAnd(conds)),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueAllNew,
	}
}

// pruneMarks removes the marks of shards that have not counted for
// markLife. It is best effort (a mark left over costs a few bytes of the
// record), and each removal holds only while its mark is as read: a shard
// counting at the same time keeps the mark it has just written.
func (s *Store) pruneMarks(ctx context.Context, app, who string, record map[string]types.AttributeValue) {
	cutoff := s.now().Add(-markLife).UnixMilli()
	var stale, conds []string
	names := map[string]string{"#t": "t"}
	values := map[string]types.AttributeValue{}
	for attr, v := range record {
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok || !strings.HasPrefix(attr, schema.AttrStreamMarkPrefix) || num(m.Value, "t") >= cutoff {
			continue
		}
		ref, at := "#m"+strconv.Itoa(len(stale)), ":t"+strconv.Itoa(len(stale))
		names[ref], values[at] = attr, m.Value["t"]
		stale = append(stale, ref)
		conds = append(conds, ref+".#t = "+at)
	}
	if len(stale) == 0 {
		return
	}
	sort.Strings(stale)
	_, _ = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.tables.Usage),
		Key:                       usageKey(app, who),
		UpdateExpression:          aws.String("REMOVE " + strings.Join(stale, ", ")),
		ConditionExpression:       aws.String(strings.Join(conds, " AND ")),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
}

// markSequence is the last sequence number the record's mark for a shard
// has counted ("" for none).
func markSequence(record map[string]types.AttributeValue, mark string) string {
	if m, ok := record[mark].(*types.AttributeValueMemberM); ok {
		return str(m.Value, "s")
	}
	return ""
}

// sequenceDigits is the width sequence numbers are padded to, so that
// DynamoDB compares them as strings in their numeric order. Stream
// sequence numbers are decimal, of at most 40 digits.
const sequenceDigits = 40

func padSequence(seq string) string {
	if len(seq) >= sequenceDigits {
		return seq
	}
	return strings.Repeat("0", sequenceDigits-len(seq)) + seq
}
