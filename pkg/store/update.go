package store

import (
	"context"
	"errors"
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

// Update replaces the value of an existing item in one conditional
// UpdateItem: uds.ErrNotFound if it does not exist, uds.ErrPrecondition if
// w.IfMatch names none of its revisions.
func (s *Store) Update(ctx context.Context, w uds.Write) (uds.Item, error) {
	v, err := encodeValue(&w)
	if err != nil {
		return uds.Item{}, err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
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
	if w.ClassName != "" {
		set += ", #cn = :cn"
		values[":cn"] = &types.AttributeValueMemberS{Value: w.ClassName}
	} else {
		remove += ", #cn"
	}
	cond := "attribute_exists(#k)" + ifMatchCondition(w.IfMatch, names, values)
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.table(w.Key)),
		Key:                                 keyAV(w.Key),
		UpdateExpression:                    aws.String(set + remove),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err != nil {
		return uds.Item{}, s.writeFailure(err, w.Key)
	}
	it, err := decodeItem(w.Key, out.Attributes)
	if err != nil {
		return uds.Item{}, err
	}
	// The stored JSON is the caller's; reuse it rather than the decoded copy.
	it.Data = w.Data
	return it, nil
}

// writeFailure classifies a failed conditional write of an existing item:
// with no old item returned it did not exist; otherwise its revision did not
// match.
func (s *Store) writeFailure(err error, key uds.Key) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if len(ccf.Item) == 0 {
			return uds.ErrNotFound
		}
		return uds.ErrPrecondition
	}
	return fmt.Errorf("write %s: %w", key.DataKey(), wrapSizeError(err))
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
