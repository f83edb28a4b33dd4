package store

import (
	"context"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Quota reads an owner's usage and the limits in effect, fresh (not from
// the write path's cache), in one strongly consistent BatchGetItem.
func (s *Store) Quota(ctx context.Context, app, user string) (uds.Quota, error) {
	rs, err := s.readRecords(ctx, app, user, true)
	if err != nil {
		return uds.Quota{}, err
	}
	return uds.Quota{
		App: app, User: user,
		Used:   usageOf(rs.user),
		Limits: uds.Resolve(limitsOf(rs.user), limitsOf(rs.app), s.globalLimits),
	}, nil
}

// AppLimits reads an app's default per-user limits as configured (0: not
// set).
func (s *Store) AppLimits(ctx context.Context, app string) (uds.Limits, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.tables.Apps),
		Key:            map[string]types.AttributeValue{schema.AttrApp: &types.AttributeValueMemberS{Value: app}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return uds.Limits{}, failed("read limits of app "+app, err)
	}
	return limitsOf(out.Item), nil
}

// SetAppLimits sets an app's default per-user limits; 0 clears a dimension.
func (s *Store) SetAppLimits(ctx context.Context, app string, l uds.Limits) error {
	in := limitsUpdate(l)
	in.TableName = aws.String(s.tables.Apps)
	in.Key = map[string]types.AttributeValue{schema.AttrApp: &types.AttributeValueMemberS{Value: app}}
	if _, err := s.client.UpdateItem(ctx, in); err != nil {
		return failed("set limits of app "+app, err)
	}
	return nil
}

// SetUserLimits sets a user's override in an app; 0 clears a dimension.
// The override lives in the user's usage record.
func (s *Store) SetUserLimits(ctx context.Context, app, user string, l uds.Limits) error {
	in := limitsUpdate(l)
	in.TableName = aws.String(s.tables.Usage)
	in.Key = usageKey(app, user)
	if l == (uds.Limits{}) {
		// Clearing must not create a record that was not there.
		in.ConditionExpression = aws.String("attribute_exists(#u)")
		in.ExpressionAttributeNames = map[string]string{"#u": schema.AttrUser}
	}
	_, err := s.client.UpdateItem(ctx, in)
	if err != nil && !isConditionFailed(err) {
		return failed("set limits of "+user+" in "+app, err)
	}
	return nil
}

// limitsUpdate sets the non-zero limits and removes the zero ones.
func limitsUpdate(l uds.Limits) *dynamodb.UpdateItemInput {
	return numbersUpdate(attrNumber{schema.AttrLimitBytes, l.Bytes}, attrNumber{schema.AttrLimitItems, l.Items})
}

// attrNumber is a number attribute and its value.
type attrNumber struct {
	attr string
	v    int64
}

// numbersUpdate sets the non-zero numbers and removes the zero ones.
func numbersUpdate(numbers ...attrNumber) *dynamodb.UpdateItemInput {
	in := &dynamodb.UpdateItemInput{ExpressionAttributeValues: map[string]types.AttributeValue{}}
	var set, remove []string
	for _, d := range numbers {
		if d.v == 0 {
			remove = append(remove, d.attr)
			continue
		}
		set = append(set, d.attr+" = :"+d.attr)
		in.ExpressionAttributeValues[":"+d.attr] = &types.AttributeValueMemberN{Value: strconv.FormatInt(d.v, 10)}
	}
	expr := ""
	if len(set) > 0 {
		expr = "SET " + strings.Join(set, ", ")
	}
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	in.UpdateExpression = aws.String(expr)
	if len(in.ExpressionAttributeValues) == 0 {
		in.ExpressionAttributeValues = nil
	}
	return in
}
