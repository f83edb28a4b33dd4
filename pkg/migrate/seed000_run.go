package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
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

// TableStats counts what a pass did with the records of one source table
// (in a dry run, what it would do): records read, written, already there
// and identical (unchanged), left alone because a different item holds
// their key (conflicts), skipped as UDS cannot hold them, and JSON texts
// stored without their insignificant white space (compacted).
type TableStats struct {
	Read      int `json:"read"`
	Written   int `json:"written"`
	Unchanged int `json:"unchanged"`
	Conflicts int `json:"conflicts"`
	Skipped   int `json:"skipped"`
	Compacted int `json:"compacted"`
}

func (s *TableStats) add(o TableStats) {
	s.Read += o.Read
	s.Written += o.Written
	s.Unchanged += o.Unchanged
	s.Conflicts += o.Conflicts
	s.Skipped += o.Skipped
	s.Compacted += o.Compacted
}

// TableReport is one source table's counts.
type TableReport struct {
	Family, Table string
	TableStats
}

// AppsReport says what became of the seed's app names: found (in the
// apps table or the data tables), registered by the pass, already
// registered, refused by the registry; and the records of the apps table
// that UDS itself wrote, ignored.
type AppsReport struct {
	Found, Registered, Known, Refused, Ignored int
}

// OverLimit is an owner whose usage, recomputed after the copy, is over
// a limit in effect. Nothing is cut: the owner can delete but not grow.
type OverLimit struct {
	App   string     `json:"app"`
	Name  string     `json:"name,omitempty"`
	Owner string     `json:"owner"`
	Used  uds.Usage  `json:"used"`
	Limit uds.Limits `json:"limit"`
}

// Seed000Report says what a pass did (or, in a dry run, would do).
type Seed000Report struct {
	DryRun bool
	Tables []TableReport
	Apps   AppsReport
	// Private counts the namespaces made private.
	Private int
	// Owners counts the owners whose usage was recomputed, Drifted those
	// whose recorded usage differed from their items.
	Owners, Drifted int
	OverLimit       []OverLimit
}

// Changed reports whether the pass changed anything: a record written, an
// app registered, a namespace made private or a usage corrected.
func (r Seed000Report) Changed() bool {
	written := 0
	for _, t := range r.Tables {
		written += t.Written
	}
	return written > 0 || r.Apps.Registered > 0 || r.Private > 0 || r.Drifted > 0
}

// WriteSummary prints the report for an operator.
func (r Seed000Report) WriteSummary(w io.Writer) {
	would := ""
	if r.DryRun {
		would = " (dry run: what would be done; nothing was written)"
	}
	fmt.Fprintf(w, "seed 000 migration%s\n", would)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "table\tread\twritten\tunchanged\tconflicts\tskipped")
	compacted := 0
	for _, t := range r.Tables {
		name := t.Table
		if name != t.Family {
			name += " (" + t.Family + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", name, t.Read, t.Written, t.Unchanged, t.Conflicts, t.Skipped)
		compacted += t.Compacted
	}
	tw.Flush()
	fmt.Fprintf(w, "apps: %d found, %d registered, %d already registered, %d refused", r.Apps.Found, r.Apps.Registered, r.Apps.Known, r.Apps.Refused)
	if r.Apps.Ignored > 0 {
		fmt.Fprintf(w, "; %d records UDS keeps in the apps table ignored", r.Apps.Ignored)
	}
	fmt.Fprintf(w, "\nnamespaces made private: %d\n", r.Private)
	if compacted > 0 {
		fmt.Fprintf(w, "JSON texts stored without their insignificant white space: %d\n", compacted)
	}
	if !r.DryRun {
		fmt.Fprintf(w, "owners recomputed: %d (usage corrected for %d); over a limit: %d\n", r.Owners, r.Drifted, len(r.OverLimit))
		for _, o := range r.OverLimit {
			fmt.Fprintf(w, "  over a limit: %s in app %s%s: %s\n", o.Owner, o.App, nameNote(o.Name), overBy(o))
		}
	}
	switch {
	case r.DryRun:
	case r.Changed():
		fmt.Fprintln(w, "done: the counts above were changed by this pass")
	default:
		fmt.Fprintln(w, "nothing changed: every record, app and namespace was already migrated")
	}
}

func nameNote(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf(" (%q)", name)
}

// overBy says which limits an owner passes, with the numbers.
func overBy(o OverLimit) string {
	var parts []string
	if o.Limit.Items > 0 && o.Used.Items > o.Limit.Items {
		parts = append(parts, fmt.Sprintf("%d items of %d", o.Used.Items, o.Limit.Items))
	}
	if o.Limit.Bytes > 0 && o.Used.Bytes > o.Limit.Bytes {
		parts = append(parts, fmt.Sprintf("%d bytes of %d", o.Used.Bytes, o.Limit.Bytes))
	}
	return strings.Join(parts, ", ")
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

// discover finds the seed's app names: every name of the apps table, and
// every name a data table holds records of, from a keys-only scan of its
// user index (only the keys are read) or, without the index, of the table.
func (r *seedRun) discover(ctx context.Context) error {
	n := r.o.Names
	r.progress.say("discovering the apps")
	r.progress.phase()
	var scans []scan
	if t := r.table(familyApps); t != "" {
		scans = append(scans, scan{
			name: "discover " + t,
			in: dynamodb.ScanInput{TableName: aws.String(t), ConsistentRead: aws.Bool(true),
				ProjectionExpression:     aws.String("#a, #d"),
				ExpressionAttributeNames: map[string]string{"#a": n.App, "#d": n.Description}},
			page: r.discoverApps,
		})
	}
	for _, f := range []family{familyJSON, familyBlob} {
		t := r.table(f)
		if t == "" {
			continue
		}
		in := dynamodb.ScanInput{TableName: aws.String(t), ProjectionExpression: aws.String("#h, #u"),
			ExpressionAttributeNames: map[string]string{"#h": n.AppUser, "#u": n.User}}
		if r.byUser[f] {
			in.IndexName = aws.String(n.ByUser)
		} else {
			r.progress.say("%s has no index %s: discovery scans the table", t, n.ByUser)
		}
		scans = append(scans, scan{name: "discover " + t, in: in, page: r.discoverData})
	}
	return r.scanAll(ctx, scans...)
}

func (r *seedRun) discoverApps(_ context.Context, items []map[string]types.AttributeValue) (pageDone, error) {
	n := r.o.Names
	return pageDone{apply: func(cp *seedCheckpoint) {
		for _, it := range items {
			name := attrS(it, n.App)
			if r.o.Tables.Apps == r.o.UDSApps && udsRecord(name) {
				cp.Ignored++
				continue
			}
			a := cp.app(name)
			a.Listed, a.Description = true, attrS(it, n.Description)
		}
	}}, nil
}

func (r *seedRun) discoverData(_ context.Context, items []map[string]types.AttributeValue) (pageDone, error) {
	m := mapper{names: r.o.Names}
	var names []string
	for _, it := range items {
		if name, ok := m.appName(it); ok && attrS(it, r.o.Names.User) != "" {
			names = append(names, name)
		}
	}
	return pageDone{apply: func(cp *seedCheckpoint) {
		for _, name := range names {
			cp.app(name).Data = true
		}
	}}, nil
}

func (cp *seedCheckpoint) app(name string) *seedApp {
	a := cp.Apps[name]
	if a == nil {
		a = &seedApp{}
		cp.Apps[name] = a
	}
	return a
}

// udsRecord reports whether a key of UDS's own apps table is one UDS
// wrote: an application id, or a name claim, rate limit bucket or release
// marker (a prefix and #).
func udsRecord(key string) bool {
	if _, err := uds.ParseApp(key); err == nil {
		return true
	}
	for _, p := range []string{"name#", "rate#", "released#"} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// resolve gives every app name its application id and registers the
// name, in the order described in docs/decisions.md: names the registry
// holds exactly first, so that of two seed names that differ only in case
// the one registered keeps its records.
func (r *seedRun) resolve(ctx context.Context) error {
	r.mu.Lock()
	claimed := map[string]string{}
	var names []string
	for name, a := range r.cp.Apps {
		if a.App != "" || a.Refused != "" {
			claimed[uds.FoldAppName(name)] = name
			continue
		}
		names = append(names, name)
	}
	r.mu.Unlock()
	sort.Strings(names)
	regs := map[string]uds.AppRegistration{}
	for _, name := range names {
		reg, err := r.st.AppByName(ctx, name)
		switch {
		case errors.Is(err, uds.ErrNotFound):
		case err != nil:
			return err
		default:
			regs[name] = reg
		}
	}
	sort.SliceStable(names, func(i, j int) bool {
		return regs[names[i]].Name == names[i] && regs[names[j]].Name != names[j]
	})
	r.progress.say("registering %d app names", len(names))
	for _, name := range names {
		r.mu.Lock()
		a := *r.cp.Apps[name]
		r.mu.Unlock()
		lines, err := r.resolveApp(ctx, name, &a, regs[name], claimed)
		if err != nil {
			return err
		}
		r.mu.Lock()
		*r.cp.Apps[name] = a
		r.writeLines(lines)
		err = r.save()
		r.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// resolveApp resolves one app name: the registry's app for it, or the id
// -app-ids gives or AppIDOf derives, registered under it. A name the
// registry cannot take is refused, with the reason reported.
func (r *seedRun) resolveApp(ctx context.Context, name string, a *seedApp, reg uds.AppRegistration, claimed map[string]string) ([]string, error) {
	appsTable := r.o.Tables.Apps
	if appsTable == "" {
		appsTable = "(data tables)"
	}
	key := r.o.Names.App + "=" + quoteAttr(&types.AttributeValueMemberS{Value: name})
	refuse := func(why string) ([]string, error) {
		a.Refused = fmt.Sprintf("app name %q is refused: %s", name, why)
		return []string{line("refused", appsTable, key, why)}, nil
	}
	a.Namespace = r.o.AppNamespace
	cc := ""
	if name == uds.CreatedContentName {
		a.Namespace, cc = r.o.ContentNamespace, r.o.CreatedContentApp
	}
	if parsed, err := uds.ParseAppName(name); err != nil || parsed != name {
		why := "the registry trims white space from app names"
		if err != nil {
			why = reason(err)
		}
		return refuse(why)
	}
	fold := uds.FoldAppName(name)
	if other, ok := claimed[fold]; ok && other != name {
		return refuse(fmt.Sprintf("the registry compares names in any case, and the app name %q takes it", other))
	}
	claimed[fold] = name
	if reg.App != "" {
		if cc != "" && reg.App != cc {
			return refuse(fmt.Sprintf("the registry gives it to app %s, not to the created-content app %s", reg.App, cc))
		}
		a.App = reg.App
		return nil, nil
	}
	id := cc
	if id == "" {
		id = r.o.AppIDs[name]
	}
	if id == "" {
		id = AppIDOf(name)
	}
	switch held, err := r.st.App(ctx, id); {
	case err == nil:
		return refuse(fmt.Sprintf("its application id %s is registered as %q", id, held.Name))
	case !errors.Is(err, uds.ErrNotFound):
		return nil, err
	}
	var lines []string
	desc := a.Description
	if _, err := uds.ParseAppDescription(desc); err != nil {
		lines = append(lines, line("dropped", appsTable, key, "the description is not kept: "+reason(err)))
		desc = ""
	}
	if !r.o.DryRun {
		_, err := r.st.RegisterApp(ctx, id, name, desc)
		switch {
		case errors.Is(err, uds.ErrConflict):
			more, _ := refuse(reason(err))
			return append(lines, more...), nil
		case err != nil:
			return nil, err
		}
	}
	a.App, a.Registered = id, true
	return lines, nil
}

// target is a namespace records land in.
type nsTarget struct{ app, namespace string }

// targets are the namespaces the copy writes to.
func (r *seedRun) targets() []nsTarget {
	seen := map[nsTarget]bool{}
	var out []nsTarget
	add := func(t nsTarget) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	r.mu.Lock()
	for _, a := range r.cp.Apps {
		if a.Data && a.Refused == "" {
			add(nsTarget{a.App, a.Namespace})
		}
	}
	r.mu.Unlock()
	if r.table(familyBehavior) != "" {
		add(nsTarget{uds.BehaviorApp, r.o.BehaviorNamespace})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].app+"|"+out[i].namespace < out[j].app+"|"+out[j].namespace
	})
	return out
}

// makePrivate makes every namespace the copy writes to private, so that
// each user's keys are their own: every change is announced, the run
// waits until they settle (the store's settle time), and completes them.
// A namespace that is not private and holds data stops the run.
func (r *seedRun) makePrivate(ctx context.Context) error {
	var pending []nsTarget
	var settles time.Time
	for _, t := range r.targets() {
		r.mu.Lock()
		done := r.cp.MadePrivate[t.app+"|"+t.namespace]
		r.mu.Unlock()
		if done {
			continue
		}
		p, err := r.st.StoredPolicy(ctx, t.app, t.namespace)
		if err != nil {
			return err
		}
		if p.Mode() == uds.AccessPrivate {
			continue
		}
		if r.o.DryRun {
			held, err := r.st.NamespaceHoldsData(ctx, t.app, t.namespace)
			switch {
			case err != nil:
				return err
			case held:
				return r.inUse(t)
			}
			if err := r.madePrivate(t); err != nil {
				return err
			}
			continue
		}
		at, err := r.toPrivate(ctx, t, p)
		if err != nil {
			return err
		}
		if !at.IsZero() {
			pending = append(pending, t)
			settles = later(settles, at)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	r.progress.say("making %d namespaces private: waiting until %s for writes in flight to settle", len(pending), settles.Format(time.RFC3339))
	for len(pending) > 0 {
		if err := sleepUntil(ctx, settles); err != nil {
			return err
		}
		var again []nsTarget
		for _, t := range pending {
			p, err := r.st.StoredPolicy(ctx, t.app, t.namespace)
			if err != nil {
				return err
			}
			at, err := r.toPrivate(ctx, t, p)
			if err != nil {
				return err
			}
			if !at.IsZero() {
				again = append(again, t)
				settles = later(settles, at)
			}
		}
		pending = again
	}
	return nil
}

// toPrivate asks for a namespace whose policy is p to be private: a new
// change is announced, a settled one completed. It returns when the
// change settles, or the zero time once the namespace is private.
func (r *seedRun) toPrivate(ctx context.Context, t nsTarget, p uds.Policy) (time.Time, error) {
	p.Access, p.Pending = uds.AccessPrivate, nil
	got, err := r.st.SetPolicy(ctx, t.app, t.namespace, p)
	switch {
	case errors.Is(err, uds.ErrInUse):
		return time.Time{}, r.inUse(t)
	case err != nil:
		return time.Time{}, err
	case got.Pending != nil:
		return got.Pending.SettlesAt, nil
	}
	return time.Time{}, r.madePrivate(t)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// madePrivate records a namespace made private.
func (r *seedRun) madePrivate(t nsTarget) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cp.MadePrivate[t.app+"|"+t.namespace] = true
	r.progress.say("namespace %s/%s: private%s", t.app, t.namespace, dryNote(r.o.DryRun))
	return r.save()
}

func (r *seedRun) inUse(t nsTarget) error {
	return fmt.Errorf("namespace %s of app %s is not private and holds data: each user's records need a private namespace (their keys would collide), and a namespace that holds data cannot become private; name another namespace (-app-namespace, -content-namespace, -behavior-namespace) or empty it, then run again", t.namespace, t.app)
}

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
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

// report is the checkpoint's counts as a report. The caller holds mu.
func (r *seedRun) report() Seed000Report {
	rep := Seed000Report{DryRun: r.o.DryRun, Private: len(r.cp.MadePrivate), Drifted: r.cp.Drifted, OverLimit: r.cp.OverLimit}
	for _, t := range r.tables {
		tr := TableReport{Family: t.family.String(), Table: t.name}
		if s := r.cp.Stats[t.family.String()]; s != nil {
			tr.TableStats = *s
		}
		if t.family == familyApps {
			// The apps table's names: registered, already registered
			// or refused.
			for _, a := range r.cp.Apps {
				if !a.Listed {
					continue
				}
				tr.Read++
				switch {
				case a.Refused != "":
					tr.Skipped++
				case a.Registered:
					tr.Written++
				case a.App != "":
					tr.Unchanged++
				}
			}
		}
		rep.Tables = append(rep.Tables, tr)
	}
	rep.Apps.Ignored = r.cp.Ignored
	for _, a := range r.cp.Apps {
		rep.Apps.Found++
		switch {
		case a.Refused != "":
			rep.Apps.Refused++
		case a.Registered:
			rep.Apps.Registered++
		case a.App != "":
			rep.Apps.Known++
		}
	}
	for _, done := range r.cp.Owners {
		if done {
			rep.Owners++
		}
	}
	return rep
}
