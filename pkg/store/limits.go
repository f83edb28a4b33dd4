package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// limitsInEffect returns the limits in effect for user in app, cached:
// a data write reads them (one BatchGetItem of the app default and the user
// override) only now and then.
func (s *Store) limitsInEffect(ctx context.Context, app, user string) (uds.Limits, error) {
	return s.limits.get(s.now(), ownerKey(app, user), func() (uds.Limits, error) {
		appLimits, record, err := s.readRecords(ctx, app, user, false)
		if err != nil {
			return uds.Limits{}, err
		}
		return uds.Resolve(limitsOf(record), appLimits, s.globalLimits), nil
	})
}

// readRecords reads an app's default limits and a user's usage record
// (usage and override) in one BatchGetItem; the write path reads them
// eventually consistent, the quota views strongly.
func (s *Store) readRecords(ctx context.Context, app, user string, consistent bool) (appLimits uds.Limits, record map[string]types.AttributeValue, err error) {
	limits := schema.AttrLimitBytes + ", " + schema.AttrLimitItems
	in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		s.tables.Apps: {
			Keys:                 []map[string]types.AttributeValue{{schema.AttrApp: &types.AttributeValueMemberS{Value: app}}},
			ProjectionExpression: aws.String(limits), ConsistentRead: aws.Bool(consistent),
		},
		s.tables.Usage: {
			Keys:                 []map[string]types.AttributeValue{usageKey(app, user)},
			ProjectionExpression: aws.String(limits + ", " + schema.AttrUsedBytes + ", " + schema.AttrUsedItems + ", " + schema.AttrHistoryBytes + ", " + schema.AttrLastWrite),
			ConsistentRead:       aws.Bool(consistent),
		},
	}}
	for attempt := 0; ; attempt++ {
		out, err := s.client.BatchGetItem(ctx, in)
		if err != nil {
			return appLimits, record, failed("read limits of "+user+" in "+app, err)
		}
		for _, it := range out.Responses[s.tables.Apps] {
			appLimits = limitsOf(it)
		}
		for _, it := range out.Responses[s.tables.Usage] {
			record = it
		}
		if len(out.UnprocessedKeys) == 0 {
			return appLimits, record, nil
		}
		in.RequestItems = out.UnprocessedKeys
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return appLimits, record, failed("read limits of "+user+" in "+app, err)
		}
	}
}

func limitsOf(av map[string]types.AttributeValue) uds.Limits {
	return uds.Limits{Bytes: num(av, schema.AttrLimitBytes), Items: num(av, schema.AttrLimitItems)}
}
