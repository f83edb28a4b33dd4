package store

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
)

// Objects is what the store needs of the bucket that holds large values,
// each object named by uds.ObjectName: its app and the upload that brought
// it.
type Objects interface {
	// Stat reports an object's size and content type, uds.ErrUploadPending
	// when it has not arrived.
	Stat(ctx context.Context, name string) (size int64, contentType string, err error)
	// Keep marks an object committed, so that the bucket's rule for
	// abandoned uploads leaves it.
	Keep(ctx context.Context, name string) error
	// Remove deletes an object; one already gone is no error.
	Remove(ctx context.Context, name string) error
}

// WithObjects gives the store the bucket of large values.
func WithObjects(o Objects) Option { return func(s *Store) { s.objects = o } }

// removeObjects deletes the objects that the stored states held, once
// their items (or the reservations of their uploads) are gone: a large
// value's bytes leave the bucket with the item that named them. It runs
// after the removal committed and is best effort: an object whose delete
// fails stays in the bucket (its bytes were released with the item, so no
// usage drifts) and the failure is logged.
func (s *Store) removeObjects(ctx context.Context, states ...map[string]types.AttributeValue) {
	if s.objects == nil {
		return
	}
	for _, st := range states {
		for _, attr := range []string{schema.AttrDataObject, schema.AttrPendingObject} {
			if id := str(st, attr); id != "" {
				if err := s.objects.Remove(ctx, id); err != nil {
					slog.Default().WarnContext(ctx, "remove a large value's object", slog.String("upload", id), slog.String("cause", err.Error()))
				}
			}
		}
	}
}
