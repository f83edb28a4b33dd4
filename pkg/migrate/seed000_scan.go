package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/store"
)

// seedCheckpoint is the progress of a seed-000 pass, saved (atomically)
// after every page and every step, so that a run killed at any point is
// continued by the next one.
type seedCheckpoint struct {
	// Fingerprint is the options that shape a pass; a checkpoint made
	// with others starts a new pass.
	Fingerprint string `json:"fingerprint"`
	// Positions and Done hold, per scan and segment, where the scan
	// stopped and whether it finished.
	Positions map[string][]store.ScanPosition `json:"positions"`
	Done      map[string][]bool               `json:"done"`
	// Apps are the app names found, by name.
	Apps map[string]*seedApp `json:"apps"`
	// Ignored counts the records of the apps table that UDS wrote.
	Ignored int `json:"ignored"`
	// Steps done: discovery, registration, namespaces, copy.
	Discovered bool `json:"discovered"`
	Resolved   bool `json:"resolved"`
	Private    bool `json:"private"`
	Copied     bool `json:"copied"`
	// MadePrivate lists the namespaces made private, as "app|namespace".
	MadePrivate map[string]bool `json:"madePrivate"`
	// Stats are the counts of each source table, by family name.
	Stats map[string]*TableStats `json:"stats"`
	// Owners lists every owner a record landed for, as "app|owner" (an app
	// never holds the delimiter), and whether their usage was recomputed.
	Owners    map[string]bool `json:"owners"`
	Drifted   int             `json:"drifted"`
	OverLimit []OverLimit     `json:"overLimit,omitempty"`
	Complete  bool            `json:"complete"`
}

// seedApp is an app name of the seed and what the migration did with it.
type seedApp struct {
	Description string `json:"description,omitempty"`
	// Listed: the apps table names it; Data: a data table holds records
	// of it.
	Listed bool `json:"listed,omitempty"`
	Data   bool `json:"data,omitempty"`
	// App and Namespace are where its records land, once resolved;
	// Refused says why they do not.
	App       string `json:"app,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Refused   string `json:"refused,omitempty"`
	// Registered: this pass registered the name.
	Registered bool `json:"registered,omitempty"`
}

// loadSeedCheckpoint resumes an unfinished pass made with the same
// options; a finished, missing or foreign one starts a new pass.
func loadSeedCheckpoint(o Seed000Options) *seedCheckpoint {
	var cp seedCheckpoint
	if b, err := os.ReadFile(o.Checkpoint); err == nil && json.Unmarshal(b, &cp) == nil && !cp.Complete && cp.Fingerprint == fingerprint(o) {
		return &cp
	}
	return newSeedCheckpoint(o)
}

// newSeedCheckpoint is the start of a pass.
func newSeedCheckpoint(o Seed000Options) *seedCheckpoint {
	return &seedCheckpoint{Fingerprint: fingerprint(o), Positions: map[string][]store.ScanPosition{}, Done: map[string][]bool{},
		Apps: map[string]*seedApp{}, MadePrivate: map[string]bool{}, Stats: map[string]*TableStats{}, Owners: map[string]bool{}}
}

// fingerprint names what a checkpoint's positions and targets depend on.
func fingerprint(o Seed000Options) string {
	b, _ := json.Marshal([]any{"seed000", o.Tables, o.Names, o.Segments, o.AppNamespace, o.ContentNamespace,
		o.BehaviorNamespace, o.CreatedContentApp, o.AppIDs, o.Date})
	return string(b)
}

// scan is one segmented scan of a table or index, resumed from the
// checkpoint under its name. page handles the items of each page and
// returns what to record of them; it runs outside the lock, in parallel
// with the other segments.
type scan struct {
	name string
	in   dynamodb.ScanInput
	page func(ctx context.Context, items []map[string]types.AttributeValue) (pageDone, error)
}

// pageDone is what a page leaves to record under the run's lock: counts
// to add to the checkpoint, and lines to report.
type pageDone struct {
	apply func(cp *seedCheckpoint)
	lines []string
}

// scanAll runs scans in parallel, every segment of each from where the
// checkpoint left it, and returns the first error.
func (r *seedRun) scanAll(ctx context.Context, scans ...scan) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(scans)*r.o.Segments)
	for _, sc := range scans {
		r.mu.Lock()
		if r.cp.Positions[sc.name] == nil {
			r.cp.Positions[sc.name] = make([]store.ScanPosition, r.o.Segments)
			r.cp.Done[sc.name] = make([]bool, r.o.Segments)
		}
		done := slices.Clone(r.cp.Done[sc.name])
		r.mu.Unlock()
		for seg := range r.o.Segments {
			if done[seg] {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- r.scanSegment(ctx, sc, seg)
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// scanSegment reads one segment page by page. A page's work finishes even
// when ctx ends meanwhile (Ctrl-C), within pageGrace, and its checkpoint
// is saved: the counts stay exact and the next run starts after it.
func (r *seedRun) scanSegment(ctx context.Context, sc scan, seg int) error {
	r.mu.Lock()
	pos := r.cp.Positions[sc.name][seg]
	r.mu.Unlock()
	for pages := 1; ; pages++ {
		in := sc.in
		in.Segment, in.TotalSegments = aws.Int32(int32(seg)), aws.Int32(int32(r.o.Segments))
		if r.o.PageItems > 0 {
			in.Limit = aws.Int32(int32(r.o.PageItems))
		}
		if pos != nil {
			in.ExclusiveStartKey = map[string]types.AttributeValue{}
			for k, v := range pos {
				in.ExclusiveStartKey[k] = &types.AttributeValueMemberS{Value: v}
			}
		}
		out, err := r.src.Scan(ctx, &in)
		if err != nil {
			return fmt.Errorf("scan %s: %w", aws.ToString(in.TableName), err)
		}
		work, cancel := context.WithTimeout(context.WithoutCancel(ctx), pageGrace)
		done, err := sc.page(work, out.Items)
		cancel()
		if err != nil {
			return err
		}
		// The keys are strings (checkTable).
		var next store.ScanPosition
		if out.LastEvaluatedKey != nil {
			next = store.ScanPosition{}
			for k := range out.LastEvaluatedKey {
				next[k] = attrS(out.LastEvaluatedKey, k)
			}
		}
		r.mu.Lock()
		if done.apply != nil {
			done.apply(r.cp)
		}
		r.writeLines(done.lines)
		r.cp.Positions[sc.name][seg] = next
		r.cp.Done[sc.name][seg] = next == nil
		err = r.save()
		r.progress.page(fmt.Sprintf("%s segment %d/%d page %d: %d items", sc.name, seg+1, r.o.Segments, pages, len(out.Items)), len(out.Items), r.cp)
		r.mu.Unlock()
		if err != nil || next == nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		pos = next
	}
}

// checkTable describes a source table and checks its keys: the hash key
// (and range key, when given) named as the options say. It reports
// whether the table has the index named index. The keys the scans read
// (the table's, and the index's) must be strings, which is what a
// checkpoint's positions hold.
func checkTable(ctx context.Context, src Source, table, hash, rangeKey, index string) (bool, error) {
	out, err := src.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return false, fmt.Errorf("describe %s: %w", table, err)
	}
	t := out.Table
	names := func(keys []types.KeySchemaElement) (hash, rangeKey string) {
		for _, k := range keys {
			if k.KeyType == types.KeyTypeHash {
				hash = aws.ToString(k.AttributeName)
			} else {
				rangeKey = aws.ToString(k.AttributeName)
			}
		}
		return hash, rangeKey
	}
	gotHash, gotRange := names(t.KeySchema)
	if gotHash != hash || gotRange != rangeKey {
		return false, fmt.Errorf("table %s has the keys %q and %q; the options name %q and %q (see the -seed000-*-attr flags)", table, gotHash, gotRange, hash, rangeKey)
	}
	read := map[string]bool{gotHash: true, gotRange: true}
	has := false
	for _, gsi := range t.GlobalSecondaryIndexes {
		if aws.ToString(gsi.IndexName) == index {
			has = true
			h, r := names(gsi.KeySchema)
			read[h], read[r] = true, true
		}
	}
	for _, d := range t.AttributeDefinitions {
		if read[aws.ToString(d.AttributeName)] && d.AttributeType != types.ScalarAttributeTypeS {
			return false, fmt.Errorf("table %s: key attribute %s is of type %s; the migration reads string keys", table, aws.ToString(d.AttributeName), d.AttributeType)
		}
	}
	return has, nil
}

// getAll reads items of a source table by key with BatchGetItem (100 keys
// a call, keys left unprocessed sent again after a pause).
func getAll(ctx context.Context, src Source, table string, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	var found []map[string]types.AttributeValue
	for start := 0; start < len(keys); start += 100 {
		req := map[string]types.KeysAndAttributes{table: {Keys: keys[start:min(start+100, len(keys))], ConsistentRead: aws.Bool(true)}}
		for attempt := 0; len(req) > 0; attempt++ {
			if attempt > 0 {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(min(time.Duration(attempt)*50*time.Millisecond, time.Second)):
				}
			}
			out, err := src.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", table, err)
			}
			found = append(found, out.Responses[table]...)
			req = out.UnprocessedKeys
		}
	}
	return found, nil
}

// progress shows how the run goes: on a terminal one line rewritten in
// place, otherwise a line per page.
type progress struct {
	w     io.Writer
	live  bool
	start time.Time
	// shown: a live line is on the screen, to be cleared before a line
	// of its own.
	shown  bool
	tables []seedTable
	// read counts the items this run read, for the rate.
	read int
}

// say writes a line of its own.
func (p *progress) say(format string, args ...any) {
	p.clear()
	fmt.Fprintf(p.w, format+"\n", args...)
}

// clear takes a live line off the screen, so that another line (of the
// progress, or of the skipped-records report on the same terminal) starts
// at its beginning; the next page shows it again.
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
}

// phase starts the count of the rate afresh: discovery reads keys, the
// copy records, and a wait for namespaces to settle lies between them.
func (p *progress) phase() {
	p.start, p.read = time.Now(), 0
}

// page shows the counts after a page: on a terminal one short line
// rewritten in place (read/written/unchanged/skipped per table, conflicts
// among the skipped, to keep it short), otherwise a line after the page's
// own description with every count.
func (p *progress) page(what string, items int, cp *seedCheckpoint) {
	p.read += items
	var b strings.Builder
	for _, t := range p.tables {
		st := cp.Stats[t.family.String()]
		switch {
		case st == nil:
		case p.live:
			fmt.Fprintf(&b, "%s %d/%d/%d/%d  ", t.name, st.Read, st.Written, st.Unchanged, st.Skipped+st.Conflicts)
		default:
			fmt.Fprintf(&b, "%s: read %d, written %d, unchanged %d, conflicts %d, skipped %d; ", t.name, st.Read, st.Written, st.Unchanged, st.Conflicts, st.Skipped)
		}
	}
	rate := float64(p.read) / max(time.Since(p.start).Seconds(), 1e-3)
	switch {
	case !p.live:
		fmt.Fprintf(p.w, "%s; %s%.0f records/s\n", what, b.String(), rate)
	case b.Len() == 0: // discovery: no counts yet
		fmt.Fprintf(p.w, "\r\x1b[K%s; %.0f records/s", what, rate)
		p.shown = true
	default:
		fmt.Fprintf(p.w, "\r\x1b[Kread/written/unchanged/skipped: %s%.0f records/s", b.String(), rate)
		p.shown = true
	}
}

// end finishes a live line.
func (p *progress) end() {
	if p.shown {
		fmt.Fprintln(p.w)
		p.shown = false
	}
}
