package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Delete removes one item. Deleting nothing succeeds (DELETE is
// idempotent) unless ifMatch is set: then the item must exist at one of the
// named revisions, else uds.ErrPrecondition.
func (s *Store) Delete(ctx context.Context, key uds.Key, ifMatch uds.Precondition) error {
	in := &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table(key)),
		Key:       keyAV(key),
		// The old item names the owner and size to release; returning it
		// costs no extra capacity.
		ReturnValues: types.ReturnValueAllOld,
	}
	if ifMatch.IsSet() {
		names := map[string]string{"#k": schema.AttrDataKey}
		values := map[string]types.AttributeValue{}
		in.ConditionExpression = aws.String("attribute_exists(#k)" + ifMatchCondition(ifMatch, names, values))
		in.ExpressionAttributeNames = names
		if len(values) > 0 {
			in.ExpressionAttributeValues = values
		}
	}
	out, err := s.client.DeleteItem(ctx, in)
	if isConditionFailed(err) {
		return uds.ErrPrecondition
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", key.DataKey(), err)
	}
	if who, counted := owner(key.App, out.Attributes); counted {
		return s.adjust(ctx, key.App, who, uds.Usage{Bytes: -num(out.Attributes, schema.AttrItemSize), Items: -1})
	}
	return nil
}
