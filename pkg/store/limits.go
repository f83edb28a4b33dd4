package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// inEffect is what the app's record and a user's usage record set for
// the user in the app, with the deployment's defaults: the quota limits
// and the rate limits (the caller's and the app's).
type inEffect struct {
	limits        uds.Limits
	caller, whole uds.Rate
	mode          uds.QuotaMode
}

// limitsInEffect returns the quota limits in effect for user in app.
func (s *Store) limitsInEffect(ctx context.Context, app, user string) (uds.Limits, error) {
	e, err := s.recordsInEffect(ctx, app, user)
	return e.limits, err
}

// recordsInEffect returns what the app's and the user's records set,
// cached: a request reads them (one BatchGetItem of the two records) only
// now and then, for its rate limits and, a write, for its quota.
func (s *Store) recordsInEffect(ctx context.Context, app, user string) (inEffect, error) {
	return s.limits.get(s.now(), ownerKey(app, user), func() (inEffect, error) {
		appItem, record, err := s.readRecords(ctx, app, user, false)
		if err != nil {
			return inEffect{}, err
		}
		return inEffect{
			limits: uds.Resolve(limitsOf(record), limitsOf(appItem), s.globalLimits),
			caller: uds.ResolveRate(callerRate(record), callerRate(appItem), s.globalRates.PerCaller),
			whole:  uds.ResolveRate(appRate(appItem), s.globalRates.PerApp),
			mode:   modeOf(appItem),
		}, nil
	})
}

// readRecords reads an app's record (its default limits) and a user's
// usage record (usage and overrides) in one BatchGetItem; requests read
// them eventually consistent, the quota views strongly.
func (s *Store) readRecords(ctx context.Context, app, user string, consistent bool) (appItem, record map[string]types.AttributeValue, err error) {
	limits := schema.AttrLimitBytes + ", " + schema.AttrLimitItems + ", " + schema.AttrRateCallerPerSecond + ", " + schema.AttrRateCallerBurst
	in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		s.tables.Apps: {
			Keys:                 []map[string]types.AttributeValue{{schema.AttrApp: &types.AttributeValueMemberS{Value: app}}},
			ProjectionExpression: aws.String(limits + ", " + schema.AttrRateAppPerSecond + ", " + schema.AttrRateAppBurst + ", " + schema.AttrQuotaMode),
			ConsistentRead:       aws.Bool(consistent),
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
			return appItem, record, failed("read limits of "+user+" in "+app, err)
		}
		for _, it := range out.Responses[s.tables.Apps] {
			appItem = it
		}
		for _, it := range out.Responses[s.tables.Usage] {
			record = it
		}
		if len(out.UnprocessedKeys) == 0 {
			return appItem, record, nil
		}
		in.RequestItems = out.UnprocessedKeys
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return appItem, record, failed("read limits of "+user+" in "+app, err)
		}
	}
}

func limitsOf(av map[string]types.AttributeValue) uds.Limits {
	return uds.Limits{Bytes: num(av, schema.AttrLimitBytes), Items: num(av, schema.AttrLimitItems)}
}
