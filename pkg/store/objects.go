package store

import (
	"context"
	"errors"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
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

// NewValueName names a new object of app's large values, where a restore
// copies a kept version's value (uds.Binary.From).
func NewValueName(app string) string { return uds.ValueName(app, newToken()) }

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
	for _, name := range objectsOf(states...) {
		s.removeObject(ctx, name)
	}
}

// objectsOf names the objects that the stored states hold: a large
// value's, and an upload's with the copy its commit may have made.
func objectsOf(states ...map[string]types.AttributeValue) []string {
	var names []string
	for _, st := range states {
		if name := str(st, schema.AttrDataObject); name != "" {
			names = append(names, name)
		}
		pending := str(st, schema.AttrPendingObject)
		if pending != "" {
			names = append(names, pending)
		}
		if app, id, ok := uds.ParseObjectName(pending); ok {
			names = append(names, uds.ValueName(app, id))
		}
	}
	return names
}

// removeUnnamed removes the objects a commit left named by nothing, for a
// write outside the commit loop (whose plans remove them after the commit,
// settle): to the end when the request is cancelled meanwhile, as the
// commit may come back just as the request ends, and an object left then
// would stay in the bucket for good.
func (s *Store) removeUnnamed(ctx context.Context, names ...string) {
	if s.objects == nil || len(names) == 0 {
		return
	}
	settle(ctx, func(ctx context.Context) {
		for _, name := range names {
			s.removeObject(ctx, name)
		}
	})
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

// planObjects keeps each large value's object named by exactly one
// record, the item or one kept version. The objects of the values a
// plan's writes replace or remove go once it commits (an object cannot
// share the transaction); a value that history keeps stays with its
// version, and the objects of the versions history prunes go with them.
// A restore of a large version copies the version's object to the name
// its write gives the item, before the commit, and removes the copy if
// the write ends without committing.
func (s *Store) planObjects(ctx context.Context, p *plan) error {
	var gone []map[string]types.AttributeValue
	var pruned []string
	for _, c := range p.changes {
		if err := s.copyRestored(ctx, p, c); err != nil {
			return err
		}
		if c.old != nil && !c.kept() {
			gone = append(gone, c.old.av)
		}
		pruned = append(pruned, s.keptObjects(ctx, c.key, c.head, c.pruned)...)
	}
	if len(gone) > 0 || len(pruned) > 0 {
		p.afterCommit(func(ctx context.Context) {
			s.removeObjects(ctx, gone...)
			for _, name := range pruned {
				s.removeObject(ctx, name)
			}
		})
	}
	return nil
}

// copyRestored copies the object of the large version a change restores
// (uds.Binary.From) to the object its item will name. The copy is made
// once, whatever the attempts (Objects.Copy); a version whose object is
// gone has been dropped or pruned since it was read, and is not kept.
func (s *Store) copyRestored(ctx context.Context, p *plan, c *change) error {
	if c.kind == removeItem || c.w == nil || c.w.Binary == nil || c.w.Binary.From == "" {
		return nil
	}
	if s.objects == nil {
		return uds.ErrNoBucket
	}
	to := c.w.Binary.Object
	p.onAbandon(func(ctx context.Context) { s.removeObject(ctx, to) })
	err := s.objects.Copy(ctx, c.w.Binary.From, to)
	if errors.Is(err, uds.ErrUploadPending) {
		return uds.ErrNotFound
	}
	return err
}

// keptObjects names the objects of the kept versions gone of key's
// history, whose head was read as head. The head names them, except for
// versions kept before heads named objects (below head.objectsFrom):
// their entries are read, before they go. A failed read is logged and
// its objects stay in the bucket, as a failed removal's do.
func (s *Store) keptObjects(ctx context.Context, key uds.Key, head historyHead, gone []keptVersion) []string {
	if s.objects == nil || len(gone) == 0 {
		return nil
	}
	var names []string
	ka := types.KeysAndAttributes{
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#do"),
		ExpressionAttributeNames: map[string]string{"#do": schema.AttrDataObject},
	}
	for _, k := range gone {
		switch {
		case k.object != "":
			names = append(names, k.object)
		case !k.deleted && k.version < head.objectsFrom:
			ka.Keys = append(ka.Keys, historyEntryKey(key, k.version))
		}
	}
	if len(ka.Keys) == 0 {
		return names
	}
	in := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{s.tables.History: ka}}
	err := s.getAll(ctx, "read the objects of versions of "+key.DataKey(), in, func(_ string, it map[string]types.AttributeValue) {
		if name := str(it, schema.AttrDataObject); name != "" {
			names = append(names, name)
		}
	})
	if err != nil {
		slog.Default().WarnContext(ctx, "read the objects of removed versions", slog.String("item", key.DataKey()), slog.String("cause", err.Error()))
	}
	return names
}
