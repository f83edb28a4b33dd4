package store_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// PlanImport says what Import then does: a free key is imported, one
// holding the same item skipped, one holding another item a conflict, an
// expired record expired; and it writes nothing.
func TestPlanImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
	created := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	record := func(id, data string, expires time.Time) uds.Record {
		return uds.Record{Owner: "alice", Item: uds.Item{Key: key(t, "plan", id), Data: json.RawMessage(data),
			CreatedDate: created, CreatedBy: "alice", UpdatedDate: created, UpdatedBy: "alice", Version: 1, ExpiresAt: expires}}
	}
	if res, err := s.Import(ctx, app, []uds.Record{record("same", `1`, time.Time{}), record("other", `1`, time.Time{})}); err != nil || res.Imported != 2 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	records := []uds.Record{
		record("free", `1`, time.Time{}),
		record("same", `1`, time.Time{}),
		record("other", `2`, time.Time{}),
		record("gone", `1`, time.Now().Add(-time.Hour)),
	}
	plan, err := s.PlanImport(ctx, app, records)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Imported != 1 || plan.Skipped != 1 || plan.Expired != 1 || len(plan.Conflicts) != 1 || plan.Conflicts[0].Index != 2 || plan.Conflicts[0].Version != 1 {
		t.Errorf("plan %+v, want 1 imported, 1 skipped, 1 expired and record 2 a conflict with version 1", plan)
	}
	if _, err := s.Get(ctx, records[0].Key); !errors.Is(err, uds.ErrNotFound) {
		t.Errorf("the plan wrote: %v", err)
	}
	res, err := s.Import(ctx, app, records)
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported != plan.Imported || res.Skipped != plan.Skipped || res.Expired != plan.Expired || len(res.Conflicts) != 1 || res.Conflicts[0] != plan.Conflicts[0] {
		t.Errorf("import %+v, the plan said %+v", res, plan)
	}
}

// CheckRecord refuses, alone, a record Import would refuse a whole request
// for: one that does not fit an item.
func TestCheckRecord(t *testing.T) {
	t.Parallel()
	noise := make([]byte, 450<<10)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(noise)
	for _, c := range []struct {
		name    string
		data    string
		binary  int
		refused bool
	}{
		{name: "small JSON", data: `1`},
		{name: "JSON stored compressed", data: `"` + strings.Repeat("x", 900<<10) + `"`},
		{name: "JSON that does not compress enough", data: `"` + base64.StdEncoding.EncodeToString(noise) + `"`, refused: true},
		{name: "binary at the inline limit", binary: uds.MaxInlineBytes},
		{name: "binary over the item", binary: 420 << 10, refused: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := uds.Record{Owner: "alice", Item: uds.Item{Key: key(t, "ns", "id"), Data: json.RawMessage(c.data), CreatedBy: "alice", UpdatedBy: "alice", Version: 1}}
			if c.binary > 0 {
				rec.Data, rec.Binary = nil, &uds.Binary{ContentType: "image/png", Bytes: make([]byte, c.binary), Size: int64(c.binary)}
			}
			err := store.CheckRecord(&rec)
			if c.refused != errors.Is(err, uds.ErrTooLarge) {
				t.Errorf("CheckRecord: %v, want refused: %v", err, c.refused)
			}
		})
	}
}
