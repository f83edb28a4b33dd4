// Package server wires configuration, the DynamoDB client, the store and the
// HTTP layer into one handler. The Lambda functions and the local server
// both build their handler here, so they differ only in how they host it.
package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/internal/lambdalog"
	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/ratelimit"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// Host is what the process serving the API provides: who the caller is,
// and why a request naming itself in httpapi.SubjectHeader is refused
// where that header is not trusted (empty where it is); where request
// lines and metrics go; and the function's name in metric dimensions.
type Host struct {
	Subject             httpapi.SubjectFunc
	RefuseSubjectHeader string
	Logger              *slog.Logger
	LambdaLog           *lambdalog.Writer
	RequestID           func(*http.Request) (key, id string)
	Metrics             *emf.Writer
	Function            string
}

// Build returns the API for the given route groups and the DynamoDB client
// it uses.
func Build(ctx context.Context, cfg config.Config, groups httpapi.Group, host Host) (*httpapi.API, *dynamodb.Client, error) {
	client, err := store.NewClient(ctx, cfg.Endpoint)
	if err != nil {
		return nil, nil, err
	}
	bucket, err := blob.FromConfig(ctx, cfg.Bucket, cfg.S3Endpoint)
	if err != nil {
		return nil, nil, err
	}
	opts := StoreOptions(cfg)
	// Without a bucket, large values are refused (501) and the rest works.
	var objects httpapi.Bucket
	if bucket != nil {
		o := blob.Objects{Bucket: bucket}
		objects = o
		opts = append(opts, store.WithObjects(o))
	}
	st := store.New(client, cfg.Tables, opts...)
	api := httpapi.New(httpapi.StoresOf(st), groups, httpapi.Config{
		Subject:             host.Subject,
		RefuseSubjectHeader: host.RefuseSubjectHeader,
		CursorSecret:        cfg.CursorSecret,
		DeleteAllBudget:     cfg.DeleteAllBudget,
		RequestBudget:       cfg.RequestBudget,
		Logger:              host.Logger,
		LambdaLog:           host.LambdaLog,
		RequestID:           host.RequestID,
		Metrics:             host.Metrics,
		Function:            host.Function,
		RouteMetrics:        cfg.RouteMetrics,
		Limiter:             ratelimit.New(st, time.Now),
		Bucket:              objects,
	})
	return api, client, nil
}

// StoreOptions configures a store as the configuration says: the limits
// and rate limits in effect, how long they and policies are cached, the
// quiet time of recompute, the created-content app, and the settle time of
// a change into or out of private, which waits for the longest a function
// caches a policy and a request may take (on Lambda the function's
// timeout may cut a request shorter, never longer). The functions, the
// local server and the migration share it.
func StoreOptions(cfg config.Config) []store.Option {
	budget := cfg.RequestBudget
	if budget <= 0 {
		budget = config.DefaultRequestBudget
	}
	opts := []store.Option{
		store.WithDefaultLimits(uds.Limits{Bytes: cfg.DefaultLimitBytes, Items: cfg.DefaultLimitItems}),
		store.WithDefaultRateLimits(uds.RateLimits{PerCaller: cfg.RatePerCaller, PerApp: cfg.RatePerApp}),
		store.WithLimitsTTL(cfg.LimitsCacheTTL),
		store.WithRecomputeQuiet(cfg.RecomputeQuiet),
		store.WithPolicySettle(store.PolicySettle(cfg.LimitsCacheTTL, budget)),
		store.WithCreatedContentApp(cfg.CreatedContentApp),
	}
	if cfg.NoStreamedQuotas {
		opts = append(opts, store.WithoutStreams())
	}
	return opts
}
