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
	// erasing is set while an erase of the user's data refuses their
	// writes (erase_guard.go).
	erasing bool
}

// limitsInEffect returns the quota limits in effect for user in app.
func (s *Store) limitsInEffect(ctx context.Context, app, user string) (uds.Limits, error) {
	e, err := s.recordsInEffect(ctx, app, user)
	return e.limits, err
}

// recordsInEffect returns what the app's and the user's records set,
// cached: a request reads them (one BatchGetItem of the three records)
// only now and then, for its rate limits and, a write, for its quota and
// whether an erase refuses it.
func (s *Store) recordsInEffect(ctx context.Context, app, user string) (inEffect, error) {
	return s.limits.get(s.now(), ownerRef{app, user}, func() (inEffect, error) {
		rs, err := s.readRecords(ctx, app, user, false)
		if err != nil {
			return inEffect{}, err
		}
		return inEffect{
			limits:  uds.Resolve(limitsOf(rs.user), limitsOf(rs.app), s.globalLimits),
			caller:  uds.ResolveRate(callerRate(rs.user), callerRate(rs.app), s.globalRates.PerCaller),
			whole:   uds.ResolveRate(appRate(rs.app), s.globalRates.PerApp),
			mode:    modeOf(rs.app),
			erasing: refusesWrites(rs.erase, s.now()),
		}, nil
	})
}

// records are what readRecords reads: the app's record, the user's usage
// record in the app, and the user's erase record (the request path's
// reads only); nil where there is none.
type records struct {
	app, user, erase map[string]types.AttributeValue
}

// readRecords reads an app's record (its default limits) and a user's
// usage record (usage and overrides) in one BatchGetItem; requests read
// them eventually consistent, with the user's erase record (half a read
// unit more), the quota views strongly.
func (s *Store) readRecords(ctx context.Context, app, user string, consistent bool) (rs records, err error) {
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
	if !consistent {
		usage := in.RequestItems[s.tables.Usage]
		usage.Keys = append(usage.Keys, eraseKey(user))
		usage.ProjectionExpression = aws.String(*usage.ProjectionExpression + ", " + eraseGuardAttrs)
		in.RequestItems[s.tables.Usage] = usage
	}
	for attempt := 0; ; attempt++ {
		out, err := s.client.BatchGetItem(ctx, in)
		if err != nil {
			return rs, failed("read limits of "+user+" in "+app, err)
		}
		for _, it := range out.Responses[s.tables.Apps] {
			rs.app = it
		}
		for _, it := range out.Responses[s.tables.Usage] {
			// The projection leaves the keys out: an erase record is the
			// one with a state.
			if _, erase := it[schema.AttrEraseState]; erase {
				rs.erase = it
			} else {
				rs.user = it
			}
		}
		if len(out.UnprocessedKeys) == 0 {
			return rs, nil
		}
		in.RequestItems = out.UnprocessedKeys
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return rs, failed("read limits of "+user+" in "+app, err)
		}
	}
}

func limitsOf(av map[string]types.AttributeValue) uds.Limits {
	return uds.Limits{Bytes: num(av, schema.AttrLimitBytes), Items: num(av, schema.AttrLimitItems)}
}
