package store

import (
	"context"
	"errors"
	"sort"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/internal/safe"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// AppUsers lists the users storing data in an app, with their usage, in
// user order, after the user named by after.
func (s *Store) AppUsers(ctx context.Context, app, after string, limit int) ([]uds.UserUsage, bool, error) {
	users, more, err := s.appUsers(ctx, app, after, limit)
	if err == nil {
		err = s.readHistoryBytes(ctx, app, users)
	}
	if err != nil {
		return nil, false, err
	}
	return users, more, nil
}

// appUsers lists the users storing data in an app as the app index has
// them: without their history bytes. The index is write sharded, so every
// shard is queried in parallel and the sorted results are merged; each
// shard is read from after onwards, so one cursor (the last user) serves
// them all.
func (s *Store) appUsers(ctx context.Context, app, after string, limit int) ([]uds.UserUsage, bool, error) {
	results := make([][]uds.UserUsage, schema.AppShards)
	errs := make([]error, schema.AppShards)
	var wg sync.WaitGroup
	for shard := range schema.AppShards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := safe.Call(func() {
				results[shard], errs[shard] = s.queryShard(ctx, app+"#"+strconv.Itoa(shard), after, limit+1)
			}); err != nil {
				errs[shard] = err
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, false, failed("list users of "+app, err)
	}
	var all []uds.UserUsage
	for _, r := range results {
		all = append(all, r...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].User < all[j].User })
	if len(all) > limit {
		return all[:limit], true, nil
	}
	return all, false, nil
}

// readHistoryBytes fills in the history bytes of a page of an app's users
// from their usage records, 100 to a BatchGetItem: the app index does not
// project them, and an index's projection cannot change once its table
// exists. The index is eventually consistent and the records are read so
// too, so a row's two figures may stand a moment apart.
func (s *Store) readHistoryBytes(ctx context.Context, app string, rows []uds.UserUsage) error {
	at := make(map[string]int, len(rows))
	for start := 0; start < len(rows); start += maxBatchGet {
		chunk := rows[start:min(start+maxBatchGet, len(rows))]
		keys := make([]map[string]types.AttributeValue, len(chunk))
		for i, r := range chunk {
			keys[i], at[r.User] = usageKey(app, r.User), start+i
		}
		in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{s.tables.Usage: {
			Keys:                     keys,
			ProjectionExpression:     aws.String("#u, #hb"),
			ExpressionAttributeNames: map[string]string{"#u": schema.AttrUser, "#hb": schema.AttrHistoryBytes},
		}}}
		err := s.getAll(ctx, "read the history bytes of the users of "+app, in, func(_ string, it map[string]types.AttributeValue) {
			if i, ok := at[str(it, schema.AttrUser)]; ok {
				rows[i].History = num(it, schema.AttrHistoryBytes)
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// queryShard reads up to n users of one app shard after the given user.
func (s *Store) queryShard(ctx context.Context, shard, after string, n int) ([]uds.UserUsage, error) {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.tables.Usage),
		IndexName:                aws.String(schema.IndexByAppShard),
		KeyConditionExpression:   aws.String("#s = :s"),
		ExpressionAttributeNames: map[string]string{"#s": schema.AttrAppShard},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": &types.AttributeValueMemberS{Value: shard},
		},
	}
	if after != "" {
		in.KeyConditionExpression = aws.String("#s = :s AND #u > :u")
		in.ExpressionAttributeNames["#u"] = schema.AttrUser
		in.ExpressionAttributeValues[":u"] = &types.AttributeValueMemberS{Value: after}
	}
	var out []uds.UserUsage
	err := s.queryAll(ctx, in, n, func(it map[string]types.AttributeValue) {
		out = append(out, uds.UserUsage{User: str(it, schema.AttrUser), Usage: usageOf(it)})
	})
	return out, err
}

// UserApps lists the apps a user stores data in, in app order, after the
// app named by after: one query of the user's partition.
func (s *Store) UserApps(ctx context.Context, user, after string, limit int) ([]uds.AppUsage, bool, error) {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.tables.Usage),
		KeyConditionExpression:   aws.String("#u = :u"),
		ExpressionAttributeNames: map[string]string{"#u": schema.AttrUser, "#s": schema.AttrAppShard},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": &types.AttributeValueMemberS{Value: user},
		},
		// Records that only hold a limit override are no usage.
		FilterExpression: aws.String("attribute_exists(#s)"),
		ConsistentRead:   aws.Bool(true),
	}
	if after != "" {
		in.KeyConditionExpression = aws.String("#u = :u AND #a > :a")
		in.ExpressionAttributeNames["#a"] = schema.AttrApp
		in.ExpressionAttributeValues[":a"] = &types.AttributeValueMemberS{Value: after}
	}
	var out []uds.AppUsage
	err := s.queryAll(ctx, in, limit+1, func(it map[string]types.AttributeValue) {
		out = append(out, uds.AppUsage{App: str(it, schema.AttrApp), Usage: usageOf(it)})
	})
	if err != nil {
		return nil, false, failed("list apps of "+user, err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// queryAll runs a query page after page until n items were seen or none
// remain.
func (s *Store) queryAll(ctx context.Context, in *dynamodb.QueryInput, n int, each func(map[string]types.AttributeValue)) error {
	seen := 0
	for {
		in.Limit = aws.Int32(int32(n - seen))
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return err
		}
		for _, it := range out.Items {
			each(it)
			seen++
		}
		if seen >= n || out.LastEvaluatedKey == nil {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func usageOf(av map[string]types.AttributeValue) uds.Usage {
	return uds.Usage{Bytes: num(av, schema.AttrUsedBytes), Items: num(av, schema.AttrUsedItems), History: num(av, schema.AttrHistoryBytes)}
}
