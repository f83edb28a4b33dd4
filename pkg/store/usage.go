package store

import (
	"context"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Usage accounting: the one place that turns a data write into a change of
// its owner's usage record. Every write path (create, update, delete,
// delete-all) commits its data change and the usageChange below in one
// transaction (transact.go), so the record moves by exactly the size of
// what was written or removed, once. A change that grows usage carries the
// limit as its condition, so concurrent writers can never pass it.

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

// usageChange is the update that adds d to the owner's usage record
// unconditionally, creating it (with its app shard, for the app's users
// index) if needed, and stamps the change time that recompute waits on.
// Releases use it as it is; usageAction adds the limits to growth.
// A change that moves kept versions also moves historyBytes, the part of
// the bytes they hold; other changes leave it out, so that namespaces
// without history write what they always did.
func (s *Store) usageChange(app, owner string, d uds.Usage) types.TransactWriteItem {
	up := &types.Update{
		TableName:        aws.String(s.tables.Usage),
		Key:              usageKey(app, owner),
		UpdateExpression: aws.String("ADD #ub :b, #ui :i SET #s = :s, #lw = :lw"),
		ExpressionAttributeNames: map[string]string{
			"#ub": schema.AttrUsedBytes, "#ui": schema.AttrUsedItems, "#s": schema.AttrAppShard, "#lw": schema.AttrLastWrite,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":b":  &types.AttributeValueMemberN{Value: strconv.FormatInt(d.Bytes, 10)},
			":i":  &types.AttributeValueMemberN{Value: strconv.FormatInt(d.Items, 10)},
			":s":  &types.AttributeValueMemberS{Value: AppShard(app, owner)},
			":lw": &types.AttributeValueMemberN{Value: strconv.FormatInt(s.now().UnixMilli(), 10)},
		},
	}
	if d.History != 0 {
		up.UpdateExpression = aws.String("ADD #ub :b, #ui :i, #hb :h SET #s = :s, #lw = :lw")
		up.ExpressionAttributeNames["#hb"] = schema.AttrHistoryBytes
		up.ExpressionAttributeValues[":h"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(d.History, 10)}
	}
	return types.TransactWriteItem{Update: up}
}

// usageAction is the usage change of a write. One that grows a dimension
// reads the limits in effect (through the cache) and holds only while the
// result stays within them, so concurrent writers can never pass them; one
// that could not fit even an empty account is a *uds.QuotaError at once.
// It returns the limits it applied, for the body of a refusal.
func (s *Store) usageAction(ctx context.Context, app, owner string, d uds.Usage) (types.TransactWriteItem, uds.Limits, error) {
	action := s.usageChange(app, owner, d)
	if !d.Grows() {
		return action, uds.Limits{}, nil
	}
	lim, err := s.limitsInEffect(ctx, app, owner)
	if err != nil {
		return action, lim, err
	}
	up := action.Update
	var conds []string
	for _, c := range []struct {
		name, value  string
		limit, delta int64
	}{
		{"#ub", ":maxb", lim.Bytes, d.Bytes},
		{"#ui", ":maxi", lim.Items, d.Items},
	} {
		if c.limit == 0 || c.delta <= 0 {
			continue
		}
		if c.delta > c.limit {
			return action, lim, s.quotaError(ctx, app, owner, lim, nil)
		}
		// usage + delta <= limit, written as usage <= limit - delta since
		// conditions have no arithmetic.
		conds = append(conds, "attribute_not_exists("+c.name+") OR "+c.name+" <= "+c.value)
		up.ExpressionAttributeValues[c.value] = &types.AttributeValueMemberN{Value: strconv.FormatInt(c.limit-c.delta, 10)}
	}
	if len(conds) > 0 {
		up.ConditionExpression = aws.String(joinAnd(conds))
		up.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	return action, lim, nil
}

// ownerDeltas adds up the usage changes of one transaction per owner (by
// owner key), so that it moves each owner's record once.
type ownerDeltas map[string]uds.Usage

func (d ownerDeltas) add(app, owner string, u uds.Usage) {
	k := ownerKey(app, owner)
	d[k] = d[k].Plus(u)
}

// each calls fn for every owner whose usage changes, in owner key order.
func (d ownerDeltas) each(fn func(app, owner string, u uds.Usage)) {
	keys := make([]string, 0, len(d))
	for k, u := range d {
		if u != (uds.Usage{}) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		app, owner, _ := strings.Cut(k, uds.KeyDelimiter)
		fn(app, owner, d[k])
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
			return failed("read usage of "+owner+" in "+app, err)
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
