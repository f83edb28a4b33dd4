package store

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// Objects is what the store needs of the bucket that holds large values,
// each object named by uds.ObjectName (an upload's, where its presigned
// POST sends it) or uds.ValueName (a committed value's, where no POST
// reaches).
type Objects interface {
	// Stat reports an object's size and content type, uds.ErrUploadPending
	// when it has not arrived.
	Stat(ctx context.Context, name string) (size int64, contentType string, err error)
	// Copy copies the object from to the name to, without the upload's
	// pending tag, unless to holds an object already (an earlier
	// attempt's copy); uds.ErrUploadPending when from has not arrived.
	Copy(ctx context.Context, from, to string) error
	// Remove deletes an object; one already gone is no error.
	Remove(ctx context.Context, name string) error
	// RemoveUnclaimed deletes an upload's object that no reservation
	// awaits, unless it may be the value of an item committed before
	// commits copied values (it lost its pending tag).
	RemoveUnclaimed(ctx context.Context, name string) error
}

// WithObjects gives the store the bucket of large values.
func WithObjects(o Objects) Option { return func(s *Store) { s.objects = o } }

// removeObjects deletes the objects that the stored states held, once
// their items (or the reservations of their uploads) are gone: a large
// value's bytes leave the bucket with the item that named them. A
// reservation names its upload's object, and its commit may have copied
// it already (a commit that failed or was cut short after the copy), so
// the copy goes with it. It runs after the removal committed and is best
// effort: an object whose delete fails stays in the bucket (its bytes
// were released with the item, so no usage drifts) and the failure is
// logged.
func (s *Store) removeObjects(ctx context.Context, states ...map[string]types.AttributeValue) {
	if s.objects == nil {
		return
	}
	for _, st := range states {
		s.removeObject(ctx, str(st, schema.AttrDataObject))
		pending := str(st, schema.AttrPendingObject)
		s.removeObject(ctx, pending)
		if app, id, ok := uds.ParseObjectName(pending); ok {
			s.removeObject(ctx, uds.ValueName(app, id))
		}
	}
}

// removeObject deletes the named object, if any name is given, logging a
// failure (see removeObjects).
func (s *Store) removeObject(ctx context.Context, name string) {
	if name == "" {
		return
	}
	if err := s.objects.Remove(ctx, name); err != nil {
		slog.Default().WarnContext(ctx, "remove a large value's object", slog.String("object", name), slog.String("cause", err.Error()))
	}
}

// planObjects releases the objects of the large values a plan's writes
// replace or remove, once it commits: an object cannot share the
// transaction. A value that history keeps stays with its version.
func (s *Store) planObjects(_ context.Context, p *plan) error {
	var gone []map[string]types.AttributeValue
	for _, c := range p.changes {
		if c.old != nil && !c.kept() {
			gone = append(gone, c.old.av)
		}
	}
	if len(gone) > 0 {
		p.afterCommit(func(ctx context.Context) { s.removeObjects(ctx, gone...) })
	}
	return nil
}
