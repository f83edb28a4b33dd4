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

// Policy returns the policy in effect for a namespace: the stored one,
// cached like limits, or the default (shared, no schema, no history)
// when none is set.
// It is read strongly consistent: a change into or out of private counts
// on every function seeing it within the cache's time (policy_change.go),
// which an eventually consistent read would stretch, and the read is paid
// once per namespace per cache period.
//
// A pending change into or out of private may complete from its settle
// time on, and a function that went on serving under the old policy
// after that would read and delete in the key space just left. So a cached
// pending change is trusted only until then (less a margin for clocks);
// past it, while it is pending, the policy is read afresh on every request
// to the namespace, which only a change under way pays.
func (s *Store) Policy(ctx context.Context, app, namespace string) (uds.Policy, error) {
	key := namespaceRef{app, namespace}
	now := s.now()
	p, err := s.policies.get(now, key, func() (uds.Policy, error) {
		return s.readPolicy(ctx, app, namespace)
	})
	if c := p.Changing(now); err == nil && c != nil && !now.Before(c.SettlesAt.Add(-policyMargin)) {
		if p, err = s.readPolicy(ctx, app, namespace); err == nil {
			s.policies.put(key, p, now)
		}
	}
	return p, err
}

// StoredPolicy reads a namespace's policy strongly consistent, for the
// admin view.
func (s *Store) StoredPolicy(ctx context.Context, app, namespace string) (uds.Policy, error) {
	return s.readPolicy(ctx, app, namespace)
}

// readPolicy reads a namespace's policy strongly consistent: a function
// that reads it after a change into or out of private was announced must
// see the change, or it would cache the old policy past the change's
// settle time (Policy).
func (s *Store) readPolicy(ctx context.Context, app, namespace string) (uds.Policy, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.tables.Namespaces),
		Key:            policyKey(app, namespace),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return uds.Policy{}, failed("read the policy of "+app+"/"+namespace, err)
	}
	return decodePolicy(app, out.Item), nil
}

func policyKey(app, namespace string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		schema.AttrApp:       &types.AttributeValueMemberS{Value: app},
		schema.AttrNamespace: &types.AttributeValueMemberS{Value: namespace},
	}
}

// decodePolicy reads a namespace's policy record (nil: none) in app. An
// access mode left unset, in effect or pending, is the app's default.
func decodePolicy(app string, av map[string]types.AttributeValue) uds.Policy {
	p := uds.Policy{Access: orDefaultAccess(app, str(av, schema.AttrAccess)), Version: num(av, schema.AttrPolicyVersion)}
	if doc := str(av, schema.AttrJSONSchema); doc != "" {
		p.Schema = json.RawMessage(doc)
	}
	if h, ok := av[schema.AttrHistory].(*types.AttributeValueMemberM); ok {
		p.History = uds.History{Versions: int(num(h.Value, schema.AttrHistoryVersions)), Days: int(num(h.Value, schema.AttrHistoryDays))}
	}
	decodeIndexes(av, &p)
	p.Binary = decodeBinaryRule(str(av, schema.AttrBinaryRule))
	if t, err := time.Parse(timeLayout, str(av, schema.AttrUpdatedDate)); err == nil {
		p.Updated = t
	}
	p.HeldSince = parseTime(str(av, schema.AttrHeldSince))
	for _, a := range policyAttrs {
		if _, set := av[a]; set {
			p.Set = true
		}
	}
	if _, pending := av[schema.AttrSettlesAt]; pending {
		c := &uds.PolicyChange{
			Access:    orDefaultAccess(app, str(av, schema.AttrPendingAccess)),
			Since:     time.UnixMilli(num(av, schema.AttrPendingSince)).UTC(),
			SettlesAt: time.UnixMilli(num(av, schema.AttrSettlesAt)).UTC(),
			LapsesAt:  time.UnixMilli(num(av, schema.AttrLapsesAt)).UTC(),
		}
		if doc := str(av, schema.AttrPendingSchema); doc != "" {
			c.Schema = json.RawMessage(doc)
		}
		p.Pending = c
	}
	return p
}

// orDefaultAccess is the access mode stored, or the app's default where
// none is.
func orDefaultAccess(app, stored string) uds.Access {
	if stored == "" {
		return uds.DefaultAccess(app)
	}
	return uds.Access(stored)
}

// scanSegments is how many parallel segments each data table's scan for a
// namespace's items runs in.
const scanSegments = 4

// holdsData reports whether a namespace holds a live item or a kept
// version, in any key space: versions stay where their items were, so a
// change of key space would leave them out of reach. Items are keyed by
// hash alone, so this is a filtered, strongly consistent scan of the data
// tables and the history table in parallel segments, which stops at the
// first entry found:
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
	for _, table := range []string{s.tables.Data, s.tables.List, s.tables.History} {
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

// scanForPrefix scans one segment of a table for a live item (or kept
// version: the history table's heads, which keep nothing, do not count)
// whose dataKey starts with prefix.
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
	if table == s.tables.History {
		in.FilterExpression = aws.String(*in.FilterExpression + " AND #v >= :zero")
		in.ExpressionAttributeNames["#v"] = schema.AttrVersion
		in.ExpressionAttributeValues[":zero"] = &types.AttributeValueMemberN{Value: "0"}
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

// policyAttrs are the attributes of a namespace's record of which one is
// stored while the namespace has a policy (uds.Policy's Set): a record
// may exist without any, for a removed policy's version or the
// catalogue's mark (catalog.go).
var policyAttrs = []string{schema.AttrAccess, schema.AttrHistory, schema.AttrBinaryRule}

// Policies lists the policies set in an app, by namespace, after the
// namespace named (exclusive), at most limit; more reports whether others
// follow. A policy is set when it has an access mode, a history or a
// binary rule (a removed one keeps its record, for its version, with none).
// With held, the namespaces the catalogue marked as holding data are
// listed too, with or without a policy.
func (s *Store) Policies(ctx context.Context, app, after string, limit int, held bool) (page []uds.NamespacePolicy, more bool, err error) {
	filter := "attribute_exists(#a) OR attribute_exists(#h) OR attribute_exists(#br)"
	names := map[string]string{"#app": schema.AttrApp, "#a": schema.AttrAccess, "#h": schema.AttrHistory, "#br": schema.AttrBinaryRule}
	if held {
		filter += " OR attribute_exists(#hs)"
		names["#hs"] = schema.AttrHeldSince
	}
	in := &dynamodb.QueryInput{
		TableName:                aws.String(s.tables.Namespaces),
		KeyConditionExpression:   aws.String("#app = :app"),
		FilterExpression:         aws.String(filter),
		ExpressionAttributeNames: names,
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
			page = append(page, uds.NamespacePolicy{App: app, Namespace: str(it, schema.AttrNamespace), Policy: decodePolicy(app, it)})
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
