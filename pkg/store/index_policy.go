package store

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// A namespace's indexes live in its policy record as JSON text: the
// declarations (schema.AttrIndexes) and the build their last change left
// (schema.AttrIndexBuild). They are small (at most uds.MaxIndexes), read
// with the policy, and changed as a whole.

type storedIndex struct {
	Name  string        `json:"name"`
	Path  string        `json:"path"`
	Type  uds.IndexType `json:"type"`
	ID    string        `json:"id"`
	Ready bool          `json:"ready,omitempty"`
	Done  int64         `json:"done,omitempty"`
}

type storedBuild struct {
	SettlesAt int64    `json:"settlesAt"`
	Dropped   []string `json:"dropped,omitempty"`
	Removed   int64    `json:"removed,omitempty"`
	Position  string   `json:"position,omitempty"`
}

// decodeIndexes reads the indexes and build of a policy record.
func decodeIndexes(av map[string]types.AttributeValue, p *uds.Policy) {
	var ixs []storedIndex
	if json.Unmarshal([]byte(str(av, schema.AttrIndexes)), &ixs) == nil {
		for _, ix := range ixs {
			p.Indexes = append(p.Indexes, uds.Index(ix))
		}
	}
	var b storedBuild
	if json.Unmarshal([]byte(str(av, schema.AttrIndexBuild)), &b) == nil {
		p.IndexBuild = &uds.IndexBuild{SettlesAt: time.UnixMilli(b.SettlesAt).UTC(), Dropped: b.Dropped,
			Removed: b.Removed, Position: b.Position}
	}
}

// encodeIndexes is the text of a policy's indexes and build: empty for
// none, which removes the attribute.
func encodeIndexes(p uds.Policy) (indexes, build string) {
	if len(p.Indexes) > 0 {
		ixs := make([]storedIndex, len(p.Indexes))
		for i, ix := range p.Indexes {
			ixs[i] = storedIndex(ix)
		}
		b, _ := json.Marshal(ixs)
		indexes = string(b)
	}
	if b := p.IndexBuild; b != nil {
		t, _ := json.Marshal(storedBuild{SettlesAt: b.SettlesAt.UnixMilli(), Dropped: b.Dropped, Removed: b.Removed, Position: b.Position})
		build = string(t)
	}
	return indexes, build
}

// declareIndexes is the indexes and build a policy change leaves when
// current's indexes become those requested. A declaration that keeps an
// index's name, path and type keeps the index (and its entries); any other
// is a new index with a new ID, built from the items stored, and an index
// no longer declared is dropped and its entries removed. A change of the
// indexes starts the build over from the beginning, once the change has
// settled: until then a write may still commit under the policy it read
// before.
func (s *Store) declareIndexes(current uds.Policy, requested []uds.Index, now time.Time) ([]uds.Index, *uds.IndexBuild) {
	var out []uds.Index
	changed := false
	for _, r := range requested {
		i := slices.IndexFunc(current.Indexes, func(c uds.Index) bool { return c.Same(r) })
		if i >= 0 {
			out = append(out, current.Indexes[i])
			continue
		}
		out = append(out, uds.Index{Name: r.Name, Path: r.Path, Type: r.Type,
			ID: r.Name + "." + strconv.FormatInt(current.Version+1, 36)})
		changed = true
	}
	var dropped []string
	for _, c := range current.Indexes {
		if !slices.ContainsFunc(out, func(o uds.Index) bool { return o.ID == c.ID }) {
			dropped = append(dropped, c.ID)
			changed = true
		}
	}
	if !changed {
		return out, current.IndexBuild
	}
	b := &uds.IndexBuild{SettlesAt: now.Add(s.policySettle), Dropped: dropped}
	if current.IndexBuild != nil {
		b.Dropped = append(slices.Clone(current.IndexBuild.Dropped), dropped...)
		b.Removed = current.IndexBuild.Removed
	}
	for i := range out {
		if !out[i].Ready {
			out[i].Done = 0
		}
	}
	return out, b
}

// sameIndexes reports whether two policies declare the same indexes.
func sameIndexes(a, b uds.Policy) bool {
	return slices.Equal(a.Indexes, b.Indexes) && a.IndexBuild == b.IndexBuild
}
