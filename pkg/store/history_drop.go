package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// dropPerRound bounds the versions one transaction of DropHistory removes:
// with the head and one usage change per owner they stay within
// DynamoDB's 100 actions.
const dropPerRound = 80

// DropHistory removes every version kept of an item, and its delete
// markers, releasing what each held; the item itself stays. Each round is
// one transaction of up to dropPerRound removals, their releases and the
// head written on the revision read, so a round that races a write of the
// item reads again. Versions about to expire are left to DynamoDB's TTL,
// which releases them. It returns how many versions it removed.
func (s *Store) DropHistory(ctx context.Context, key uds.Key) (int, error) {
	op := "drop history of " + key.DataKey()
	removed := 0
	for attempt := 0; attempt < maxWriteAttempts; {
		head, err := s.readHead(ctx, key)
		if err != nil || len(head.kept) == 0 {
			return removed, err
		}
		now := s.now()
		var actions []types.TransactWriteItem
		deltas := ownerDeltas{}
		var rest []keptVersion
		for _, k := range head.kept {
			switch {
			case k.deleted, k.expiresAt != 0 && k.expiresAt <= now.Add(expiryMargin).UnixMilli():
			case len(actions) == dropPerRound:
				rest = append(rest, k)
			default:
				actions = append(actions, types.TransactWriteItem{Delete: &types.Delete{
					TableName:                aws.String(s.tables.History),
					Key:                      historyEntryKey(key, k.version),
					ConditionExpression:      aws.String("attribute_exists(#hk)"),
					ExpressionAttributeNames: map[string]string{"#hk": schema.AttrHistoryKey},
				}})
				if k.owner != "" {
					deltas[k.owner] = deltas[k.owner].Plus(uds.Usage{Bytes: -k.size, History: -k.size})
				}
			}
		}
		n := len(actions)
		deltas.each(func(app, owner string, d uds.Usage) { actions = append(actions, s.usageChange(app, owner, d)) })
		actions = append(actions, s.headPut(key, head, rest, head.last))
		refused, err := s.transact(ctx, op, actions...)
		switch {
		case err != nil:
			return removed, err
		case refused == nil:
			removed += n
			continue
		}
		if !refused.anyConditionFailed() {
			return removed, failed(op, errUnexpectedCancel(refused))
		}
		attempt++ // the item or its history changed: read again
	}
	return removed, &uds.UnavailableError{Op: op, Err: errContended}
}
