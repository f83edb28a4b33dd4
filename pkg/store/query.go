package store

import (
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// ListQuery selects one page of a list.
type ListQuery struct {
	List  uds.Key // App, Namespace and ID; no SortKey
	Range uds.Range
	Limit int
	// After is the sort key of the last item of the previous page, or "".
	After string
	// MaxBytes bounds the page's response size as ItemBytes measures it:
	// the page ends early, after at least one item, once its items pass it.
	MaxBytes int
	// ItemBytes is what an item adds to the response; nil counts its data
	// and keys.
	ItemBytes func(*uds.Item) int
	// Expect, when positive, is how many items the previous page held when
	// MaxBytes cut it: the first query of this page reads one more than
	// that, not a full DynamoDB page.
	Expect int
	// KeepCompressed leaves values stored compressed as they are
	// (uds.Item.Compressed) where they can be spliced into a gzip
	// answer, instead of inflating them.
	KeepCompressed bool
}

// ListPage is one page of list items. More is true when items remain after
// the last one: a page is never empty while More is true.
type ListPage struct {
	Items []uds.Item
	More  bool
	// Cut reports that MaxBytes, not Limit, ended the page.
	Cut bool
}

// ListItems reads one page of a list in sort key order. DynamoDB's 1 MB
// query pages are joined until the page holds q.Limit items, the list ends,
// or the page passes q.MaxBytes; one item beyond the page is read to know
// whether another page exists.
func (s *Store) ListItems(ctx context.Context, q ListQuery) (ListPage, error) {
	r := q.Range
	if r.Start != "" && r.End != "" && r.Start >= r.End {
		return ListPage{}, nil // [start, end) is empty
	}
	if q.After != "" && !inRange(q.After, r) {
		return ListPage{}, uds.Invalid("cursor", "does not belong to this range")
	}
	names := map[string]string{"#k": schema.AttrDataKey}
	values := map[string]types.AttributeValue{":k": &types.AttributeValueMemberS{Value: q.List.DataKey()}}
	cond := "#k = :k"
	// DynamoDB has no half-open range condition: [start, end) is read as
	// BETWEEN start AND end, and an item whose key is end is skipped.
	skipEnd := false
	switch {
	case r.Start != "" && r.End != "":
		cond += " AND #s BETWEEN :a AND :b"
		skipEnd = true
	case r.Start != "":
		cond += " AND #s >= :a"
	case r.End != "":
		cond += " AND #s < :b"
	}
	if r.Start != "" {
		values[":a"] = &types.AttributeValueMemberS{Value: r.Start}
	}
	if r.End != "" {
		values[":b"] = &types.AttributeValueMemberS{Value: r.End}
	}
	if r.Start != "" || r.End != "" {
		names["#s"] = schema.AttrSortKey
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.tables.List),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		ScanIndexForward:          aws.Bool(!r.Descending),
		ConsistentRead:            aws.Bool(true),
	}
	if q.After != "" {
		start := q.List
		start.SortKey = q.After
		in.ExclusiveStartKey = keyAV(start)
	}

	size := q.ItemBytes
	if size == nil {
		size = plainBytes
	}
	decode := decodeItem
	if q.KeepCompressed {
		decode = decodeKeepingCompressed
	}
	now := s.now()
	var gone []listEntry
	want := q.Limit + 1 // one more than the page, to learn whether more exist
	items := make([]uds.Item, 0, min(want, 128))
	sizes := make([]int, 0, min(want, 128))
	bytes := 0
	// full reports whether enough is read: the page plus one, or, once
	// past the byte budget, at least two items (the page ends before the
	// one that passed it, and that one proves more remain).
	full := func() bool {
		return len(items) == want || (q.MaxBytes > 0 && bytes > q.MaxBytes && len(items) >= 2)
	}
	for !full() {
		limit := want - len(items)
		// DynamoDB reads up to 1 MB of stored items per query whatever
		// the page can hold. Compressed values take far more room in the
		// response than in the table, so a full read could hold many
		// pages: read about what the rest of the budget holds, judging by
		// the items read so far, or by the previous page at the start.
		switch {
		case q.MaxBytes > 0 && len(items) > 0:
			perItem := max(bytes/len(items), 1)
			limit = min(limit, max(q.MaxBytes-bytes, 0)/perItem+2)
		case q.Expect > 0:
			limit = min(limit, q.Expect+1)
		}
		if skipEnd {
			limit++
		}
		in.Limit = aws.Int32(int32(limit))
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return ListPage{}, failed("query "+q.List.DataKey(), err)
		}
		items = slices.Grow(items, min(len(out.Items), want-len(items)))
		for _, av := range out.Items {
			sk := str(av, schema.AttrSortKey)
			if skipEnd && sk == r.End {
				continue
			}
			key := q.List
			key.SortKey = sk
			if expired(av, now) {
				// Gone: the page reads on past it and reclaims it.
				gone = append(gone, listEntry{key: key, state: av})
				continue
			}
			it, err := decode(key, av)
			if err != nil {
				return ListPage{}, err
			}
			items, sizes = append(items, it), append(sizes, size(&it))
			bytes += sizes[len(sizes)-1]
			if full() {
				break
			}
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	if len(gone) > 0 {
		s.reclaim(ctx, gone)
	}
	page := ListPage{Items: items}
	if len(items) > q.Limit {
		page.Items, page.More = items[:q.Limit], true
	}
	if q.MaxBytes > 0 {
		total := 0
		for i := range page.Items {
			total += sizes[i]
			if total > q.MaxBytes && i > 0 {
				page.Items, page.More, page.Cut = page.Items[:i], true, true
				break
			}
		}
	}
	return page, nil
}

// plainBytes is ListQuery's default item measure.
func plainBytes(it *uds.Item) int {
	return it.DataLen() + len(it.SortKey) + len(it.ClassName)
}

func inRange(sk string, r uds.Range) bool {
	return (r.Start == "" || sk >= r.Start) && (r.End == "" || sk < r.End)
}
