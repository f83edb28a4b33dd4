package migrate_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/migrate"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/store/storetest/faults"
	"github.com/udsproject/uds/pkg/uds"
)

// `make test` migrates a few thousand records and resumes the killed run
// under the combined fault mix; `make soak` migrates more under each mix.
var (
	seed000Records  = flag.Int("seed000-records", 3000, "records of the seed-000 tables in TestMigrateSeed000")
	seed000AllMixes = flag.Bool("seed000-all-mixes", false, "resume TestMigrateSeed000 under every fault mix, not only the combined one")
)

// seed000Writes are the DynamoDB operations that write.
var seed000Writes = []string{"TransactWriteItems", "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"}

// seed000Mixes are the faults the resumed run meets; the first is the one
// `make test` runs.
var seed000Mixes = []struct {
	name  string
	rules []faults.Rule
}{
	{"combined", []faults.Rule{
		{Kind: faults.LostAfterCommit, Ops: seed000Writes, Rate: 0.05},
		{Kind: faults.Throttle, Rate: 0.04},
		{Kind: faults.ServerError, Rate: 0.03},
	}},
	{"lost answers", []faults.Rule{
		{Kind: faults.LostAfterCommit, Ops: seed000Writes, Rate: 0.1},
		{Kind: faults.ResetAfterCommit, Ops: seed000Writes, Rate: 0.05},
	}},
	{"throttling", []faults.Rule{{Kind: faults.Throttle, Rate: 0.1}}},
	{"5xx and resets", []faults.Rule{
		{Kind: faults.ServerError, Rate: 0.04}, {Kind: faults.Unavailable, Rate: 0.04}, {Kind: faults.Reset, Rate: 0.04},
	}},
	{"latency", []faults.Rule{{Kind: faults.Delay, Rate: 0.05, Delay: 100 * time.Millisecond}}},
}

// TestMigrateSeed000 migrates seed-000 tables, laid out as the seed lays
// them out, through every step an operator takes: a dry run, a run
// stopped by a namespace that holds data, a run killed midway, its resumption
// under faults, and two more runs (with and without the checkpoint) that
// find nothing to change.
func TestMigrateSeed000(t *testing.T) {
	t.Parallel()
	for i, mix := range seed000Mixes {
		if i > 0 && !*seed000AllMixes {
			break
		}
		t.Run(mix.name, func(t *testing.T) {
			t.Parallel()
			runSeed000(t, uint64(i+1), mix.rules)
		})
	}
}

// Ids the test gives: the created-content app, an app registered before
// the migration (games), and one the -app-ids file names (Todo List).
const (
	contentApp = "0c0c0c0c-0000-4000-8000-00000000c0c0"
	gamesApp   = "9a9e5000-0000-4000-8000-000000000001"
	todoApp    = "70d00000-0000-4000-8000-000000000002"
)

// seedRecord is a record of the seed's data tables and what the migration
// must make of it.
type seedRecord struct {
	table string
	item  map[string]types.AttributeValue
	// app is the seed app name ("" in calculatedBehavior), user and key
	// the record's.
	app, user, key string
	// Where it lands: data (JSON) or blob and its content type, and its
	// dates; or skip, the start of the reason it is skipped; or conflict.
	data        string
	blob        []byte
	contentType string
	created     time.Time
	updated     time.Time
	skip        string
	conflict    bool
}

func (r *seedRecord) lands() bool { return r.skip == "" && !r.conflict }

// seedFixture is the seed's tables and their records.
type seedFixture struct {
	apps, json, blob, cb string
	records              []*seedRecord
	ids                  map[string]string
	namespaces           map[string]string
}

func (f *seedFixture) target(r *seedRecord) uds.Key {
	if r.table == f.cb {
		return uds.Key{App: uds.BehaviorApp, Namespace: migrate.DefaultBehaviorNamespace, ID: r.key, Owner: r.user}
	}
	return uds.Key{App: f.ids[r.app], Namespace: f.namespaces[r.app], ID: r.key, Owner: r.user}
}

func (f *seedFixture) sourceKey(r *seedRecord) string {
	if r.table == f.cb {
		return "user=" + quote(r.item["user"]) + " key=" + quote(r.item["key"])
	}
	return "appUser=" + quote(r.item["appUser"]) + " key=" + quote(r.item["key"])
}

func quote(av types.AttributeValue) string {
	return fmt.Sprintf("%q", av.(*types.AttributeValueMemberS).Value)
}

// createSeedTables creates seed 000's data tables as the seed lays them
// out: appDataJson and appDataBlob keyed by app name + user and key, with
// the keys-only byUser index (user, app name + key); calculatedBehavior by
// user and key. The apps table is the deployment's own, whose key (app)
// is the seed's. They are deleted when the test ends.
func createSeedTables(t *testing.T, c *dynamodb.Client, tables store.Tables) *seedFixture {
	prefix := strings.TrimSuffix(tables.Data, schema.Data.DefaultName)
	f := &seedFixture{apps: tables.Apps, json: prefix + "appDataJson", blob: prefix + "appDataBlob", cb: prefix + "calculatedBehavior"}
	str := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	keys := func(hash, rng string) []types.KeySchemaElement {
		return []types.KeySchemaElement{{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash}, {AttributeName: aws.String(rng), KeyType: types.KeyTypeRange}}
	}
	for _, name := range []string{f.json, f.blob} {
		_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
			TableName:            aws.String(name),
			KeySchema:            keys("appUser", "key"),
			AttributeDefinitions: []types.AttributeDefinition{str("appUser"), str("key"), str("user"), str("appKey")},
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
				IndexName: aws.String("byUser"), KeySchema: keys("user", "appKey"),
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			}},
			BillingMode: types.BillingModePayPerRequest,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: aws.String(f.cb), KeySchema: keys("user", "key"),
		AttributeDefinitions: []types.AttributeDefinition{str("user"), str("key")}, BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, name := range []string{f.json, f.blob, f.cb} {
			_, _ = c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		}
	})
	f.ids = map[string]string{"Notes": migrate.AppIDOf("Notes"), "Todo List": todoApp, "hmh": contentApp, "games": gamesApp,
		"orphan": migrate.AppIDOf("orphan"), "empty app": migrate.AppIDOf("empty app")}
	f.namespaces = map[string]string{"hmh": migrate.DefaultContentNamespace}
	for name := range f.ids {
		if name != "hmh" {
			f.namespaces[name] = migrate.DefaultAppNamespace
		}
	}
	return f
}

// fill writes n records across apps (hmh among them) and users, JSON text
// and native documents, blobs with and without content types, and
// calculatedBehavior rows, then records of every kind UDS cannot hold; and
// the apps table's rows.
func (f *seedFixture) fill(t *testing.T, c *dynamodb.Client, n int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	num := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	users := []string{"alice", "bob|auth0", "carol/x", "zoë", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory"}
	apps := []string{"Notes", "Todo List", "hmh", "games", "orphan"}
	created, _ := time.Parse(time.RFC3339, "2023-06-01T08:00:00Z")
	updated, _ := time.Parse(time.RFC3339, "2024-01-02T03:04:05.678Z")
	data := func(app, user, key string) *seedRecord {
		r := &seedRecord{table: f.json, app: app, user: user, key: key,
			item: map[string]types.AttributeValue{"appUser": s(app + "#" + user), "user": s(user), "key": s(key)}}
		// The index's range key holds 1024 bytes at most; an item without
		// it is not in the index (the seed's writer could not have
		// written it, but the table takes it).
		if appKey := app + "#" + key; len(appKey) <= 1024 {
			r.item["appKey"] = s(appKey)
		}
		return r
	}
	var jsonOK []*seedRecord
	for i := range n {
		user := users[rng.IntN(len(users))]
		app := apps[rng.IntN(len(apps))]
		var r *seedRecord
		switch i % 10 {
		case 0, 1, 2, 3, 4, 5:
			r = data(app, user, fmt.Sprintf("k-%05d", i))
			switch i % 4 {
			case 0:
				r.data = fmt.Sprintf(`{"i":%d,"s":"<&>é"}`, i)
				r.item["value"] = s(r.data)
			case 1:
				r.item["value"] = s(fmt.Sprintf("{ \"i\" : %d,\n  \"a\": [1, 2.50] }\n", i))
				r.data = fmt.Sprintf(`{"i":%d,"a":[1,2.50]}`, i)
			case 2:
				r.item["value"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
					"i":      num(fmt.Sprint(i)),
					"tags":   &types.AttributeValueMemberL{Value: []types.AttributeValue{s("x"), &types.AttributeValueMemberBOOL{Value: true}, &types.AttributeValueMemberNULL{Value: true}}},
					"nested": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"z": num("1.5"), "a": s("é")}},
				}}
				r.data = fmt.Sprintf(`{"i":%d,"nested":{"a":"é","z":1.5},"tags":["x",true,null]}`, i)
			default:
				r.item["value"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{num(fmt.Sprint(i)), s("two")}}
				r.data = fmt.Sprintf(`[%d,"two"]`, i)
			}
			jsonOK = append(jsonOK, r)
		case 6, 7, 8:
			r = data(app, user, fmt.Sprintf("k-%05d", i))
			r.table = f.blob
			r.blob = make([]byte, 1+rng.IntN(3000))
			for j := range r.blob {
				r.blob[j] = byte(rng.Uint32())
			}
			r.item["value"] = &types.AttributeValueMemberB{Value: r.blob}
			r.contentType = []string{migrate.DefaultBlobType, "image/png", "text/plain; charset=utf-8"}[i%3]
			if i%3 > 0 {
				r.item["contentType"] = s(r.contentType)
			}
		default:
			r = &seedRecord{table: f.cb, user: user, key: fmt.Sprintf("score-%05d", i), data: fmt.Sprintf(`{"score":%d}`, i)}
			r.item = map[string]types.AttributeValue{"user": s(user), "key": s(r.key), "value": s(r.data)}
		}
		r.created, r.updated = migrate.DefaultSeed000Date, migrate.DefaultSeed000Date
		switch i % 5 {
		case 0:
			r.item["createdDate"], r.item["updatedDate"] = s("2023-06-01T08:00:00Z"), s("2024-01-02T03:04:05.678Z")
			r.created, r.updated = created, updated
		case 1:
			r.item["updatedDate"] = s("2024-01-02T03:04:05.678Z")
			r.created, r.updated = updated, updated
		}
		f.records = append(f.records, r)
	}
	// A blob under the key of a JSON value is skipped; one under the key
	// of a JSON value that is skipped lands.
	for _, j := range jsonOK[:5] {
		r := data(j.app, j.user, j.key)
		r.table, r.skip = f.blob, "the key also holds a JSON value"
		r.item["value"] = &types.AttributeValueMemberB{Value: []byte("shadowed")}
		f.records = append(f.records, r)
	}
	badJSON := data("Notes", "alice", "bad-json")
	badJSON.item["value"], badJSON.skip = s("{not json"), "the value is not JSON"
	shadowless := data("Notes", "alice", "bad-json")
	shadowless.table, shadowless.blob, shadowless.contentType = f.blob, []byte("kept"), migrate.DefaultBlobType
	shadowless.created, shadowless.updated = migrate.DefaultSeed000Date, migrate.DefaultSeed000Date
	shadowless.item["value"] = &types.AttributeValueMemberB{Value: shadowless.blob}
	f.records = append(f.records, badJSON, shadowless)
	// The first JSON value of Todo List meets a different item at its key.
	for _, r := range jsonOK {
		if r.app == "Todo List" {
			r.conflict = true
			break
		}
	}
	long := strings.Repeat("u", 1000)
	bad := func(table, app, user, key string, value types.AttributeValue, skip string, more ...string) {
		r := data(app, user, key)
		r.table, r.skip = table, skip
		if value != nil {
			r.item["value"] = value
		}
		if table == f.cb {
			r.item = map[string]types.AttributeValue{"user": s(user), "key": s(key), "value": value}
		}
		for i := 0; i+1 < len(more); i += 2 {
			r.item[more[i]] = s(more[i+1])
		}
		f.records = append(f.records, r)
	}
	bad(f.json, "Notes", "alice", "a|b", s("1"), `key: must not contain "|"`)
	bad(f.json, "Notes", "alice", "a/b", s("1"), `key: must not contain "/"`)
	bad(f.json, "hmh", "alice", "tab\there", s("1"), "key: must not contain control characters")
	bad(f.json, "Notes", "eve\x07", "k", s("1"), "the user is not a subject")
	bad(f.json, "Notes", strings.Repeat("v", 1025), "k", s("1"), "the user is not a subject")
	bad(f.json, "Notes", long, strings.Repeat("k", 1024), s("1"), "key: applicationUuid, namespace, id and the caller's identity together take")
	bad(f.json, "Notes", "alice", "null", &types.AttributeValueMemberNULL{Value: true}, "the value is null")
	bad(f.json, "Notes", "alice", "null-text", s("null"), "the value is null")
	bad(f.json, "Notes", "alice", "twice", s(`{"a":1,"a":2}`), `the value names member "a" twice`)
	bad(f.json, "Notes", "alice", "set", &types.AttributeValueMemberSS{Value: []string{"a"}}, "the value holds a DynamoDB string set")
	bad(f.json, "Notes", "alice", "huge", &types.AttributeValueMemberL{Value: []types.AttributeValue{s(strings.Repeat("\x01", 200_000))}}, "the value takes 1200004 bytes of JSON")
	bad(f.json, "Notes", "alice", "no-value", nil, "it has no value")
	bad(f.json, "Notes", "alice", "bad-date", s("1"), "createdDate: must be an RFC 3339 instant", "createdDate", "yesterday")
	bad(f.blob, "games", "bob|auth0", "text", s("not bytes"), "the value is not binary")
	bad(f.blob, "games", "bob|auth0", "big", &types.AttributeValueMemberB{Value: make([]byte, uds.MaxInlineBytes+1)}, "the value is 358401 bytes")
	bad(f.blob, "games", "bob|auth0", "json-type", &types.AttributeValueMemberB{Value: []byte("{}")}, "contentType: is application/json", "contentType", "application/json")
	bad(f.blob, "games", "bob|auth0", "no-type", &types.AttributeValueMemberB{Value: []byte("x")}, "contentType: is not a media type", "contentType", "noslash")
	bad(f.cb, "", "alice", "x|y", s("1"), `key: must not contain "|"`)
	bad(f.cb, "", "alice", "bad", s("{bad"), "the value is not JSON")
	// The anonymous caller has no key space in the private namespaces the
	// copy writes to.
	bad(f.json, "Notes", "anonymous", "public", s("1"), `the user is "anonymous", who has no key space in private namespace`)
	bad(f.blob, "games", "anonymous", "public", &types.AttributeValueMemberB{Value: []byte("x")}, `the user is "anonymous", who has no key space`)
	bad(f.cb, "", "anonymous", "public", s("1"), `the user is "anonymous", who has no key space`)
	// The hash key names another user than the record.
	mismatch := data("Notes", "alice", "mismatch")
	mismatch.item["appUser"], mismatch.item["value"], mismatch.skip = s("Notes#mallory"), s("1"), "its appUser does not end"
	f.records = append(f.records, mismatch)
	// Records of app names the registry refuses.
	bad(f.json, "notes", "alice", "k", s("1"), `app name "notes" is refused`)
	bad(f.json, "bad\x01name", "bob|auth0", "k", s("1"), `app name "bad\x01name" is refused`)
	bad(f.blob, "trailing ", "carol/x", "k", &types.AttributeValueMemberB{Value: []byte("x")}, `app name "trailing " is refused`)

	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	put := func(table string, item map[string]types.AttributeValue) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
				t.Errorf("put %v: %v", item["key"], err)
			}
		}()
	}
	for _, r := range f.records {
		put(r.table, r.item)
	}
	for name, desc := range map[string]string{"Notes": "Notes of users", "Todo List": "two\nlines", "hmh": "created content",
		"games": "", "notes": "", "bad\x01name": "", "trailing ": "", "empty app": "listed, no data"} {
		item := map[string]types.AttributeValue{"app": s(name)}
		if desc != "" {
			item["description"] = s(desc)
		}
		put(f.apps, item)
	}
	wg.Wait()
}

// lines collects report lines; it is safe for concurrent use.
type lines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lines) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSuffix(l.b.String(), "\n")
	l.b.Reset()
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func runSeed000(t *testing.T, seed uint64, rules []faults.Rule) {
	ctx := context.Background()
	plain := storetest.Client(t)
	tables := storetest.NewTables(t)
	f := createSeedTables(t, plain, tables)
	opts := []store.Option{store.WithRecomputeQuiet(0), store.WithPolicySettle(100 * time.Millisecond), store.WithCreatedContentApp(contentApp)}
	client, ft := storetest.FaultyClient(t, seed)
	st := store.New(client, tables, opts...)
	check := store.New(plain, tables, opts...)

	// Before: games is registered, with a limit of 3 items per user;
	// Todo List's namespace is private already, and one of its keys holds
	// an item the seed's record differs from.
	if _, err := check.RegisterApp(ctx, gamesApp, "games", ""); err != nil {
		t.Fatal(err)
	}
	if err := check.SetAppLimits(ctx, gamesApp, uds.Limits{Items: 3}); err != nil {
		t.Fatal(err)
	}
	setPrivate(t, check, todoApp, migrate.DefaultAppNamespace)
	f.fill(t, plain, *seed000Records, seed)
	for _, r := range f.records {
		if r.conflict {
			if _, err := check.Create(ctx, uds.Write{Key: f.target(r), Data: []byte(`"already here"`), Subject: r.user}); err != nil {
				t.Fatal(err)
			}
		}
	}

	skipped := &lines{}
	o := migrate.Seed000Options{
		Tables: migrate.Seed000Tables{Apps: f.apps, JSON: f.json, Blob: f.blob, Behavior: f.cb},
		Names:  migrate.DefaultSeed000Names(), UDSApps: tables.Apps,
		AppNamespace: migrate.DefaultAppNamespace, ContentNamespace: migrate.DefaultContentNamespace, BehaviorNamespace: migrate.DefaultBehaviorNamespace,
		CreatedContentApp: contentApp, AppIDs: map[string]string{"Todo List": todoApp},
		Segments: 3, PageItems: 100, Checkpoint: filepath.Join(t.TempDir(), "checkpoint.json"), Skipped: skipped,
	}
	want := f.expected()

	// 1. The dry run predicts the counts and writes nothing.
	dry := o
	dry.DryRun = true
	dryRep, err := migrate.Seed000(ctx, client, st, dry)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	checkCounts(t, "dry run", dryRep, want)
	if _, err := os.Stat(o.Checkpoint); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dry run wrote a checkpoint: %v", err)
	}
	if _, err := check.AppByName(ctx, "Notes"); !errors.Is(err, uds.ErrNotFound) {
		t.Errorf("the dry run registered Notes: %v", err)
	}
	if n := tableUsage(t, plain, tables.Data).Items; n != 1 {
		t.Errorf("after the dry run the data table holds %d items, want the 1 written before", n)
	}
	checkLines(t, "dry run", skipped.take(), f.expectedLines(t, true))

	// 2. A namespace that is not private and holds data stops the run
	// before anything is copied, naming it.
	blocker := uds.Key{App: f.ids["orphan"], Namespace: migrate.DefaultAppNamespace, ID: "shared"}
	if _, err := check.Create(ctx, uds.Write{Key: blocker, Data: []byte(`1`), Subject: "someone"}); err != nil {
		t.Fatal(err)
	}
	_, err = migrate.Seed000(ctx, client, st, o)
	if err == nil || !strings.Contains(err.Error(), "namespace data of app "+f.ids["orphan"]+" is not private and holds data") {
		t.Fatalf("run over a namespace in use: %v", err)
	}
	if n := tableUsage(t, plain, tables.Data).Items; n != 2 {
		t.Errorf("the stopped run copied: the data table holds %d items", n)
	}
	if err := check.Delete(ctx, uds.Write{Key: blocker, Subject: "someone"}); err != nil {
		t.Fatal(err)
	}

	// 3. The next run is killed after a few pages...
	killed, kill := context.WithCancel(ctx)
	pages := 0
	k := o
	k.Progress = writerFunc(func(p []byte) {
		if strings.HasPrefix(string(p), "copy ") {
			if pages++; pages == 4 {
				kill()
			}
		}
	})
	rep, err := migrate.Seed000(killed, client, st, k)
	kill()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("killed run: %v, want the cancellation", err)
	}
	if w := written(rep); w == 0 || w >= want.landed {
		t.Fatalf("the killed run wrote %d of %d records; want it stopped midway", w, want.landed)
	}

	// 4. ...and resumed under faults: every record lands once.
	ft.Set(rules...)
	rep, err = migrate.Seed000(ctx, client, st, o)
	injected, _ := ft.Injected()
	ft.Set()
	if err != nil {
		t.Fatalf("resumed run (faults %v): %v", injected, err)
	}
	if len(rules) > 0 && len(injected) == 0 {
		t.Errorf("no fault was injected")
	}
	checkCounts(t, "killed and resumed", rep, want)
	for i := range rep.Tables {
		if d, r := dryRep.Tables[i], rep.Tables[i]; d.TableStats != r.TableStats {
			t.Errorf("%s: the dry run predicted %+v, the run did %+v", r.Table, d.TableStats, r.TableStats)
		}
	}
	// The run's own writes mark their apps in the catalogue of what
	// holds data, on the apps' records, which the resumed run's discovery
	// finds and ignores as UDS's records: only that count may differ.
	dryApps, runApps := dryRep.Apps, rep.Apps
	dryApps.Ignored, runApps.Ignored = 0, 0
	if dryApps != runApps || dryRep.Private != rep.Private {
		t.Errorf("the dry run predicted %+v and %d namespaces made private, the run did %+v and %d", dryRep.Apps, dryRep.Private, rep.Apps, rep.Private)
	}
	checkLines(t, "killed and resumed", skipped.take(), f.expectedLines(t, true))
	f.checkLanded(t, check)
	f.checkUsage(t, plain, tables, check, rep)
	f.checkRegistry(t, check)
	f.checkServed(t, st)

	// 5. A second run, and one without the checkpoint, change nothing and
	// say so.
	for _, name := range []string{"second run", "run without the checkpoint"} {
		if name != "second run" {
			if err := os.Remove(o.Checkpoint); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := migrate.Seed000(ctx, client, st, o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var summary bytes.Buffer
		rep.WriteSummary(&summary)
		if rep.Changed() || !strings.Contains(summary.String(), "nothing changed") {
			t.Errorf("%s changed something:\n%s", name, summary.String())
		}
		unchanged := 0
		for _, tr := range rep.Tables {
			if tr.Family != "apps" {
				unchanged += tr.Unchanged
			}
		}
		if unchanged != want.landed || rep.Apps.Known != want.apps.Registered+want.apps.Known {
			t.Errorf("%s: %d records unchanged, %+v; want %d and every app known", name, unchanged, rep.Apps, want.landed)
		}
		checkLines(t, name, skipped.take(), f.expectedLines(t, false))
	}
}

// setPrivate makes a namespace private, waiting for the change to settle.
func setPrivate(t *testing.T, st *store.Store, app, namespace string) {
	t.Helper()
	for {
		p, err := st.SetPolicy(context.Background(), app, namespace, uds.Policy{Access: uds.AccessPrivate})
		if err != nil {
			t.Fatal(err)
		}
		if p.Pending == nil {
			return
		}
		time.Sleep(time.Until(p.Pending.SettlesAt))
	}
}

// seedExpectation is what a pass must count.
type seedExpectation struct {
	tables map[string]migrate.TableStats
	apps   migrate.AppsReport
	// landed counts the records that land; private the namespaces made
	// private (Notes', the created-content app's, games' and orphan's:
	// Todo List's was private, the behavior app's is by default).
	landed, private int
}

func (f *seedFixture) expected() seedExpectation {
	e := seedExpectation{tables: map[string]migrate.TableStats{}, private: 4,
		// Registered: Notes, Todo List, hmh, orphan and empty app;
		// known: games; refused: notes, bad\x01name and "trailing ".
		apps: migrate.AppsReport{Found: 9, Registered: 5, Known: 1, Refused: 3}}
	for _, r := range f.records {
		s := e.tables[r.table]
		s.Read++
		switch {
		case r.skip != "":
			s.Skipped++
		case r.conflict:
			s.Conflicts++
		default:
			s.Written++
			e.landed++
		}
		if raw, ok := r.item["value"].(*types.AttributeValueMemberS); ok && r.skip == "" && r.table != f.blob && raw.Value != r.data {
			s.Compacted++
		}
		e.tables[r.table] = s
	}
	// The apps table's 8 names: 4 registered, games known, 3 refused.
	e.tables[f.apps] = migrate.TableStats{Read: 8, Written: 4, Unchanged: 1, Skipped: 3}
	return e
}

func checkCounts(t *testing.T, step string, rep migrate.Seed000Report, want seedExpectation) {
	t.Helper()
	for _, tr := range rep.Tables {
		if got := tr.TableStats; got != want.tables[tr.Table] {
			t.Errorf("%s: %s counts %+v, want %+v", step, tr.Table, got, want.tables[tr.Table])
		}
	}
	got := rep.Apps
	got.Ignored = 0
	if got != want.apps || rep.Apps.Ignored < 2 {
		t.Errorf("%s: apps %+v, want %+v and the registry's records of games ignored", step, rep.Apps, want.apps)
	}
	if rep.Private != want.private {
		t.Errorf("%s: %d namespaces made private, want %d", step, rep.Private, want.private)
	}
}

func written(rep migrate.Seed000Report) int {
	n := 0
	for _, tr := range rep.Tables {
		if tr.Family != "apps" {
			n += tr.Written
		}
	}
	return n
}

// expectedLines are the report lines of a pass: each skipped record and
// conflict once, each refused app name and dropped description.
// The description of Todo List is dropped when the pass registers it.
func (f *seedFixture) expectedLines(t *testing.T, registers bool) map[string]string {
	t.Helper()
	want := map[string]string{
		"refused\t" + f.apps + "\tapp=\"notes\"":        "the registry compares names in any case",
		"refused\t" + f.apps + "\tapp=\"bad\\x01name\"": "must not contain control characters",
		"refused\t" + f.apps + "\tapp=\"trailing \"":    "the registry trims white space",
	}
	if registers {
		want["dropped\t"+f.apps+"\tapp=\"Todo List\""] = "the description is not kept"
	}
	for _, r := range f.records {
		switch {
		case r.conflict:
			want["conflict\t"+r.table+"\t"+f.sourceKey(r)] = "holds a different item"
		case r.skip != "":
			want["skipped\t"+r.table+"\t"+f.sourceKey(r)] = r.skip
		}
	}
	return want
}

// checkLines checks that every expected line came once with its reason,
// and no other.
func checkLines(t *testing.T, step string, got []string, want map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range got {
		i := strings.LastIndex(l, "\t")
		head, why := l[:max(i, 0)], l[i+1:]
		prefix, ok := want[head]
		switch {
		case !ok:
			t.Errorf("%s: unexpected line %q", step, l)
		case seen[head]:
			t.Errorf("%s: line reported twice: %q", step, l)
		case !strings.Contains(why, prefix):
			t.Errorf("%s: %q: reason %q, want %q", step, head, why, prefix)
		}
		seen[head] = true
	}
	for head := range want {
		if !seen[head] {
			t.Errorf("%s: no line for %q", step, head)
		}
	}
}

// checkLanded reads every record that lands back through the store: its
// value byte for byte, owner, audit fields and version.
func (f *seedFixture) checkLanded(t *testing.T, st *store.Store) {
	t.Helper()
	var landed []*seedRecord
	for _, r := range f.records {
		if r.lands() {
			landed = append(landed, r)
		}
	}
	for start := 0; start < len(landed); start += 100 {
		batch := landed[start:min(start+100, len(landed))]
		keys := make([]uds.Key, len(batch))
		for i, r := range batch {
			keys[i] = f.target(r)
		}
		items, errs := st.GetMany(context.Background(), keys)
		for i, r := range batch {
			it := items[i]
			switch {
			case errs[i] != nil:
				t.Errorf("%s: %v", storetest.KeyPath(keys[i]), errs[i])
			case r.blob != nil && (it.Binary == nil || !bytes.Equal(it.Binary.Bytes, r.blob) || it.Binary.ContentType != r.contentType):
				t.Errorf("%s: binary %+v, want %d bytes of %s", storetest.KeyPath(keys[i]), it.Binary, len(r.blob), r.contentType)
			case r.blob == nil && string(it.Data) != r.data:
				t.Errorf("%s: data %s, want %s", storetest.KeyPath(keys[i]), it.Data, r.data)
			case it.CreatedBy != r.user || it.UpdatedBy != r.user || it.Version != 1 ||
				!it.CreatedDate.Equal(r.created) || !it.UpdatedDate.Equal(r.updated):
				t.Errorf("%s: by %s/%s v%d %v %v, want %s v1 %v %v", storetest.KeyPath(keys[i]), it.CreatedBy, it.UpdatedBy, it.Version,
					it.CreatedDate, it.UpdatedDate, r.user, r.created, r.updated)
			}
		}
	}
}

// checkUsage checks that every owner's usage record counts their items,
// and that the records together count what the data table holds; that
// recompute, which sums each owner's items through the owner index, found
// no drift; that for one owner of each app the record equals what a scan
// of the tables finds; and that the owners of games over its 3 items are
// reported, not cut.
func (f *seedFixture) checkUsage(t *testing.T, plain *dynamodb.Client, tables store.Tables, st *store.Store, rep migrate.Seed000Report) {
	t.Helper()
	type owner struct{ app, user string }
	// counts are the records that land per owner; held what the owner
	// holds, with the item the conflicting record met.
	counts, held := map[owner]int64{}, map[owner]int64{}
	var owners []owner
	for _, r := range f.records {
		k := f.target(r)
		o := owner{k.App, k.Owner}
		if r.lands() {
			counts[o]++
		}
		if !r.lands() && !r.conflict {
			continue
		}
		if held[o] == 0 {
			owners = append(owners, o)
		}
		held[o]++
	}
	over := map[owner]bool{}
	for _, o := range rep.OverLimit {
		over[owner{o.App, o.Owner}] = true
		if o.Limit.Items != 3 || o.Used.Items != counts[owner{o.App, o.Owner}] {
			t.Errorf("over a limit: %+v, want %d items of 3", o, counts[owner{o.App, o.Owner}])
		}
	}
	var total uds.Usage
	scanned := map[string]bool{}
	for _, o := range owners {
		n := held[o]
		rec := storetest.RecordedUsage(t, plain, tables, o.app, o.user)
		if rec.Items != n {
			t.Errorf("%s in %s: usage %+v, want %d items", o.user, o.app, rec, n)
		}
		if !scanned[o.app] {
			scanned[o.app] = true
			if stored := storetest.StoredUsage(t, plain, tables, o.app, o.user); stored != rec {
				t.Errorf("%s in %s: usage %+v, the tables hold %+v", o.user, o.app, rec, stored)
			}
		}
		if want := o.app == gamesApp && n > 3; over[o] != want {
			t.Errorf("%s in %s: %d items, reported over the limit: %v", o.user, o.app, n, over[o])
		}
		total = total.Plus(rec)
	}
	if stored := tableUsage(t, plain, tables.Data); stored != total {
		t.Errorf("the data table holds %+v; the owners' usage records count %+v", stored, total)
	}
	if rep.Drifted != 0 || rep.Owners != len(counts) {
		t.Errorf("recompute: %d owners, %d with drift; want %d owners, none", rep.Owners, rep.Drifted, len(counts))
	}
	if rc, err := st.Recompute(context.Background(), owners[0].app, owners[0].user); err != nil || rc.Drift != (uds.Usage{}) {
		t.Errorf("recompute of %s in %s after the migration: %+v, %v", owners[0].user, owners[0].app, rc, err)
	}
}

// checkRegistry checks the names registered and the namespaces made
// private.
func (f *seedFixture) checkRegistry(t *testing.T, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	for name, id := range f.ids {
		reg, err := st.AppByName(ctx, name)
		if err != nil || reg.App != id || reg.Name != name {
			t.Errorf("registry: %q is %+v, %v; want app %s", name, reg, err, id)
		}
		if name == "empty app" {
			continue
		}
		if p, err := st.StoredPolicy(ctx, id, f.namespaces[name]); err != nil || p.Mode() != uds.AccessPrivate {
			t.Errorf("%s/%s: policy %+v, %v; want private", id, f.namespaces[name], p, err)
		}
	}
	if reg, _ := st.AppByName(ctx, "Notes"); reg.Description != "Notes of users" {
		t.Errorf("Notes: description %q", reg.Description)
	}
	if p, err := st.StoredPolicy(ctx, uds.BehaviorApp, migrate.DefaultBehaviorNamespace); err != nil || p.Mode() != uds.AccessPrivate {
		t.Errorf("the behavior namespace: %+v, %v", p, err)
	}
}

// checkServed reads a record of each family through the HTTP API, as its
// user: an app's JSON, created content, a blob, calculated behavior.
func (f *seedFixture) checkServed(t *testing.T, st *store.Store) {
	t.Helper()
	srv := httptest.NewServer(httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{Subject: httpapi.HeaderSubject, CursorSecret: []byte("m"), Logger: apitest.Logger(t)}))
	t.Cleanup(srv.Close)
	done := map[string]bool{}
	for _, r := range f.records {
		kind := r.table
		if r.app == "hmh" {
			kind = "hmh"
		}
		if !r.lands() || done[kind] {
			continue
		}
		done[kind] = true
		k := f.target(r)
		req, _ := http.NewRequest("GET", srv.URL+"/rest/api/v1/data/"+k.App+"/"+k.Namespace+"/"+url.PathEscape(k.ID), nil)
		req.Header.Set(httpapi.SubjectHeader, r.user)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		want := r.blob
		if want == nil {
			want = []byte(`"data":` + r.data)
		}
		if res.StatusCode != 200 || !bytes.Contains(body, want) {
			t.Errorf("GET %s as %s: %d %.200s, want %.200s", req.URL.Path, r.user, res.StatusCode, body, want)
		}
	}
}

// tableUsage is what a data table holds: its items and the sum of their
// sizes, read with a strongly consistent scan.
func tableUsage(t *testing.T, c *dynamodb.Client, table string) uds.Usage {
	t.Helper()
	var u uds.Usage
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#z"), ExpressionAttributeNames: map[string]string{"#z": schema.AttrItemSize}}
	for {
		out, err := c.Scan(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			u.Items++
			if n, ok := it[schema.AttrItemSize].(*types.AttributeValueMemberN); ok {
				size, _ := strconv.ParseInt(n.Value, 10, 64)
				u.Bytes += size
			}
		}
		if out.LastEvaluatedKey == nil {
			return u
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// A seed whose attributes have other names, whose app names and users are
// joined by another separator, and whose table lacks the user index is
// migrated all the same: discovery scans the table. On a terminal the
// progress is one line rewritten in place.
func TestMigrateSeed000OtherNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain, st, table, want := otherNamesSeed(t)
	var progress bytes.Buffer
	rep, err := migrate.Seed000(ctx, plain, st, otherNamesOptions(t, table, &progress))
	if err != nil {
		t.Fatal(err)
	}
	if tr := rep.Tables[0]; tr.Read != 30 || tr.Written != 30 || rep.Apps.Registered != 1 || rep.Private != 1 {
		t.Errorf("report %+v", rep)
	}
	app := migrate.AppIDOf("a::b")
	for path, data := range want {
		user, key, _ := strings.Cut(path, "/")
		it, err := st.Get(ctx, uds.Key{App: app, Namespace: "prefs", ID: key, Owner: user})
		if err != nil || string(it.Data) != data {
			t.Errorf("%s: %s, %v; want %s", path, it.Data, err, data)
		}
	}
	out := progress.String()
	if !strings.Contains(out, table+" has no index byUser: discovery scans the table") ||
		!strings.Contains(out, "\r\x1b[Kread/written/unchanged/skipped: "+table+" 30/30/0/0  ") ||
		strings.Contains(strings.TrimSuffix(out, "\n"), "records/s\n") {
		t.Errorf("progress on a terminal:\n%q", out)
	}
}

// The records of a person whose data an erase removes, or holds after,
// are left out, each named in the report; everyone else's are migrated.
// Importing them would be refused (uds.ErrErasing), which stopped every
// run until the erase's hold ended.
func TestMigrateSeed000LeavesOutErasedPeople(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain, st, table, want := otherNamesSeed(t)
	// The erase is done (the person holds nothing in UDS yet) and holds
	// their writes for a week.
	for e := (uds.Erasure{}); e.State != uds.ErasureDone; time.Sleep(50 * time.Millisecond) {
		var err error
		if e, err = st.EraseUser(ctx, store.EraseQuery{User: "user::1", HoldDays: 7}); err != nil {
			t.Fatal(err)
		}
	}
	var skipped bytes.Buffer
	opts := otherNamesOptions(t, table, io.Discard)
	opts.Skipped = &skipped
	rep, err := migrate.Seed000(ctx, plain, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	if tr := rep.Tables[0]; tr.Read != 30 || tr.Written != 20 || tr.Skipped != 10 {
		t.Errorf("report %+v, want 20 records written and user::1's 10 skipped", tr)
	}
	if n := strings.Count(skipped.String(), "its owner's data is erased"); n != 10 {
		t.Errorf("%d records named as left out for their owner's erase, want 10:\n%s", n, skipped.String())
	}
	app := migrate.AppIDOf("a::b")
	for path, data := range want {
		user, key, _ := strings.Cut(path, "/")
		it, err := st.Get(ctx, uds.Key{App: app, Namespace: "prefs", ID: key, Owner: user})
		switch {
		case user == "user::1" && !errors.Is(err, uds.ErrNotFound):
			t.Errorf("%s of the erased person: %s, %v; want it left out", path, it.Data, err)
		case user != "user::1" && (err != nil || string(it.Data) != data):
			t.Errorf("%s: %s, %v; want %s", path, it.Data, err, data)
		}
	}
}

// otherNamesSeed makes, beside UDS's tables and a store over them, a
// seed-000 JSON table whose attributes have other names, joined by "::",
// without the user index, holding 30 records of 3 users; want is each
// record's value by "user/key".
func otherNamesSeed(t *testing.T) (plain *dynamodb.Client, st *store.Store, table string, want map[string]string) {
	ctx := context.Background()
	plain = storetest.Client(t)
	tables := storetest.NewTables(t)
	st = store.New(plain, tables, store.WithRecomputeQuiet(0), store.WithPolicySettle(100*time.Millisecond))
	table = strings.TrimSuffix(tables.Data, schema.Data.DefaultName) + "json"
	_, err := plain.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS}},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = plain.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}) })
	want = map[string]string{}
	for i := range 30 {
		user, key := fmt.Sprintf("user::%d", i%3), fmt.Sprintf("k%d", i)
		item := map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "a::b" + "::" + user}, "sk": &types.AttributeValueMemberS{Value: key},
			"uid": &types.AttributeValueMemberS{Value: user}, "val": &types.AttributeValueMemberS{Value: fmt.Sprint(i)},
		}
		if _, err := plain.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
		want[user+"/"+key] = fmt.Sprint(i)
	}
	return plain, st, table, want
}

// otherNamesOptions migrate otherNamesSeed's table, its progress shown as
// on a terminal.
func otherNamesOptions(t *testing.T, table string, progress io.Writer) migrate.Seed000Options {
	names := migrate.DefaultSeed000Names()
	names.AppUser, names.Key, names.User, names.Value, names.Separator = "pk", "sk", "uid", "val", "::"
	return migrate.Seed000Options{
		Tables: migrate.Seed000Tables{JSON: table}, Names: names, AppNamespace: "prefs",
		ContentNamespace: migrate.DefaultContentNamespace, BehaviorNamespace: migrate.DefaultBehaviorNamespace,
		Segments: 2, PageItems: 10, Checkpoint: filepath.Join(t.TempDir(), "cp.json"), Progress: progress, Live: true,
	}
}
