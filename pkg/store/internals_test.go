package store

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/uds"
)

// RemoveAsRead removes an item the way delete-all does, from the state it
// was read in: the tests hand it a stale one, as a concurrent writer would
// leave it.
func (s *Store) RemoveAsRead(ctx context.Context, app string, key uds.Key, state map[string]types.AttributeValue) (int, error) {
	return s.removeEntries(ctx, "remove as read", app, []listEntry{{key: key, state: state}})
}

// MaxReclaim is how many expired items one reclaim removes at most.
const MaxReclaim = maxReclaim
