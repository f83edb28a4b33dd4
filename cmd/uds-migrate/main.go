// Command uds-migrate moves a seed deployment's data into UDS. Its two
// sources:
//   - seed002 (the default) adopts a seed deployment's data tables: it
//     adds the owner index to them, counts every item written before UDS in
//     its owner's usage, and recomputes the usage of every owner it touched;
//   - seed000 copies seed 000's tables (apps, appDataJson, appDataBlob,
//     calculatedBehavior, each optional) into UDS: app names into the
//     registry, every record into a private namespace of its app, owned by
//     its user; then it recomputes the usage of every owner.
//
// Tables are named as for the functions (UDS_TABLE_DATA, UDS_TABLE_LIST,
// UDS_TABLE_USAGE, UDS_TABLE_APPS, ...; seed 000's by flags); the AWS region
// and credentials come from the environment, or UDS_DYNAMODB_ENDPOINT names
// another endpoint. Both are resumable (-checkpoint) and idempotent;
// -dry-run changes nothing.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/migrate"
	"github.com/udsproject/uds/pkg/server"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

func main() {
	o := migrate.Options{Progress: os.Stderr}
	source := flag.String("source", "seed002", "what to migrate: seed002 (a seed deployment's data tables) or seed000 (seed 000's tables, named by the -seed000-* flags)")
	flag.BoolVar(&o.DryRun, "dry-run", false, "report what would change and change nothing")
	flag.IntVar(&o.Segments, "segments", 4, "parallel scan segments per table")
	flag.Float64Var(&o.WriteUnits, "write-units", 100, "write capacity units per second the migration may consume (0: no limit)")
	flag.StringVar(&o.DefaultOwner, "default-owner", httpapi.Anonymous, "seed002: owner of items that name no creator")
	flag.StringVar(&o.Checkpoint, "checkpoint", "", "progress file; a run resumes from it (default .uds-migrate.json, or .uds-migrate-seed000.json for -source seed000)")
	flag.DurationVar(&o.PollEvery, "poll", 0, "seed002: how often to check a new index (default 10s)")
	s0 := seed000Flags()
	flag.Parse()
	cfg, err := config.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client, err := store.NewClient(ctx, cfg.Endpoint)
	if err != nil {
		log.Fatal(err)
	}
	switch *source {
	case "seed002":
		if o.Checkpoint == "" {
			o.Checkpoint = ".uds-migrate.json"
		}
		o.Tables = cfg.Tables
		st := store.New(client, cfg.Tables, store.WithRecomputeQuiet(cfg.RecomputeQuiet))
		seed002(ctx, client, st, o)
	case "seed000":
		if o.Checkpoint == "" {
			o.Checkpoint = ".uds-migrate-seed000.json"
		}
		seed000(ctx, client, cfg, o, s0)
	default:
		log.Fatalf("-source %q: want seed002 or seed000", *source)
	}
}

func seed002(ctx context.Context, client *dynamodb.Client, st *store.Store, o migrate.Options) {
	rep, err := migrate.Run(ctx, client, st, o)
	if err != nil {
		log.Fatalf("migration stopped (run again to resume from %s): %v", o.Checkpoint, err)
	}
	fmt.Printf("indexes added: %v\nlegacy items: %d (%d bytes)\nadopted: %d\nremoved, their owner's data erased: %d\nchanged meanwhile: %d\nowners: %d\n",
		rep.IndexesCreated, rep.Legacy.Items, rep.Legacy.Bytes, rep.Adopted, rep.Erased, rep.Changed, len(rep.Owners))
	for _, ow := range rep.Owners {
		if ow.Drift.Items != 0 || ow.Drift.Bytes != 0 {
			fmt.Printf("drift %+v for %s in %s (applied: %v)\n", ow.Drift, ow.Owner, ow.App, ow.Applied)
		}
	}
}

// seed000Options are the flags of -source seed000.
type seed000Options struct {
	o                                        migrate.Seed000Options
	appIDs, skipped, date, createdContentApp string
}

func seed000Flags() *seed000Options {
	s := &seed000Options{o: migrate.Seed000Options{Names: migrate.DefaultSeed000Names()}}
	o, n := &s.o, &s.o.Names
	flag.StringVar(&o.Tables.Apps, "seed000-apps", "", "seed000: the apps table (app names and descriptions); empty: not migrated")
	flag.StringVar(&o.Tables.JSON, "seed000-json", "", "seed000: the appDataJson table; empty: not migrated")
	flag.StringVar(&o.Tables.Blob, "seed000-blob", "", "seed000: the appDataBlob table; empty: not migrated")
	flag.StringVar(&o.Tables.Behavior, "seed000-cb", "", "seed000: the calculatedBehavior table; empty: not migrated")
	flag.StringVar(&n.App, "seed000-app-attr", n.App, "seed000: the apps table's hash key, the app name")
	flag.StringVar(&n.Description, "seed000-description-attr", n.Description, "seed000: the apps table's description attribute")
	flag.StringVar(&n.AppUser, "seed000-app-user-attr", n.AppUser, "seed000: the data tables' hash key, app name + separator + user")
	flag.StringVar(&n.Key, "seed000-key-attr", n.Key, "seed000: the data tables' range key, the key")
	flag.StringVar(&n.User, "seed000-user-attr", n.User, "seed000: the user attribute (calculatedBehavior's hash key)")
	flag.StringVar(&n.Value, "seed000-value-attr", n.Value, "seed000: the value attribute")
	flag.StringVar(&n.ContentType, "seed000-content-type-attr", n.ContentType, "seed000: appDataBlob's content type attribute")
	flag.StringVar(&n.Created, "seed000-created-attr", n.Created, "seed000: the created date attribute (RFC 3339)")
	flag.StringVar(&n.Updated, "seed000-updated-attr", n.Updated, "seed000: the updated date attribute (RFC 3339)")
	flag.StringVar(&n.ByUser, "seed000-by-user-index", n.ByUser, "seed000: the data tables' keys-only index on the user, scanned to discover the apps")
	flag.StringVar(&n.Separator, "seed000-separator", n.Separator, "seed000: what joins the app name and the user in the data tables' hash key")
	flag.StringVar(&o.AppNamespace, "app-namespace", migrate.DefaultAppNamespace, "seed000: the namespace of an app's data (made private)")
	flag.StringVar(&o.ContentNamespace, "content-namespace", migrate.DefaultContentNamespace, "seed000: the namespace of created content, app name hmh (made private)")
	flag.StringVar(&o.BehaviorNamespace, "behavior-namespace", migrate.DefaultBehaviorNamespace, "seed000: the namespace of calculatedBehavior in the behavior app")
	flag.StringVar(&s.createdContentApp, "created-content-app", "", "seed000: the app that holds created content (default UDS_CREATED_CONTENT_APP, else the app the registry names hmh, else one derived from the name)")
	flag.StringVar(&s.appIDs, "app-ids", "", "seed000: a JSON file of app names to application UUIDs, for names the registry does not know")
	flag.StringVar(&s.skipped, "skipped", "", "seed000: file the skipped records, conflicts and refused app names are appended to, a line each (default: standard output)")
	flag.StringVar(&s.date, "seed000-date", migrate.DefaultSeed000Date.Format(time.RFC3339), "seed000: createdDate and updatedDate of records whose source has neither")
	flag.IntVar(&o.PageItems, "page-items", 0, "seed000: items per scan page (0: DynamoDB's 1 MB pages)")
	return s
}

func seed000(ctx context.Context, client *dynamodb.Client, cfg config.Config, base migrate.Options, s *seed000Options) {
	o := s.o
	o.DryRun, o.Segments, o.WriteUnits, o.Checkpoint = base.DryRun, base.Segments, base.WriteUnits, base.Checkpoint
	o.Progress, o.UDSApps = os.Stderr, cfg.Tables.Apps
	if st, err := os.Stderr.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
		o.Live = true
	}
	var err error
	if o.Date, err = time.Parse(time.RFC3339, s.date); err != nil {
		log.Fatalf("-seed000-date: %v", err)
	}
	o.CreatedContentApp = cfg.CreatedContentApp
	if s.createdContentApp != "" {
		if o.CreatedContentApp, err = uds.ParseApp(s.createdContentApp); err != nil {
			log.Fatalf("-created-content-app: %v", err)
		}
	}
	if s.appIDs != "" {
		if o.AppIDs, err = migrate.LoadAppIDs(s.appIDs); err != nil {
			log.Fatal(err)
		}
	}
	o.Skipped = os.Stdout
	if s.skipped != "" {
		f, err := os.OpenFile(s.skipped, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		o.Skipped = f
	}
	// The store as the functions configure theirs: the limits in effect
	// (which owners are over one), and the settle time of a change into
	// private (the functions' policy cache and request budget). The
	// created-content app is the one the run lands hmh's records in.
	st := store.New(client, cfg.Tables, append(server.StoreOptions(cfg), store.WithCreatedContentApp(o.CreatedContentApp))...)
	rep, err := migrate.Seed000(ctx, client, st, o)
	rep.WriteSummary(os.Stdout)
	if err != nil {
		log.Fatalf("migration stopped (run again to resume from %s): %v", o.Checkpoint, err)
	}
}
