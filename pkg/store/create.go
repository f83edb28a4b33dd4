package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Create stores a new item; uds.ErrConflict if the key is taken.
func (s *Store) Create(ctx context.Context, w uds.Write) (uds.Item, error) {
	v, err := encodeValue(&w)
	if err != nil {
		return uds.Item{}, err
	}
	now := writeTime()
	it := uds.Item{
		Key: w.Key, Data: w.Data, ClassName: w.ClassName,
		CreatedDate: now, CreatedBy: w.Subject, UpdatedDate: now, UpdatedBy: w.Subject,
		Version: 1,
	}
	// Reserve the owner's usage first: a crash after it over-counts, which
	// recompute repairs; a data write before it could pass the limit.
	charge := uds.Usage{Bytes: v.size, Items: 1}
	if err := s.reserve(ctx, w.App, w.Subject, charge); err != nil {
		return uds.Item{}, err
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table(w.Key)),
		Item:                     encodeItem(&it, v),
		ConditionExpression:      aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#k": schema.AttrDataKey},
	})
	if isConditionFailed(err) {
		return uds.Item{}, errors.Join(uds.ErrConflict, s.adjust(ctx, w.App, w.Subject, charge.Negate()))
	}
	if err != nil {
		// Whether the write happened is unknown, so the reservation stays:
		// over-counting is the safe side.
		return uds.Item{}, fmt.Errorf("create %s: %w", w.DataKey(), wrapSizeError(err))
	}
	return it, nil
}

// isConditionFailed reports whether a write was refused by its condition.
func isConditionFailed(err error) bool {
	var ccf *types.ConditionalCheckFailedException
	return asCCF(err, &ccf)
}

// asCCF finds a conditional check failure in err, with the old item
// DynamoDB returns when asked to.
func asCCF(err error, target **types.ConditionalCheckFailedException) bool {
	return err != nil && errors.As(err, target)
}

// wrapSizeError turns DynamoDB's refusal of an oversized item into
// uds.ErrTooLarge. encodeValue bounds sizes from above, so this is a
// backstop, not the rule.
func wrapSizeError(err error) error {
	var apiErr interface{ ErrorMessage() string }
	if errors.As(err, &apiErr) && strings.Contains(strings.ToLower(apiErr.ErrorMessage()), "item size") {
		return &uds.TooLargeError{Reason: "the item exceeds DynamoDB's item size limit"}
	}
	return err
}
