// Command uds-local serves every UDS route group over plain HTTP for local
// development, against the DynamoDB endpoint in UDS_DYNAMODB_ENDPOINT
// (`make run` starts DynamoDB Local and sets it). It creates missing tables
// at start and stops cleanly on Ctrl-C.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/server"
	"github.com/udsproject/uds/pkg/store"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	initOnly := flag.Bool("init-only", false, "create missing tables and exit")
	flag.Parse()
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	if cfg.Endpoint == "" {
		return errors.New(config.EnvDynamoDBEndpoint + " is not set; start the server with `make run`")
	}
	subject := httpapi.AnonymousSubject
	if os.Getenv(config.EnvTrustSubjectHeader) == "1" {
		subject = httpapi.HeaderSubject
		log.Printf("trusting the %s header for the caller's identity (local testing only)", httpapi.SubjectHeader)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Request lines and EMF records both go to stdout, as on Lambda, and
	// UDS_LOG_LEVEL keeps the lines at its level or above, as there.
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	var handler slog.Handler = slog.NewTextHandler(os.Stdout, opts)
	if cfg.LogFormat == "json" {
		handler = slog.NewJSONHandler(os.Stdout, opts)
	}
	logger := slog.New(handler)
	slog.SetDefault(logger)
	api, client, err := server.Build(ctx, cfg, httpapi.GroupAll, server.Host{
		Subject: subject, Logger: logger, Metrics: emf.NewWriter(os.Stdout),
		Function: httpapi.GroupAll.Name(), RequestAttrs: localRequestID,
	})
	if err != nil {
		return err
	}
	if err := store.CreateTables(ctx, client, cfg.Tables); err != nil {
		return err
	}
	if *initOnly {
		return nil
	}
	if cfg.SweepInterval > 0 {
		go sweep(ctx, store.New(client, cfg.Tables), cfg.SweepInterval)
	}
	addr := os.Getenv(config.EnvListenAddr)
	if addr == "" {
		addr = config.DefaultListenAddr
	}
	srv := &http.Server{Addr: addr, Handler: api, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("UDS listening on http://%s%s (DynamoDB at %s)", addr, httpapi.BasePath, cfg.Endpoint)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// localRequestID gives each request a random id in its log line, where
// Lambda's log handler would add the invocation's.
func localRequestID(*http.Request) []slog.Attr {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return []slog.Attr{slog.String("requestId", hex.EncodeToString(b))}
}

// sweep stands in for DynamoDB's TTL and the expiry function: DynamoDB
// Local's tables have no TTL deletion, so every interval the expired items
// still stored are removed and their usage released, as meeting them in a
// request would.
func sweep(ctx context.Context, st *store.Store, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := st.SweepExpired(ctx); err != nil {
			log.Printf("sweeping expired items: %v", err)
		} else if n > 0 {
			log.Printf("removed %d expired items", n)
		}
	}
}
