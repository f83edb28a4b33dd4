package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// seedTable is a source table given to the run.
type seedTable struct {
	family family
	name   string
}

// seedRun is one run of a seed-000 pass.
type seedRun struct {
	o        Seed000Options
	src      Source
	st       *store.Store
	tables   []seedTable
	byUser   map[family]bool
	m        *mapper
	limit    *limiter
	progress *progress

	// mu guards cp, the reports and the progress.
	mu sync.Mutex
	cp *seedCheckpoint
}

// Seed000 migrates seed 000's tables into UDS. It can be interrupted at
// any point (ctx, a crash) and run again with the same checkpoint file to
// continue; a run after a finished pass (or without the checkpoint) goes
// through everything again and finds nothing to change.
func Seed000(ctx context.Context, src Source, st *store.Store, o Seed000Options) (Seed000Report, error) {
	r, err := newSeedRun(ctx, src, st, o)
	if err != nil {
		return Seed000Report{}, err
	}
	err = r.run(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress.end()
	return r.report(), err
}

func newSeedRun(ctx context.Context, src Source, st *store.Store, o Seed000Options) (*seedRun, error) {
	if o.Segments <= 0 {
		o.Segments = 4
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Skipped == nil {
		o.Skipped = io.Discard
	}
	if o.Date.IsZero() {
		o.Date = DefaultSeed000Date
	}
	for _, ns := range []string{o.AppNamespace, o.ContentNamespace, o.BehaviorNamespace} {
		if _, err := uds.ParseNamespace(ns); err != nil {
			return nil, err
		}
	}
	if o.Names.Separator == "" {
		return nil, errors.New("the separator of app names and users is empty")
	}
	r := &seedRun{o: o, src: src, st: st, byUser: map[family]bool{}, limit: newLimiter(o.WriteUnits)}
	n := o.Names
	for _, t := range []struct {
		f                    family
		name, hash, rangeKey string
	}{
		{familyApps, o.Tables.Apps, n.App, ""},
		{familyJSON, o.Tables.JSON, n.AppUser, n.Key},
		{familyBlob, o.Tables.Blob, n.AppUser, n.Key},
		{familyBehavior, o.Tables.Behavior, n.User, n.Key},
	} {
		if t.name == "" {
			continue
		}
		has, err := checkTable(ctx, src, t.name, t.hash, t.rangeKey, n.ByUser)
		if err != nil {
			return nil, err
		}
		r.byUser[t.f] = has
		r.tables = append(r.tables, seedTable{t.f, t.name})
	}
	if len(r.tables) == 0 {
		return nil, errors.New("no seed 000 table given: name at least one (apps, appDataJson, appDataBlob, calculatedBehavior)")
	}
	// A dry run starts afresh and leaves the checkpoint alone.
	r.cp = newSeedCheckpoint(o)
	if !o.DryRun {
		r.cp = loadSeedCheckpoint(o)
	}
	r.progress = &progress{w: o.Progress, live: o.Live, start: time.Now(), tables: r.tables}
	return r, nil
}

func (r *seedRun) run(ctx context.Context) error {
	steps := []struct {
		done *bool
		run  func(context.Context) error
	}{
		{&r.cp.Discovered, r.discover},
		{&r.cp.Resolved, r.resolve},
		{&r.cp.Private, r.makePrivate},
		{&r.cp.Copied, r.copy},
		{&r.cp.Complete, r.recompute},
	}
	for _, s := range steps {
		if *s.done {
			continue
		}
		if err := s.run(ctx); err != nil {
			return err
		}
		r.mu.Lock()
		*s.done = true
		err := r.save()
		r.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// save writes the checkpoint (not in a dry run). The caller holds mu.
func (r *seedRun) save() error {
	if r.o.DryRun {
		return nil
	}
	return saveCheckpoint(r.o.Checkpoint, r.cp)
}

// writeLines writes lines to the skipped-records report. The caller holds mu.
func (r *seedRun) writeLines(lines []string) {
	if len(lines) > 0 {
		r.progress.clear()
	}
	for _, l := range lines {
		fmt.Fprintln(r.o.Skipped, l)
	}
}

// line is a report line: what happened, the source table, the record's
// key and why, tab separated (the key is quoted, so it holds no tab).
func line(what, table, key, why string) string {
	return what + "\t" + table + "\t" + key + "\t" + why
}

func (r *seedRun) table(f family) string {
	for _, t := range r.tables {
		if t.family == f {
			return t.name
		}
	}
	return ""
}

// copy reads every data table in parallel segments and writes its records.
func (r *seedRun) copy(ctx context.Context) error {
	r.mu.Lock()
	apps := map[string]target{}
	for name, a := range r.cp.Apps {
		apps[name] = target{App: a.App, Namespace: a.Namespace, Refused: a.Refused}
	}
	r.mu.Unlock()
	r.m = &mapper{names: r.o.Names, apps: apps, date: r.o.Date,
		behavior: target{App: uds.BehaviorApp, Namespace: r.o.BehaviorNamespace}}
	var scans []scan
	for _, t := range r.tables {
		if t.family == familyApps {
			continue
		}
		scans = append(scans, scan{name: "copy " + t.name, in: dynamodb.ScanInput{TableName: aws.String(t.name), ConsistentRead: aws.Bool(true)},
			page: r.copyPage(t)})
	}
	r.progress.say("copying %d tables in %d segments each%s", len(scans), r.o.Segments, dryNote(r.o.DryRun))
	r.progress.phase()
	return r.scanAll(ctx, scans...)
}

// copyPage maps a page's items and writes their records, app by app,
// through the store's Import (in a dry run, PlanImport).
func (r *seedRun) copyPage(t seedTable) func(context.Context, []map[string]types.AttributeValue) (pageDone, error) {
	return func(ctx context.Context, items []map[string]types.AttributeValue) (pageDone, error) {
		var d pageDone
		st := TableStats{Read: len(items)}
		ms := make([]mapped, len(items))
		for i, it := range items {
			ms[i] = r.m.record(t.family, it)
		}
		if t.family == familyBlob && r.table(familyJSON) != "" {
			if err := r.dropShadowed(ctx, items, ms); err != nil {
				return d, err
			}
		}
		if err := r.leaveOutErased(ctx, ms); err != nil {
			return d, err
		}
		byApp := map[string][]int{}
		for i, m := range ms {
			switch {
			case m.skip != "":
				st.Skipped++
				d.lines = append(d.lines, line("skipped", t.name, m.sourceKey, m.skip))
				continue
			case m.compacted:
				st.Compacted++
			}
			byApp[m.rec.App] = append(byApp[m.rec.App], i)
		}
		owners := map[string]bool{}
		for _, app := range sortedKeys(byApp) {
			idx := byApp[app]
			recs := make([]uds.Record, len(idx))
			for j, i := range idx {
				recs[j] = ms[i].rec
			}
			res, err := r.importRecords(ctx, app, recs)
			if err != nil {
				return d, err
			}
			st.Written += res.Imported
			st.Unchanged += res.Skipped
			conflicted := map[int]bool{}
			for _, c := range res.Conflicts {
				conflicted[c.Index] = true
				st.Conflicts++
				d.lines = append(d.lines, line("conflict", t.name, ms[idx[c.Index]].sourceKey,
					fmt.Sprintf("%s/%s/%s of %s holds a different item (version %d), left as it is", c.Key.App, c.Key.Namespace, c.Key.ID, c.Key.Owner, c.Version)))
			}
			for j, rec := range recs {
				if !conflicted[j] {
					owners[app+uds.KeyDelimiter+rec.Owner] = true
				}
			}
		}
		d.apply = func(cp *seedCheckpoint) {
			s := cp.Stats[t.family.String()]
			if s == nil {
				s = &TableStats{}
				cp.Stats[t.family.String()] = s
			}
			s.add(st)
			for k := range owners {
				if _, ok := cp.Owners[k]; !ok {
					cp.Owners[k] = false
				}
			}
		}
		return d, nil
	}
}

// leaveOutErased skips the records of the people whose data an erase
// removes, or holds after: UDS refuses their writes, an import's included,
// and the migration brings in everyone else's.
func (r *seedRun) leaveOutErased(ctx context.Context, ms []mapped) error {
	erasing := map[string]bool{}
	for i := range ms {
		m := &ms[i]
		if m.skip != "" {
			continue
		}
		k := m.rec.App + uds.KeyDelimiter + m.rec.Owner
		refused, seen := erasing[k]
		if !seen {
			var err error
			if refused, err = r.st.Erasing(ctx, m.rec.App, m.rec.Owner); err != nil {
				return err
			}
			erasing[k] = refused
		}
		if refused {
			m.skip = "its owner's data is erased (an erase runs, or holds it after)"
		}
	}
	return nil
}

// importRecords writes one app's records of a page, within the write
// units, or in a dry run says what writing them would do.
func (r *seedRun) importRecords(ctx context.Context, app string, recs []uds.Record) (uds.ImportResult, error) {
	if r.o.DryRun {
		return r.st.PlanImport(ctx, app, recs)
	}
	owners := map[string]bool{}
	for _, rec := range recs {
		owners[rec.Owner] = true
	}
	// A record takes its key, value and subjects, and about 200 bytes of
	// attribute names, dates and numbers.
	size := func(rec uds.Record) int64 {
		n := len(rec.DataKey()) + len(rec.Data) + 3*len(rec.Owner) + 200
		if rec.Binary != nil {
			n += len(rec.Binary.Bytes) + len(rec.Binary.ContentType)
		}
		return int64(n)
	}
	if err := r.limit.wait(ctx, writeUnits(recs, size, len(owners))); err != nil {
		return uds.ImportResult{}, err
	}
	return r.st.Import(ctx, app, recs)
}

// dropShadowed skips the blobs whose key (app, user and key) also holds a
// value in appDataJson that the migration writes: the JSON value wins.
func (r *seedRun) dropShadowed(ctx context.Context, items []map[string]types.AttributeValue, ms []mapped) error {
	n := r.o.Names
	var keys []map[string]types.AttributeValue
	for i, it := range items {
		if ms[i].skip == "" {
			keys = append(keys, map[string]types.AttributeValue{n.AppUser: it[n.AppUser], n.Key: it[n.Key]})
		}
	}
	jsonTable := r.table(familyJSON)
	found, err := getAll(ctx, r.src, jsonTable, keys)
	if err != nil {
		return err
	}
	held := map[string]bool{}
	for _, it := range found {
		if r.m.record(familyJSON, it).skip == "" {
			held[attrS(it, n.AppUser)+"\x00"+attrS(it, n.Key)] = true
		}
	}
	for i, it := range items {
		if ms[i].skip == "" && held[attrS(it, n.AppUser)+"\x00"+attrS(it, n.Key)] {
			ms[i].skip = "the key also holds a JSON value (in " + jsonTable + "), which is migrated instead"
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// recompute rebuilds the usage of every owner a record landed for, and
// notes those over a limit.
func (r *seedRun) recompute(ctx context.Context) error {
	if r.o.DryRun {
		return nil
	}
	r.mu.Lock()
	var owners []string
	for k, done := range r.cp.Owners {
		if !done {
			owners = append(owners, k)
		}
	}
	names := map[string]string{}
	for name, a := range r.cp.Apps {
		names[a.App] = name
	}
	r.mu.Unlock()
	sort.Strings(owners)
	r.progress.say("recomputing the usage of %d owners", len(owners))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan string)
	var wg sync.WaitGroup
	for range r.o.Segments {
		wg.Go(func() {
			for k := range work {
				if err := r.recomputeOwner(ctx, k, names); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	for _, k := range owners {
		select {
		case work <- k:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}

func (r *seedRun) recomputeOwner(ctx context.Context, k string, names map[string]string) error {
	app, owner, _ := strings.Cut(k, uds.KeyDelimiter)
	rc, err := r.st.Recompute(ctx, app, owner)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cp.Owners[k] = true
	if rc.Drift != (uds.Usage{}) {
		r.cp.Drifted++
		r.progress.say("usage of %s in app %s corrected by %+v (applied: %v)", owner, app, rc.Drift, rc.Applied)
	}
	q := rc.Quota
	if q.Limits.Items > 0 && q.Used.Items > q.Limits.Items || q.Limits.Bytes > 0 && q.Used.Bytes > q.Limits.Bytes {
		o := OverLimit{App: app, Name: names[app], Owner: owner, Used: q.Used, Limit: q.Limits}
		r.cp.OverLimit = append(r.cp.OverLimit, o)
		r.progress.say("over a limit: %s in app %s%s: %s", owner, app, nameNote(o.Name), overBy(o))
	}
	return r.save()
}
