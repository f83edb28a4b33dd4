// Package migrate adopts a seed deployment's data into UDS: it adds the
// owner index to the data tables, counts every item written before UDS
// (owner, size, schema version, and its owner's usage, in one transaction
// per batch), marks every namespace that holds an item in the catalogue of
// what holds data (data written before the catalogue, by a seed
// deployment or an earlier release), and then recomputes the usage of
// every owner it touched.
// It is resumable from a checkpoint file and idempotent: a second run finds
// nothing left to do. cmd/uds-migrate is its command line.
package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// Options configure a run.
type Options struct {
	Tables schema.TableNames
	// Segments is how many parallel scan segments read each table.
	Segments int
	// WriteUnits bounds the write capacity the backfill consumes per
	// second, so that it leaves the tables' capacity to the service.
	WriteUnits float64
	// DefaultOwner owns the items that name no creator.
	DefaultOwner string
	// Checkpoint is the file that records progress; a run resumes from it.
	Checkpoint string
	// DryRun reports what would change and changes nothing.
	DryRun bool
	// PollEvery is how often the state of a new index is checked.
	PollEvery time.Duration
	// Progress receives a line per scanned page and per step.
	Progress io.Writer
}

// Admin is what the migration needs of a DynamoDB client beside the store.
type Admin = store.IndexAdmin

// OwnerResult is the usage of one owner the migration touched, after it.
type OwnerResult struct {
	App, Owner string
	Usage      uds.Usage
	Drift      uds.Usage
	Applied    bool
}

// Report says what a run did (or, in a dry run, would do).
type Report struct {
	IndexesCreated []string
	// Legacy is what the scans found: items and bytes not yet counted.
	Legacy  uds.Usage
	Adopted int
	// Erased counts items removed rather than adopted: their owner's data
	// an erase removes, or holds after (store.AdoptLegacy).
	Erased int
	// Changed counts items that changed while the migration ran; their
	// writer counted them, or the next run will.
	Changed int
	// Namespaces counts the namespaces marked in the catalogue of what
	// holds data (in a dry run, that would be).
	Namespaces int
	Owners     []OwnerResult
}

// checkpoint is the progress of a run, saved after every page.
type checkpoint struct {
	Segments int `json:"segments"`
	// Positions holds, per table and segment, where the scan stopped;
	// Done marks finished segments.
	Positions map[string][]store.ScanPosition `json:"positions"`
	Done      map[string][]bool               `json:"done"`
	// Touched lists the owners whose usage grew, as "app|owner" (an app
	// never holds the delimiter; a subject may).
	Touched map[string]bool `json:"touched"`
	// Held lists the namespaces marked in the catalogue, as
	// "app|namespace", so that each is marked once.
	Held     map[string]bool `json:"held"`
	Legacy   uds.Usage       `json:"legacy"`
	Adopted  int             `json:"adopted"`
	Erased   int             `json:"erased"`
	Changed  int             `json:"changed"`
	Complete bool            `json:"complete"`
}

// Run migrates. It can be interrupted at any point (ctx, a crash) and run
// again with the same checkpoint file to continue.
func Run(ctx context.Context, admin Admin, st *store.Store, o Options) (Report, error) {
	if o.Segments <= 0 {
		o.Segments = 4
	}
	if o.PollEvery <= 0 {
		o.PollEvery = 10 * time.Second
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	var rep Report
	dataTables := []struct {
		name  string
		table schema.Table
	}{{o.Tables.Data, schema.Data}, {o.Tables.List, schema.List}}

	// 1. The owner index, without which recompute cannot read an owner's
	// items.
	for _, t := range dataTables {
		added, err := store.AddOwnerIndex(ctx, admin, t.name, t.table, o.DryRun)
		if err != nil {
			return rep, err
		}
		if added {
			rep.IndexesCreated = append(rep.IndexesCreated, t.name)
			fmt.Fprintf(o.Progress, "%s: adding the owner index%s\n", t.name, dryNote(o.DryRun))
		}
	}

	// 2. Count the legacy items, segment by segment, from the checkpoint.
	cp := loadCheckpoint(o)
	limit := newLimiter(o.WriteUnits)
	var mu sync.Mutex
	save := func() error {
		if o.DryRun {
			return nil
		}
		return saveCheckpoint(o.Checkpoint, cp)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(dataTables)*o.Segments)
	for _, t := range dataTables {
		for seg := range o.Segments {
			if cp.Done[t.name][seg] {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- backfillSegment(ctx, st, o, t.name, seg, cp, &mu, save, limit)
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return reportOf(rep, cp), err
		}
	}
	cp.Complete = true
	if err := save(); err != nil {
		return reportOf(rep, cp), err
	}
	rep = reportOf(rep, cp)
	fmt.Fprintf(o.Progress, "backfill done: %d legacy items (%d bytes), %d adopted, %d removed as their owner's data is erased, %d changed meanwhile; %d namespaces holding data marked%s\n",
		cp.Legacy.Items, cp.Legacy.Bytes, cp.Adopted, cp.Erased, cp.Changed, len(cp.Held), dryNote(o.DryRun))
	if o.DryRun {
		return rep, nil
	}

	// 3. Wait for the index, then check every touched owner's usage.
	for _, t := range dataTables {
		if err := waitForIndex(ctx, admin, t.name, o); err != nil {
			return rep, err
		}
	}
	owners := make([]string, 0, len(cp.Touched))
	for k := range cp.Touched {
		owners = append(owners, k)
	}
	sort.Strings(owners)
	for _, k := range owners {
		app, owner, _ := strings.Cut(k, uds.KeyDelimiter)
		ow := OwnerResult{App: app, Owner: owner}
		rc, err := st.Recompute(ctx, ow.App, ow.Owner)
		if err != nil {
			return rep, err
		}
		ow.Usage, ow.Drift, ow.Applied = rc.Quota.Used, rc.Drift, rc.Applied
		rep.Owners = append(rep.Owners, ow)
		fmt.Fprintf(o.Progress, "usage of %s in %s: %d items, %d bytes, drift %d/%d\n", ow.Owner, ow.App, ow.Usage.Items, ow.Usage.Bytes, ow.Drift.Items, ow.Drift.Bytes)
	}
	return rep, nil
}

// backfillSegment scans one segment of one table from its checkpointed
// position and adopts the legacy items of each page.
func backfillSegment(ctx context.Context, st *store.Store, o Options, table string, seg int, cp *checkpoint, mu *sync.Mutex, save func() error, limit *limiter) error {
	mu.Lock()
	pos := cp.Positions[table][seg]
	mu.Unlock()
	for pages := 1; ; pages++ {
		items, namespaces, next, err := st.ScanLegacy(ctx, table, seg, o.Segments, pos, o.DefaultOwner)
		if err != nil {
			return err
		}
		if err := markHeld(ctx, st, o, namespaces, cp, mu); err != nil {
			return err
		}
		var found uds.Usage
		touched := map[string]bool{}
		for _, it := range items {
			found.Items++
			found.Bytes += it.Size
			touched[it.App+uds.KeyDelimiter+it.Owner] = true
		}
		var done store.Adoption
		if !o.DryRun && len(items) > 0 {
			if err := limit.wait(ctx, writeUnits(items, func(it store.LegacyItem) int64 { return it.Size }, len(touched))); err != nil {
				return err
			}
			if done, err = adoptPage(ctx, st, table, items); err != nil {
				return err
			}
		}
		mu.Lock()
		cp.Legacy.Items += found.Items
		cp.Legacy.Bytes += found.Bytes
		cp.Adopted += done.Adopted
		cp.Erased += done.Erased
		cp.Changed += done.Changed
		for k := range touched {
			cp.Touched[k] = true
		}
		cp.Positions[table][seg] = next
		cp.Done[table][seg] = next == nil
		err = save()
		fmt.Fprintf(o.Progress, "%s segment %d/%d page %d: %d legacy items, %d adopted, %d removed (erased owners), %d changed; in all %d adopted%s\n",
			table, seg+1, o.Segments, pages, len(items), done.Adopted, done.Erased, done.Changed, cp.Adopted, dryNote(o.DryRun))
		mu.Unlock()
		if err != nil {
			return err
		}
		if next == nil {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		pos = next
	}
}

// markHeld marks in the catalogue the namespaces a page holds items of
// that this run has not marked yet, before the page's checkpoint is
// saved: data written before the catalogue is listed once a run has
// passed it. A mark made twice (by a run resumed, or beside a write that
// marks it) keeps its first instant.
func markHeld(ctx context.Context, st *store.Store, o Options, namespaces []store.HeldNamespace, cp *checkpoint, mu *sync.Mutex) error {
	for _, ns := range namespaces {
		k := ns.App + uds.KeyDelimiter + ns.Namespace
		mu.Lock()
		done := cp.Held[k]
		mu.Unlock()
		if done {
			continue
		}
		if !o.DryRun {
			if err := st.MarkHeld(ctx, ns); err != nil {
				return err
			}
		}
		mu.Lock()
		cp.Held[k] = true
		mu.Unlock()
	}
	return nil
}

// pageGrace bounds how long a stopped run may take to finish the page it
// is adopting.
const pageGrace = 2 * time.Minute

// adoptPage adopts a page's items even when ctx ends meanwhile (Ctrl-C):
// the page finishes and its checkpoint is saved, so the totals stay exact
// and the next run starts after it.
func adoptPage(ctx context.Context, st *store.Store, table string, items []store.LegacyItem) (store.Adoption, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pageGrace)
	defer cancel()
	return st.AdoptLegacy(ctx, table, items)
}

// writeUnits estimates what writing items of the given sizes in
// transactions costs: a transaction writes each item (1 unit per KB) and
// each owner's usage record twice.
func writeUnits[T any](items []T, size func(T) int64, owners int) float64 {
	units := 0.0
	for _, it := range items {
		units += 2 * float64(1+size(it)/1024)
	}
	return units + 4*float64(owners)
}

func waitForIndex(ctx context.Context, admin Admin, table string, o Options) error {
	for {
		state, err := store.OwnerIndexState(ctx, admin, table)
		if err != nil {
			return err
		}
		if state == store.IndexActive {
			return nil
		}
		fmt.Fprintf(o.Progress, "%s: waiting for the owner index (%s)\n", table, state)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.PollEvery):
		}
	}
}

func reportOf(rep Report, cp *checkpoint) Report {
	rep.Legacy, rep.Adopted, rep.Erased, rep.Changed, rep.Namespaces = cp.Legacy, cp.Adopted, cp.Erased, cp.Changed, len(cp.Held)
	return rep
}

func dryNote(dry bool) string {
	if dry {
		return " (dry run: nothing written)"
	}
	return ""
}

// loadCheckpoint resumes an unfinished run; a finished or missing one, or
// one made with another number of segments, starts a new pass.
func loadCheckpoint(o Options) *checkpoint {
	var cp checkpoint
	if b, err := os.ReadFile(o.Checkpoint); err == nil && json.Unmarshal(b, &cp) == nil && !cp.Complete && cp.Segments == o.Segments {
		if cp.Held == nil {
			// A checkpoint of a release before the catalogue.
			cp.Held = map[string]bool{}
		}
		return &cp
	}
	cp = checkpoint{Segments: o.Segments, Positions: map[string][]store.ScanPosition{}, Done: map[string][]bool{}, Touched: map[string]bool{}, Held: map[string]bool{}}
	for _, t := range []string{o.Tables.Data, o.Tables.List} {
		cp.Positions[t] = make([]store.ScanPosition, o.Segments)
		cp.Done[t] = make([]bool, o.Segments)
	}
	return &cp
}

// saveCheckpoint writes the checkpoint through a temporary file, so a
// crash leaves the old one or the new one, never half of one.
func saveCheckpoint(path string, cp any) error {
	b, err := json.MarshalIndent(cp, "", " ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// limiter spaces work out to a rate of units per second; zero is no limit.
type limiter struct {
	mu   sync.Mutex
	rate float64
	next time.Time
}

func newLimiter(rate float64) *limiter { return &limiter{rate: rate} }

func (l *limiter) wait(ctx context.Context, units float64) error {
	if l.rate <= 0 {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	at := l.next
	l.next = l.next.Add(time.Duration(units / l.rate * float64(time.Second)))
	l.mu.Unlock()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(at)):
		return nil
	}
}
