// Command uds-local serves every UDS route group, the console under
// /console/ (where / redirects) and the OpenAPI document at /openapi.json,
// over plain HTTP for local development, against the DynamoDB
// endpoint in UDS_DYNAMODB_ENDPOINT (`make run` starts DynamoDB Local and
// sets it). It creates missing tables at start and stops cleanly on Ctrl-C
// or SIGTERM. When the data tables have streams, it reads them as the
// expiry function's event source mappings do (streampoll), so that the
// usage of apps in streamed mode is counted, unless UDS_LOCAL_STREAMS=off. Unless UDS_BUCKET or
// UDS_S3_ENDPOINT names another, it serves its own S3 engine for large
// values on UDS_S3_LISTEN_ADDR, bucket uds-local, with the objects under
// the directory -s3-data names (make run: .data/s3, beside DynamoDB
// Local's .data/dynamodb) or in memory.
//
// Everything it prints is a log line of one logger, at UDS_LOG_LEVEL: the
// startup line, a line per request, sweeps and failures; and, in text at
// INFO, the start banner after the startup line, a short block for a
// person. EMF records, which CloudWatch needs and a person does not, are
// written only with UDS_EMF=1.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/pkg/changes"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/console"
	"github.com/udsproject/uds/pkg/expiry"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/realtime"
	"github.com/udsproject/uds/pkg/server"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/streampoll"
)

func main() {
	initOnly := flag.Bool("init-only", false, "create missing tables and exit")
	s3Data := flag.String("s3-data", "", "keep the local S3 engine's objects under this directory (make run: .data/s3); without it, in memory")
	flag.Parse()
	cfg, err := config.LocalFromEnv()
	// A configuration error is logged too, by a logger made of what could
	// be read (text at INFO where the format or level was the error).
	logger := newLogger(os.Stdout, cfg)
	slog.SetDefault(logger)
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		if *initOnly {
			err = initTables(ctx, cfg)
		} else {
			err = run(ctx, cfg, *s3Data, logger, os.Stdout)
		}
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// Ctrl-C before the server was up cut the start short: that
			// is a stop, not a failure.
			err = nil
		}
		stop()
	}
	if err != nil {
		attrs := []any{slog.String("cause", err.Error())}
		var listen listenError
		if errors.As(err, &listen) && errors.Is(err, syscall.EADDRINUSE) {
			attrs = append(attrs, slog.String("hint", "another process listens there (a make run in another terminal?); stop it, or set "+listen.variable))
		}
		logger.Error("UDS failed", attrs...)
		os.Exit(1)
	}
}

// newLogger writes cfg's format at cfg's level to out: the request lines,
// as on Lambda, and every other line the server prints.
func newLogger(out io.Writer, cfg config.Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(out, opts))
	}
	return slog.New(slog.NewTextHandler(out, opts))
}

// initTables creates the tables that are missing (make engine-up).
func initTables(ctx context.Context, cfg config.Config) error {
	if cfg.Endpoint == "" {
		return errNoEndpoint
	}
	client, err := store.NewClient(ctx, cfg.Endpoint)
	if err != nil {
		return err
	}
	return createTables(ctx, client, cfg)
}

func createTables(ctx context.Context, client *dynamodb.Client, cfg config.Config) error {
	if err := store.CreateTables(ctx, client, cfg.Tables); err != nil {
		return fmt.Errorf("creating the tables at %s: %w", cfg.Endpoint, err)
	}
	if err := store.UpgradeTables(ctx, client, cfg.Tables); err != nil {
		return fmt.Errorf("upgrading the tables at %s: %w", cfg.Endpoint, err)
	}
	return nil
}

// envLocalStreams set to off keeps the server from reading the data
// tables' streams, as a deployment's API functions do not (its expiry
// function does, elsewhere): the load benchmark measures what a streamed
// write costs the API alone, without the poller's work on the same
// cores. The usage of apps in streamed mode then stays where it is. Only
// this command reads it, so it is named here, not in package config.
const envLocalStreams = "UDS_LOCAL_STREAMS"

// envDynamoDBData is the folder of the DynamoDB engine's data, which
// scripts/with-dynamodb.sh sets when the engine keeps its data in one
// (make run: .data/dynamodb): the start banner names it, as the server
// cannot learn it from the engine. Only this command reads it.
const envDynamoDBData = "UDS_DYNAMODB_DATA"

var errNoEndpoint = errors.New(config.EnvDynamoDBEndpoint + " is not set; start the server with `make run`")

// run serves the API until ctx is done, then shuts the server down,
// letting requests in hand finish. It listens before anything else, so an
// address in use is reported, as an error, before the server would say it
// listens. The local S3 engine, when it serves one (serveS3), keeps its
// objects under s3Dir (in memory when empty) and stops after the API. Log
// lines go to logger; the start banner and EMF records (UDS_EMF=1) to out.
func run(ctx context.Context, cfg config.Config, s3Dir string, logger *slog.Logger, out io.Writer) error {
	if cfg.Endpoint == "" {
		return errNoEndpoint
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return listenError{config.EnvListenAddr, err}
	}
	defer ln.Close()
	ownS3 := cfg.Bucket == "" && cfg.S3Endpoint == ""
	stopS3, err := serveS3(&cfg, s3Dir)
	if err != nil {
		return err
	}
	defer func() {
		stopping, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopS3(stopping); err != nil {
			logger.Error("stopping the local S3 engine failed", slog.String("cause", err.Error()))
		}
	}()
	host := server.Host{Logger: logger, Function: httpapi.GroupAll.Name(), RequestID: localRequestID,
		Subject: httpapi.AnonymousSubject, RefuseSubjectHeader: notTrustedHere}
	identity := "every caller is anonymous; a request with " + httpapi.SubjectHeader + " is refused (" + config.EnvTrustSubjectHeader + "=1 trusts it)"
	trusted := trustsSubjectHeader(ln.Addr(), cfg.TrustSubjectHeader)
	if trusted {
		host.Subject, host.RefuseSubjectHeader = httpapi.HeaderSubject, ""
		identity = "trusting " + httpapi.SubjectHeader + " for the caller's identity: local development only"
	}
	if cfg.EMF {
		host.Metrics = emf.NewWriter(out)
	}
	api, client, err := server.Build(ctx, cfg, httpapi.GroupAll, host)
	if err != nil {
		return err
	}
	if err := createTables(ctx, client, cfg); err != nil {
		return err
	}
	// The stream poller stops before the last line, as the requests do:
	// a batch in hand when the server stops is handed over again at the
	// next start.
	stopStreams, err := startStreams(ctx, client, cfg, logger, "streamed counting",
		[]string{cfg.Tables.Data, cfg.Tables.List, cfg.Tables.History},
		expiry.Handler(store.New(client, cfg.Tables), logger, host.Metrics))
	if err != nil {
		return err
	}
	defer stopStreams()
	// The realtime endpoint's hub shows each row of the changes feed as
	// the feed's writer lands it.
	hub := realtime.NewHub(api.RealtimeFeed(), logger)
	hubCtx, stopHub := context.WithCancel(ctx)
	defer stopHub()
	go hub.Run(hubCtx)
	defer hub.Close()
	// The changes feed's writer reads the data tables' streams too, with
	// a poller of its own: a second reader of each shard, as deployed.
	stopChanges, err := startStreams(ctx, client, cfg, logger, "the changes feed",
		[]string{cfg.Tables.Data, cfg.Tables.List},
		changes.Handler(store.New(client, cfg.Tables, store.WithLanded(hub.Landed)), logger))
	if err != nil {
		return err
	}
	defer stopChanges()
	// The sweep stops with the server, also when serving fails.
	sweepCtx, stopSweep := context.WithCancel(ctx)
	var sweeping sync.WaitGroup
	defer func() {
		stopSweep()
		sweeping.Wait()
	}()
	if cfg.SweepInterval > 0 {
		sweeping.Add(1)
		go func() {
			defer sweeping.Done()
			sweep(sweepCtx, store.New(client, cfg.Tables), cfg.SweepInterval, logger)
		}()
	}
	sweeping.Add(1)
	go func() {
		defer sweeping.Done()
		buildIndexes(sweepCtx, store.New(client, cfg.Tables), logger)
	}()
	root := "http://" + reachable(ln.Addr())
	logger.Info("UDS listening", slog.String("url", root+httpapi.BasePath),
		slog.String("console", root+console.Path), slog.String("dynamodb", cfg.Endpoint), slog.String("bucket", bucketAttr(cfg)), slog.String("identity", identity))
	if cfg.LogFormat != "json" && logger.Enabled(ctx, slog.LevelInfo) {
		s3 := bucketAttr(cfg)
		if ownS3 {
			s3 = cfg.S3Endpoint + ", bucket " + cfg.Bucket + ", " + dataIn(s3Dir)
		}
		dynamo := cfg.Endpoint
		if dir := os.Getenv(envDynamoDBData); dir != "" {
			dynamo += ", " + dataIn(dir)
		}
		_, _ = io.WriteString(out, banner(root, dynamo, s3, identity))
	}
	if trusted && !loopback(ln.Addr()) {
		logger.Warn("anyone who reaches this address can act as any caller: " + config.EnvTrustSubjectHeader + "=1 on a non-loopback address")
	}
	// The console beside the API (the page offers its caller field where
	// the server takes the caller from the header), and the root's
	// redirect to it and the OpenAPI document (site), all behind the
	// guard.
	handler := realtime.Beside(hub.Handler(api.RealtimeCaller), site(console.Mount(api, console.Local(trusted))))
	srv := &http.Server{Handler: guard(ln.Addr(), cfg, handler), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Shutdown leaves the realtime connections alone (they are no
	// longer HTTP): the hub ends them, telling their clients to come back.
	hub.Close()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	stopStreams()
	stopChanges()
	logger.Info("UDS stopped")
	return nil
}

// bannerTitle is the start banner's first line.
const bannerTitle = "UDS is running; Ctrl-C stops it."

// banner is the start banner: a few lines that tell a person where the
// API, the console and the OpenAPI document are (root is the server's
// URL), which engines hold the data and where (dynamo, s3), who the
// callers are, and how to stop. The startup line before it says the same
// for programs, which read it; in one line of key=value pairs it was hard
// to find in a terminal. The title is flush left and every other line
// indented, so the block reads apart from the log lines.
func banner(root, dynamo, s3, identity string) string {
	var b strings.Builder
	b.WriteString(bannerTitle + "\n")
	for _, row := range [][2]string{
		{"API", root + httpapi.BasePath},
		{"Console", root + console.Path},
		{"OpenAPI", root + openAPIPath},
		{"DynamoDB", dynamo},
		{"S3", s3},
		{"Callers", identity},
	} {
		fmt.Fprintf(&b, "  %-9s %s\n", row[0], row[1])
	}
	return b.String()
}

// dataIn says where an engine keeps its data: in dir, or in memory.
func dataIn(dir string) string {
	if dir == "" {
		return "in memory: gone when it stops"
	}
	return "data in " + dir
}

// startStreams stands in for a function's event source mappings (see
// streampoll): when the data tables have streams, a poller hands the
// records of the given tables' streams to handle, the function's handler,
// until stop is called; stop may be called more than once. The first two
// tables are the data tables: without their streams (tables made before
// the local tables had them) the server runs without the poller and says
// that what it serves (purpose) is off. A later table is read when it has
// a stream: the history table's only carries TTL deletions, which
// DynamoDB Local never makes. With UDS_LOCAL_STREAMS=off it reads none and
// says so (see envLocalStreams).
func startStreams(ctx context.Context, db *dynamodb.Client, cfg config.Config, logger *slog.Logger, purpose string, tables []string, handle streampoll.Handler) (stop func(), err error) {
	switch v := os.Getenv(envLocalStreams); v {
	case "", "on":
	case "off":
		logger.Warn(purpose + " is off: " + envLocalStreams + "=off")
		return func() {}, nil
	default:
		return nil, fmt.Errorf("%s: want on or off, got %q", envLocalStreams, v)
	}
	found, err := streampoll.Streams(ctx, db, tables...)
	if err != nil {
		return nil, err
	}
	var without []string
	for _, s := range found[:2] {
		if s.ARN == "" {
			without = append(without, s.Table)
		}
	}
	if len(without) > 0 {
		logger.Warn(purpose+" is off: the data tables have no streams", slog.String("without", strings.Join(without, ", ")))
		return func() {}, nil
	}
	streams, err := streampoll.NewClient(ctx, cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	p, err := streampoll.New(streams, slices.DeleteFunc(found, func(s streampoll.Stream) bool { return s.ARN == "" }),
		handle, streampoll.WithLogger(logger))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}, nil
}

// notTrustedHere is the local server's answer to a request that carries
// X-Uds-Subject when it does not trust the header: how to make it.
const notTrustedHere = "this server does not take the caller from " + httpapi.SubjectHeader +
	": every caller is anonymous here. To act as the header's subject, start it with " +
	config.EnvTrustSubjectHeader + "=1 (local development only: whoever reaches the server can then name any caller)"

// trustsSubjectHeader says whether the server takes the caller from
// X-Uds-Subject: as UDS_TRUST_SUBJECT_HEADER says when it is set, and
// otherwise only on a loopback address, which only this machine reaches.
// The decision is made on the address actually listened on, so a host
// name (localhost) counts as what it resolved to.
func trustsSubjectHeader(addr net.Addr, setting *bool) bool {
	if setting != nil {
		return *setting
	}
	return loopback(addr)
}

// reachable is addr as a URL's host: an address that listens on every
// interface (0.0.0.0, ::) is reached on this machine through localhost.
func reachable(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		return net.JoinHostPort("localhost", strconv.Itoa(tcp.Port))
	}
	return addr.String()
}

func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// localRequestID gives each request a random id in its log line, where
// Lambda's log handler would add the invocation's.
func localRequestID(*http.Request) (key, id string) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "requestId", hex.EncodeToString(b)
}

// sweep stands in for DynamoDB's TTL and the expiry function: DynamoDB
// Local's tables have no TTL deletion, so every interval the expired items
// still stored are removed and their usage released, as meeting them in a
// request would.
func sweep(ctx context.Context, st *store.Store, every time.Duration, logger *slog.Logger) {
	ticking(ctx, every, func() bool {
		n, err := st.SweepExpired(ctx)
		switch {
		case ctx.Err() != nil:
			// Stopping cut the sweep short; each removal is whole, and
			// the next start sweeps again.
			return false
		case err != nil:
			logger.Error("sweeping expired items failed", slog.String("cause", err.Error()))
		case n > 0:
			logger.Info("removed expired items", slog.Int("items", n))
		}
		return true
	})
}

// ticking calls work every interval until ctx ends or work reports that
// it should stop.
func ticking(ctx context.Context, every time.Duration, work func() bool) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !work() {
			return
		}
	}
}

// buildEvery is how often the local server looks for index builds to
// advance.
const buildEvery = 2 * time.Second

// buildIndexes advances every namespace's index build in the background,
// as an administrator's POST .../indexes/build would: locally an index is
// ready soon after its change settles, with no command to run.
func buildIndexes(ctx context.Context, st *store.Store, logger *slog.Logger) {
	ticking(ctx, buildEvery, func() bool {
		pending, err := st.PendingIndexBuilds(ctx)
		if err != nil && ctx.Err() == nil {
			logger.Error("listing index builds failed", slog.String("cause", err.Error()))
		}
		for _, np := range pending {
			if np.IndexBuild == nil || time.Now().Before(np.IndexBuild.SettlesAt) {
				continue
			}
			p, err := st.BuildIndexes(ctx, np.App, np.Namespace, buildEvery)
			switch {
			case ctx.Err() != nil:
				return false
			case err != nil:
				logger.Error("building indexes failed", slog.String("app", np.App), slog.String("namespace", np.Namespace), slog.String("cause", err.Error()))
			case p.IndexBuild == nil:
				logger.Info("indexes built", slog.String("app", np.App), slog.String("namespace", np.Namespace))
			}
		}
		return true
	})
}
