package store

import (
	"context"
	"errors"
	"net/http"

	"github.com/udsproject/uds/pkg/uds"
)

// Restore writes a kept version back as its item's current version (w
// holds the version's data and class name): an atomic batch of one
// restore. It updates the item when it is live and creates it again when
// it was deleted or expired, unless w.IfMatch names revisions (then
// uds.ErrNotFound). It decides on one read of the item and its history
// head, and the commit loop decides again when another write got in, so
// that restores sent at once answer as one after another would. created
// reports that it created the item.
func (s *Store) Restore(ctx context.Context, w uds.Write) (it uds.Item, created bool, err error) {
	ops := []uds.BatchOp{{Method: http.MethodPost, Write: w, Restore: true}}
	items, err := s.WriteAtomic(ctx, ops)
	var be *uds.BatchError
	if errors.As(err, &be) {
		err = be.Err
	}
	if err != nil {
		return uds.Item{}, false, err
	}
	return items[0], ops[0].Method == http.MethodPost, nil
}
