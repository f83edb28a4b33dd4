package store

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Usage accounting. Every data write moves its owner's usage record by the
// real size difference with one small UpdateItem. Growth is reserved before
// the data write, under a condition that keeps the record within the limit
// in effect, so concurrent writers can never pass it; shrinkage is released
// after the data write. A crash between the two steps therefore leaves
// usage over-counted, never under-counted, and recompute corrects it.

// AppShard spreads one app's usage records over schema.AppShards index
// partitions, so no partition carries an app's whole load.
func AppShard(app, user string) string {
	h := fnv.New32a()
	h.Write([]byte(user))
	return app + "#" + strconv.Itoa(int(h.Sum32()%schema.AppShards))
}

func usageKey(app, user string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.AttrUser: &types.AttributeValueMemberS{Value: user},
		schema.AttrApp:  &types.AttributeValueMemberS{Value: app},
	}
}

// reserve adds d to the owner's usage if the result stays within the limits
// in effect; otherwise it returns a *uds.QuotaError and changes nothing.
func (s *Store) reserve(ctx context.Context, app, owner string, d uds.Usage) error {
	lim, err := s.limits.get(ctx, s, app, owner)
	if err != nil {
		return err
	}
	in := s.usageUpdate(app, owner, d)
	var conds []string
	for _, c := range []struct {
		attr, name   string
		limit, delta int64
	}{
		{schema.AttrUsedBytes, ":maxb", lim.Bytes, d.Bytes},
		{schema.AttrUsedItems, ":maxi", lim.Items, d.Items},
	} {
		if c.limit == 0 || c.delta <= 0 {
			continue
		}
		if c.delta > c.limit {
			// Even an empty account cannot take this write.
			return s.quotaError(ctx, app, owner, lim, nil)
		}
		// usage + delta <= limit, written as usage <= limit - delta since
		// conditions have no arithmetic.
		conds = append(conds, "attribute_not_exists("+c.attr+") OR "+c.attr+" <= "+c.name)
		in.ExpressionAttributeValues[c.name] = &types.AttributeValueMemberN{Value: strconv.FormatInt(c.limit-c.delta, 10)}
	}
	if len(conds) > 0 {
		in.ConditionExpression = aws.String(joinAnd(conds))
		in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	_, err = s.client.UpdateItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if asCCF(err, &ccf) {
		return s.quotaError(ctx, app, owner, lim, ccf.Item)
	}
	if err != nil {
		return fmt.Errorf("reserve usage of %s in %s: %w", owner, app, err)
	}
	return nil
}

// adjust adds d (usually negative: a release) to the owner's usage
// unconditionally.
func (s *Store) adjust(ctx context.Context, app, owner string, d uds.Usage) error {
	if d == (uds.Usage{}) {
		return nil
	}
	if _, err := s.client.UpdateItem(ctx, s.usageUpdate(app, owner, d)); err != nil {
		return fmt.Errorf("adjust usage of %s in %s: %w", owner, app, err)
	}
	return nil
}

// usageUpdate is the UpdateItem that adds d to a usage record, creating it
// (with its app shard, for the app's users index) if needed.
func (s *Store) usageUpdate(app, owner string, d uds.Usage) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.tables.Usage),
		Key:              usageKey(app, owner),
		UpdateExpression: aws.String("ADD " + schema.AttrUsedBytes + " :b, " + schema.AttrUsedItems + " :i SET " + schema.AttrAppShard + " = :s"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":b": &types.AttributeValueMemberN{Value: strconv.FormatInt(d.Bytes, 10)},
			":i": &types.AttributeValueMemberN{Value: strconv.FormatInt(d.Items, 10)},
			":s": &types.AttributeValueMemberS{Value: AppShard(app, owner)},
		},
	}
}

// quotaError builds the refusal, with the usage record DynamoDB returned
// with the failed condition (read afresh when there is none).
func (s *Store) quotaError(ctx context.Context, app, owner string, lim uds.Limits, record map[string]types.AttributeValue) error {
	if record == nil {
		out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(s.tables.Usage), Key: usageKey(app, owner), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return fmt.Errorf("read usage of %s in %s: %w", owner, app, err)
		}
		record = out.Item
	}
	return &uds.QuotaError{Quota: uds.Quota{
		App: app, User: owner, Limits: lim,
		Used: usageOf(record),
	}}
}

// joinAnd joins disjunctions with AND. DynamoDB refuses redundant
// parentheses, so a single term goes bare.
func joinAnd(terms []string) string {
	if len(terms) == 1 {
		return terms[0]
	}
	return "(" + strings.Join(terms, ") AND (") + ")"
}
