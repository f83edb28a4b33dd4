package store

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/ratelimit"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Rate limits. Their configuration sits beside the quota limits: an app's
// on its record in the apps table, a user's override on the user's usage
// record. Their state is one item per rate bucket in the apps table
// (keyed "rate#" and the bucket's name, kept a day after its last use by
// DynamoDB's TTL), holding the bucket's theoretical arrival time (GCRA):
// the instant at which every token taken so far is paid for at the rate.
// A function takes tokens from it in leases (LeaseTokens) and spends them
// in memory (package ratelimit), so a request costs a write only when its
// container's lease runs out.

// WithDefaultRateLimits sets the deployment's rate limits, used where
// neither the app nor the user sets one (the zero Rate: no limit).
func WithDefaultRateLimits(r uds.RateLimits) Option { return func(s *Store) { s.globalRates = r } }

// AppRateLimits reads an app's rate limits, strongly consistent.
func (s *Store) AppRateLimits(ctx context.Context, app string) (uds.RateLimits, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.tables.Apps),
		Key:            map[string]types.AttributeValue{schema.AttrApp: &types.AttributeValueMemberS{Value: app}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return uds.RateLimits{}, failed("read the rate limits of "+app, err)
	}
	return uds.RateLimits{PerCaller: callerRate(out.Item), PerApp: appRate(out.Item)}, nil
}

// SetAppRateLimits stores an app's rate limits; a zero Rate removes that
// part.
func (s *Store) SetAppRateLimits(ctx context.Context, app string, r uds.RateLimits) error {
	in := numbersUpdate(append(callerRateAttrs(r.PerCaller), appRateAttrs(r.PerApp)...)...)
	in.TableName = aws.String(s.tables.Apps)
	in.Key = map[string]types.AttributeValue{schema.AttrApp: &types.AttributeValueMemberS{Value: app}}
	if _, err := s.client.UpdateItem(ctx, in); err != nil {
		return failed("set the rate limits of "+app, err)
	}
	s.limits.clear()
	return nil
}

// UserRateLimits reads a user's override of the caller rate limit in an
// app, strongly consistent (the zero Rate: none).
func (s *Store) UserRateLimits(ctx context.Context, app, user string) (uds.Rate, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.tables.Usage), Key: usageKey(app, user), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return uds.Rate{}, failed("read the rate limits of "+user+" in "+app, err)
	}
	return callerRate(out.Item), nil
}

// SetUserRateLimits stores a user's override of the caller rate limit; the
// zero Rate removes it (and creates no record where none was).
func (s *Store) SetUserRateLimits(ctx context.Context, app, user string, r uds.Rate) error {
	in := numbersUpdate(callerRateAttrs(r)...)
	in.TableName, in.Key = aws.String(s.tables.Usage), usageKey(app, user)
	if r == (uds.Rate{}) {
		in.ConditionExpression = aws.String("attribute_exists(#u)")
		in.ExpressionAttributeNames = map[string]string{"#u": schema.AttrUser}
	}
	if _, err := s.client.UpdateItem(ctx, in); err != nil && !isConditionFailed(err) {
		return failed("set the rate limits of "+user+" in "+app, err)
	}
	s.limits.clear()
	return nil
}

func callerRateAttrs(r uds.Rate) []attrNumber {
	return []attrNumber{{schema.AttrRateCallerPerSecond, r.PerSecond}, {schema.AttrRateCallerBurst, r.Burst}}
}

func appRateAttrs(r uds.Rate) []attrNumber {
	return []attrNumber{{schema.AttrRateAppPerSecond, r.PerSecond}, {schema.AttrRateAppBurst, r.Burst}}
}

func callerRate(av map[string]types.AttributeValue) uds.Rate {
	return uds.Rate{PerSecond: num(av, schema.AttrRateCallerPerSecond), Burst: num(av, schema.AttrRateCallerBurst)}
}

func appRate(av map[string]types.AttributeValue) uds.Rate {
	return uds.Rate{PerSecond: num(av, schema.AttrRateAppPerSecond), Burst: num(av, schema.AttrRateAppBurst)}
}

// RatesInEffect returns the rate limits in effect for a caller of an app:
// the caller's (the user's override, the app's, the deployment's) and the
// app's (the app's, the deployment's); the zero Rate where none applies.
// They come from the records a write reads for its quota, read and cached
// once for both.
func (s *Store) RatesInEffect(ctx context.Context, app, user string) (caller, whole uds.Rate, err error) {
	e, err := s.recordsInEffect(ctx, app, user)
	return e.caller, e.whole, err
}

// rateBucketLife is how long a rate bucket's state outlives its last
// lease: far longer than any bucket takes to fill again.
const rateBucketLife = 24 * time.Hour

// maxLeaseAttempts bounds the attempts of one lease that keeps meeting
// other processes' leases in a bucket all but empty.
const maxLeaseAttempts = 4

// LeaseTokens takes from want down to least tokens from the shared bucket
// named bucket, which fills at rate (GCRA: a token every 1/PerSecond
// seconds, Burst at most at once), with one conditional UpdateItem, or
// none when the bucket holds fewer than least; last is what the
// process's previous lease of it returned (the zero Lease: none).
//
// The update has two forms, and the lease picks the one the bucket is
// likely in, since a write whose condition fails is charged like one that
// commits. While the bucket is drawn on (its TAT ahead of now) the update
// adds the tokens' time to the TAT, conditioned on the result staying
// within the burst, so leases of several processes commit side by side
// without a conflict; an idle bucket's TAT is set from now, conditioned
// on its still being idle. A process's view of the TAT is as old as its
// last lease, and other processes' leases have moved it on since; so a
// bucket that was drawn on at the last lease is taken to be drawn on
// still (others keep leasing from it). A bucket whose TAT lags now by no
// more than the lease's own time is taken as drawn on too: its TAT moves
// on by the lease from where it stands, which grants the tokens of that
// idle moment, less than a lease, beyond the burst. Over any span the
// bucket so hands out at most PerSecond × t + Burst tokens and one lease.
// A write whose condition fails returns the bucket's TAT, and the lease
// is computed again from it.
//
// A refused lease (Granted 0) costs a write only when the process's view
// said the bucket held the tokens; it returns the bucket's TAT, from which
// the caller knows when the bucket holds tokens again.
func (s *Store) LeaseTokens(ctx context.Context, bucket string, rate uds.Rate, want, least int64, last ratelimit.Lease) (ratelimit.Lease, error) {
	interval := rate.Interval()
	tolerance := rate.Burst * interval
	tat, drawn := last.TAT, last.Drawn
	for range maxLeaseAttempts {
		now := s.now().UnixMicro()
		base := max(tat, now)
		granted := min(want, (now+tolerance-base)/interval)
		if granted < least {
			return ratelimit.Lease{TAT: tat, Drawn: true}, nil
		}
		cost := granted * interval
		drawn = drawn || tat >= now-cost
		values := map[string]types.AttributeValue{
			":x": &types.AttributeValueMemberN{Value: strconv.FormatInt(s.now().Add(rateBucketLife).Unix(), 10)},
		}
		update, cond := "SET #t = :next, #x = :x", "attribute_not_exists(#t) OR #t < :now"
		if drawn {
			update, cond = "SET #t = #t + :cost, #x = :x", "#t >= :floor AND #t <= :last"
			values[":cost"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(cost, 10)}
			values[":floor"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(now-cost, 10)}
			values[":last"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(now+tolerance-cost, 10)}
		} else {
			values[":now"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(now, 10)}
			values[":next"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(now+cost, 10)}
		}
		out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                           aws.String(s.tables.Apps),
			Key:                                 map[string]types.AttributeValue{schema.AttrApp: &types.AttributeValueMemberS{Value: "rate#" + bucket}},
			UpdateExpression:                    aws.String(update),
			ConditionExpression:                 aws.String(cond),
			ExpressionAttributeNames:            map[string]string{"#t": schema.AttrTAT, "#x": schema.AttrExpiresAt},
			ExpressionAttributeValues:           values,
			ReturnValues:                        types.ReturnValueUpdatedNew,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}, withoutRetries)
		var ccf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			// Drawn on, for the next lease, when others had taken its
			// TAT past now before this one.
			tat = num(out.Attributes, schema.AttrTAT)
			return ratelimit.Lease{Granted: granted, TAT: tat, Drawn: drawn && tat-cost >= now}, nil
		case asCCF(err, &ccf):
			// Idle no longer, idle after all, or drawn past what this
			// lease assumed: compute it again from the bucket as it is.
			tat, drawn = num(ccf.Item, schema.AttrTAT), false
		default:
			return ratelimit.Lease{}, failed("lease rate tokens of "+bucket, err)
		}
	}
	// Every attempt met leases of other processes that drew the bucket
	// down past what it computed: the bucket is all but empty, and the
	// lease is refused as an empty bucket's is.
	return ratelimit.Lease{TAT: tat, Drawn: true}, nil
}
