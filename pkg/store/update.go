package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// maxUpdateAttempts bounds the retries of an update that keeps losing races
// with other writers of the same item.
const maxUpdateAttempts = 10

// Update replaces the value of an existing item: uds.ErrNotFound if it does
// not exist, uds.ErrPrecondition if w.IfMatch names none of its revisions,
// a *uds.QuotaError if it grows past its owner's limit.
//
// An update that does not grow the item is one conditional UpdateItem,
// followed by a release of usage if it shrank. One that grows fails that
// condition, which returns the old item; the growth is then reserved and the
// write repeated on exactly the revision that was read.
func (s *Store) Update(ctx context.Context, w uds.Write) (uds.Item, error) {
	v, err := encodeValue(&w)
	if err != nil {
		return uds.Item{}, err
	}
	for attempt := 0; attempt < maxUpdateAttempts; attempt++ {
		now := writeTime()
		in := s.updateInput(&w, v, now, "")
		in.ConditionExpression = aws.String("attribute_exists(#k) AND #sz >= :sz" + ifMatchCondition(w.IfMatch, in.ExpressionAttributeNames, in.ExpressionAttributeValues))
		out, err := s.client.UpdateItem(ctx, in)
		var ccf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			who, _ := owner(w.App, out.Attributes)
			shrink := uds.Usage{Bytes: v.size - num(out.Attributes, schema.AttrItemSize)}
			return updated(&w, out.Attributes, now), s.adjust(ctx, w.App, who, shrink)
		case !asCCF(err, &ccf):
			return uds.Item{}, fmt.Errorf("update %s: %w", w.DataKey(), wrapSizeError(err))
		case len(ccf.Item) == 0:
			return uds.Item{}, uds.ErrNotFound
		}
		old := ccf.Item
		if !w.IfMatch.Matches(decodeMeta(w.Key, old).Revision()) {
			return uds.Item{}, uds.ErrPrecondition
		}
		// The item grows, or predates UDS and is not counted yet.
		who, counted := owner(w.App, old)
		if who == "" {
			who = w.Subject
		}
		growth := uds.Usage{Bytes: v.size - num(old, schema.AttrItemSize)}
		if !counted {
			growth = uds.Usage{Bytes: v.size, Items: 1}
		}
		if err := s.reserve(ctx, w.App, who, growth); err != nil {
			return uds.Item{}, err
		}
		in = s.updateInput(&w, v, now, who)
		in.ConditionExpression = aws.String("attribute_exists(#k) AND " + exactRevision(old, in.ExpressionAttributeNames, in.ExpressionAttributeValues))
		out, err = s.client.UpdateItem(ctx, in)
		switch {
		case err == nil:
			return updated(&w, out.Attributes, now), nil
		case !isConditionFailed(err):
			return uds.Item{}, fmt.Errorf("update %s: %w", w.DataKey(), wrapSizeError(err))
		}
		// Another writer changed the item between the two calls: give the
		// reservation back and start over from its new state.
		if err := s.adjust(ctx, w.App, who, growth.Negate()); err != nil {
			return uds.Item{}, err
		}
	}
	return uds.Item{}, fmt.Errorf("update %s: still contended after %d attempts", w.DataKey(), maxUpdateAttempts)
}

// updateInput is the UpdateItem that writes w's value over an item, bumping
// its version; the caller adds the condition. It returns the old item,
// which names the owner and the size being replaced. A non-empty owner is
// recorded as the item's owner (items written before UDS have none).
func (s *Store) updateInput(w *uds.Write, v encodedValue, now time.Time, owner string) *dynamodb.UpdateItemInput {
	names := map[string]string{
		"#k": schema.AttrDataKey, "#val": v.name, "#ud": schema.AttrUpdatedDate,
		"#ub": schema.AttrUpdatedBySubject, "#sz": schema.AttrItemSize, "#sv": schema.AttrSchemaVersion,
		"#v": schema.AttrVersion, "#old": otherValueAttr(v.name), "#cn": schema.AttrClassName,
	}
	values := map[string]types.AttributeValue{
		":val":  v.av,
		":ud":   &types.AttributeValueMemberS{Value: FormatTime(now)},
		":ub":   &types.AttributeValueMemberS{Value: w.Subject},
		":sz":   &types.AttributeValueMemberN{Value: strconv.FormatInt(v.size, 10)},
		":sv":   &types.AttributeValueMemberN{Value: schemaVersion},
		":one":  &types.AttributeValueMemberN{Value: "1"},
		":zero": &types.AttributeValueMemberN{Value: "0"},
	}
	set := "SET #val = :val, #ud = :ud, #ub = :ub, #sz = :sz, #sv = :sv, #v = if_not_exists(#v, :zero) + :one"
	remove := " REMOVE #old"
	if owner != "" {
		set += ", #ok = :ok, #cb = if_not_exists(#cb, :owner)"
		names["#ok"], names["#cb"] = schema.AttrOwnerKey, schema.AttrCreatedBySubject
		values[":ok"] = &types.AttributeValueMemberS{Value: ownerKey(w.App, owner)}
		values[":owner"] = &types.AttributeValueMemberS{Value: owner}
	}
	if w.ClassName != "" {
		set += ", #cn = :cn"
		values[":cn"] = &types.AttributeValueMemberS{Value: w.ClassName}
	} else {
		remove += ", #cn"
	}
	return &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table(w.Key)),
		Key:                                 keyAV(w.Key),
		UpdateExpression:                    aws.String(set + remove),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// updated is the item an update left: the old item's creation fields and
// version plus one, with the value just written.
func updated(w *uds.Write, old map[string]types.AttributeValue, now time.Time) uds.Item {
	it := decodeMeta(w.Key, old)
	it.Data, it.ClassName = w.Data, w.ClassName
	it.UpdatedDate, it.UpdatedBy = now, w.Subject
	it.Version++
	if it.CreatedBy == "" {
		it.CreatedBy = w.Subject
	}
	return it
}

// exactRevision is a condition that holds only while the item is still at
// the revision old shows.
func exactRevision(old map[string]types.AttributeValue, names map[string]string, values map[string]types.AttributeValue) string {
	names["#cd"] = schema.AttrCreatedDate
	cd, hasDate := old[schema.AttrCreatedDate]
	if hasDate {
		values[":xcd"] = cd
	}
	ver, hasVersion := old[schema.AttrVersion]
	switch {
	case hasVersion && hasDate:
		values[":xv"] = ver
		return "#v = :xv AND #cd = :xcd"
	case hasDate:
		return "attribute_not_exists(#v) AND #cd = :xcd"
	default:
		return "attribute_not_exists(#v) AND attribute_not_exists(#cd)"
	}
}

// ifMatchCondition renders an If-Match precondition as " AND ..."; the
// empty string when there is none. If-Match: * needs nothing beyond the
// existence check every caller already makes.
func ifMatchCondition(p uds.Precondition, names map[string]string, values map[string]types.AttributeValue) string {
	if len(p.Revisions) == 0 {
		return ""
	}
	names["#v"] = schema.AttrVersion
	names["#cd"] = schema.AttrCreatedDate
	terms := make([]string, len(p.Revisions))
	for i, r := range p.Revisions {
		n := strconv.Itoa(i)
		terms[i] = "#v = :rv" + n + " AND #cd = :rc" + n
		values[":rv"+n] = &types.AttributeValueMemberN{Value: strconv.FormatInt(r.Version, 10)}
		values[":rc"+n] = &types.AttributeValueMemberS{Value: FormatTime(r.Created)}
	}
	if len(terms) == 1 {
		return " AND " + terms[0]
	}
	// DynamoDB rejects redundant parentheses, so only a disjunction of
	// several revisions gets them.
	return " AND ((" + strings.Join(terms, ") OR (") + "))"
}

func otherValueAttr(name string) string {
	if name == schema.AttrDataValue {
		return schema.AttrDataValueGzip
	}
	return schema.AttrDataValue
}
