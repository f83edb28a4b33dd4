// Command uds-migrate adopts a seed deployment's data into UDS: it adds the
// owner index to the data tables, counts every item written before UDS in
// its owner's usage, and recomputes the usage of every owner it touched.
// Tables are named as for the functions (UDS_TABLE_DATA, UDS_TABLE_LIST,
// UDS_TABLE_USAGE, UDS_TABLE_APPS); the AWS region and credentials come
// from the environment, or UDS_DYNAMODB_ENDPOINT names another endpoint.
// It is resumable (-checkpoint) and idempotent; -dry-run changes nothing.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/migrate"
	"github.com/udsproject/uds/pkg/store"
)

func main() {
	o := migrate.Options{Progress: os.Stderr}
	flag.BoolVar(&o.DryRun, "dry-run", false, "report what would change and change nothing")
	flag.IntVar(&o.Segments, "segments", 4, "parallel scan segments per table")
	flag.Float64Var(&o.WriteUnits, "write-units", 100, "write capacity units per second the backfill may consume (0: no limit)")
	flag.StringVar(&o.DefaultOwner, "default-owner", httpapi.Anonymous, "owner of items that name no creator")
	flag.StringVar(&o.Checkpoint, "checkpoint", ".uds-migrate.json", "progress file; a run resumes from it")
	flag.DurationVar(&o.PollEvery, "poll", 0, "how often to check a new index (default 10s)")
	flag.Parse()
	cfg, err := config.FromEnv()
	if err != nil {
		log.Fatal(err)
	}
	o.Tables = cfg.Tables
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client, err := store.NewClient(ctx, cfg.Endpoint)
	if err != nil {
		log.Fatal(err)
	}
	st := store.New(client, cfg.Tables, store.WithRecomputeQuiet(cfg.RecomputeQuiet))
	rep, err := migrate.Run(ctx, client, st, o)
	if err != nil {
		log.Fatalf("migration stopped (run again to resume from %s): %v", o.Checkpoint, err)
	}
	fmt.Printf("indexes added: %v\nlegacy items: %d (%d bytes)\nadopted: %d\nchanged meanwhile: %d\nowners: %d\n",
		rep.IndexesCreated, rep.Legacy.Items, rep.Legacy.Bytes, rep.Adopted, rep.Changed, len(rep.Owners))
	for _, ow := range rep.Owners {
		if ow.Drift.Items != 0 || ow.Drift.Bytes != 0 {
			fmt.Printf("drift %+v for %s in %s (applied: %v)\n", ow.Drift, ow.Owner, ow.App, ow.Applied)
		}
	}
}
