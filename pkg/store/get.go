package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/udsproject/uds/pkg/uds"
)

// Get reads one item, strongly consistent so a client reads its own writes.
func (s *Store) Get(ctx context.Context, key uds.Key) (uds.Item, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table(key)),
		Key:            keyAV(key),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return uds.Item{}, fmt.Errorf("get %s: %w", key.DataKey(), err)
	}
	if out.Item == nil {
		return uds.Item{}, uds.ErrNotFound
	}
	return decodeItem(key, out.Item)
}
