package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Quota modes (docs/decisions/quotas.md, "Quota modes"). The mode is an
// attribute of the app's record, read with its limits (and cached as
// they are). Whichever mode wrote an item counts it: an item written in
// streamed mode carries schema.AttrStreamCounted and its changes are
// summed from the stream (streamusage.go); any other item is charged by
// the write's transaction (usage.go). A switch therefore never counts an
// item twice or not at all, whatever mode each function container still
// has cached.

// QuotaMode reads an app's quota mode, fresh.
func (s *Store) QuotaMode(ctx context.Context, app string) (uds.QuotaMode, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                aws.String(s.tables.Apps),
		Key:                      appKey(app),
		ProjectionExpression:     aws.String("#m"),
		ExpressionAttributeNames: map[string]string{"#m": schema.AttrQuotaMode},
		ConsistentRead:           aws.Bool(true),
	})
	if err != nil {
		return "", failed("read quota mode of app "+app, err)
	}
	return modeOf(out.Item), nil
}

// SetQuotaMode sets an app's quota mode. Strict, the default, is stored
// as no mode at all. A deployment whose data tables' streams nothing
// reads (WithoutStreams) refuses streamed with uds.ErrNoStreams. This
// process applies the mode at once, other containers within the limits
// cache's lifetime.
func (s *Store) SetQuotaMode(ctx context.Context, app string, mode uds.QuotaMode) error {
	if mode == uds.QuotaStreamed && s.noStreams {
		return uds.ErrNoStreams
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.tables.Apps),
		Key:                      appKey(app),
		UpdateExpression:         aws.String("REMOVE #m"),
		ExpressionAttributeNames: map[string]string{"#m": schema.AttrQuotaMode},
	}
	if mode != uds.QuotaStrict {
		in.UpdateExpression = aws.String("SET #m = :m")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":m": &types.AttributeValueMemberS{Value: string(mode)}}
	}
	if _, err := s.client.UpdateItem(ctx, in); err != nil {
		return failed("set quota mode of app "+app, err)
	}
	s.limits.clear()
	return nil
}

// WithoutStreams says that nothing reads the data tables' streams in this
// deployment, so no app may take the streamed mode, and the changes feed,
// which nothing writes, is not read (uds.ErrNoChangesFeed).
func WithoutStreams() Option { return func(s *Store) { s.noStreams = true } }

// modeOf is the mode an app's record sets: strict unless it names
// another.
func modeOf(appItem map[string]types.AttributeValue) uds.QuotaMode {
	if m, err := uds.ParseQuotaMode(str(appItem, schema.AttrQuotaMode)); err == nil {
		return m
	}
	return uds.QuotaStrict
}
