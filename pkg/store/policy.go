package store

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Policy returns the policy in effect for a namespace: the stored one, read
// eventually consistent and cached like limits, or the default (shared, no
// schema) when none is set.
func (s *Store) Policy(ctx context.Context, app, namespace string) (uds.Policy, error) {
	return s.policies.get(s.now(), app+uds.KeyDelimiter+namespace, func() (uds.Policy, error) {
		return s.readPolicy(ctx, app, namespace, false)
	})
}

// StoredPolicy reads a namespace's policy strongly consistent, for the
// admin view.
func (s *Store) StoredPolicy(ctx context.Context, app, namespace string) (uds.Policy, error) {
	return s.readPolicy(ctx, app, namespace, true)
}

func (s *Store) readPolicy(ctx context.Context, app, namespace string, consistent bool) (uds.Policy, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.tables.Namespaces),
		Key:            policyKey(app, namespace),
		ConsistentRead: aws.Bool(consistent),
	})
	if err != nil {
		return uds.Policy{}, failed("read the policy of "+app+"/"+namespace, err)
	}
	return decodePolicy(out.Item), nil
}

func policyKey(app, namespace string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.AttrApp:       &types.AttributeValueMemberS{Value: app},
		schema.AttrNamespace: &types.AttributeValueMemberS{Value: namespace},
	}
}

func decodePolicy(av map[string]types.AttributeValue) uds.Policy {
	p := uds.Policy{Access: uds.Access(str(av, schema.AttrAccess)), Version: num(av, schema.AttrPolicyVersion)}
	if doc := str(av, schema.AttrJSONSchema); doc != "" {
		p.Schema = json.RawMessage(doc)
	}
	if t, err := time.Parse(timeLayout, str(av, schema.AttrUpdatedDate)); err == nil {
		p.Updated = t
	}
	return p
}

// SetPolicy stores a namespace's policy, or, with the zero Access, removes
// it (the namespace is shared again, without a schema). It returns the
// policy now in effect. A change into or out of private, which would move
// the namespace's items to another key space, is refused with
// uds.ErrInUse while the namespace holds an item. The schema must have
// been checked by the caller.
//
// Each change bumps the policy's version, conditioned on the version read,
// so that two admins changing one policy cannot interleave a data check
// and a write.
func (s *Store) SetPolicy(ctx context.Context, app, namespace string, p uds.Policy) (uds.Policy, error) {
	op := "set the policy of " + app + "/" + namespace
	for range maxWriteAttempts {
		current, err := s.readPolicy(ctx, app, namespace, true)
		if err != nil {
			return uds.Policy{}, err
		}
		if (current.Mode() == uds.AccessPrivate) != (p.Mode() == uds.AccessPrivate) {
			held, err := s.holdsData(ctx, app, namespace)
			if err != nil {
				return uds.Policy{}, err
			}
			if held {
				return uds.Policy{}, uds.ErrInUse
			}
		}
		next := p
		next.Version, next.Updated = current.Version+1, s.writeTime()
		names := map[string]string{
			"#a": schema.AttrAccess, "#js": schema.AttrJSONSchema, "#pv": schema.AttrPolicyVersion, "#ud": schema.AttrUpdatedDate,
		}
		values := map[string]types.AttributeValue{
			":pv": &types.AttributeValueMemberN{Value: strconv.FormatInt(next.Version, 10)},
			":ud": &types.AttributeValueMemberS{Value: FormatTime(next.Updated)},
		}
		set, remove := "SET #pv = :pv, #ud = :ud", ""
		if p.Access != "" {
			set += ", #a = :a"
			values[":a"] = &types.AttributeValueMemberS{Value: string(p.Access)}
		} else {
			remove = " REMOVE #a"
		}
		if p.Schema != nil {
			set += ", #js = :js"
			values[":js"] = &types.AttributeValueMemberS{Value: string(p.Schema)}
		} else if remove == "" {
			remove = " REMOVE #js"
		} else {
			remove += ", #js"
		}
		cond := "attribute_not_exists(#pv)"
		if current.Version > 0 {
			cond = "#pv = :cur"
			values[":cur"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(current.Version, 10)}
		}
		_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.tables.Namespaces),
			Key:                       policyKey(app, namespace),
			UpdateExpression:          aws.String(set + remove),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		})
		var ccf *types.ConditionalCheckFailedException
		switch {
		case asCCF(err, &ccf):
			continue // another change got in first: decide again
		case err != nil:
			return uds.Policy{}, failed(op, err)
		}
		s.policies.forget(app + uds.KeyDelimiter + namespace)
		return next, nil
	}
	return uds.Policy{}, &uds.UnavailableError{Op: op, Err: errContended}
}

// scanSegments is how many parallel segments each data table's scan for a
// namespace's items runs in.
const scanSegments = 4

// holdsData reports whether a namespace holds a live item, in any key
// space. Items are keyed by hash alone, so this is a filtered, strongly
// consistent scan of both data tables in parallel segments, which stops at
// the first item found:
// its cost grows with the tables, and only a change into or out of
// private pays it.
func (s *Store) holdsData(ctx context.Context, app, namespace string) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		found    bool
		firstErr error
	)
	prefix := app + uds.KeyDelimiter + namespace + uds.KeyDelimiter
	now := strconv.FormatInt(s.now().UnixMilli(), 10)
	for _, table := range []string{s.tables.Data, s.tables.List} {
		for segment := range scanSegments {
			wg.Add(1)
			go func() {
				defer wg.Done()
				held, err := s.scanForPrefix(ctx, table, int32(segment), prefix, now)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case held:
					found = true
					cancel()
				case err != nil && !found && firstErr == nil:
					firstErr = err
				}
			}()
		}
	}
	wg.Wait()
	if found {
		return true, nil
	}
	return false, firstErr
}

// scanForPrefix scans one segment of a table for a live item whose dataKey
// starts with prefix.
func (s *Store) scanForPrefix(ctx context.Context, table string, segment int32, prefix, now string) (bool, error) {
	in := &dynamodb.ScanInput{
		TableName:            aws.String(table),
		Segment:              aws.Int32(segment),
		TotalSegments:        aws.Int32(scanSegments),
		ProjectionExpression: aws.String("#k"),
		FilterExpression:     aws.String("begins_with(#k, :p) AND (attribute_not_exists(#xm) OR #xm > :now)"),
		// A strongly consistent scan sees an item written a moment ago.
		ConsistentRead:           aws.Bool(true),
		ExpressionAttributeNames: map[string]string{"#k": schema.AttrDataKey, "#xm": schema.AttrExpiresAtMillis},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p":   &types.AttributeValueMemberS{Value: prefix},
			":now": &types.AttributeValueMemberN{Value: now},
		},
	}
	for {
		out, err := s.client.Scan(ctx, in)
		if err != nil {
			return false, failed("look for items under "+prefix, err)
		}
		if len(out.Items) > 0 {
			return true, nil
		}
		if out.LastEvaluatedKey == nil {
			return false, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// Policies lists the policies set in an app, by namespace, after the
// namespace named (exclusive), at most limit; more reports whether others
// follow.
func (s *Store) Policies(ctx context.Context, app, after string, limit int) (page []uds.NamespacePolicy, more bool, err error) {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.tables.Namespaces),
		KeyConditionExpression:   aws.String("#app = :app"),
		FilterExpression:         aws.String("attribute_exists(#a)"),
		ExpressionAttributeNames: map[string]string{"#app": schema.AttrApp, "#a": schema.AttrAccess},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":app": &types.AttributeValueMemberS{Value: app},
		},
		Limit:          aws.Int32(int32(limit + 1)),
		ConsistentRead: aws.Bool(true),
	}
	if after != "" {
		in.ExclusiveStartKey = policyKey(app, after)
	}
	for {
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, false, failed("list the policies of "+app, err)
		}
		for _, it := range out.Items {
			page = append(page, uds.NamespacePolicy{App: app, Namespace: str(it, schema.AttrNamespace), Policy: decodePolicy(it)})
		}
		if len(page) > limit {
			return page[:limit], true, nil
		}
		if out.LastEvaluatedKey == nil {
			return page, false, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}
