// Package server wires configuration, the DynamoDB client, the store and the
// HTTP layer into one handler. The Lambda functions and the local server
// both build their handler here, so they differ only in how they host it.
package server

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// Build returns the API for the given route groups and the DynamoDB client
// it uses.
func Build(ctx context.Context, cfg config.Config, groups httpapi.Group, subject httpapi.SubjectFunc) (*httpapi.API, *dynamodb.Client, error) {
	client, err := store.NewClient(ctx, cfg.Endpoint)
	if err != nil {
		return nil, nil, err
	}
	st := store.New(client, cfg.Tables,
		store.WithDefaultLimits(uds.Limits{Bytes: cfg.DefaultLimitBytes, Items: cfg.DefaultLimitItems}),
		store.WithLimitsTTL(cfg.LimitsCacheTTL),
		store.WithRecomputeQuiet(cfg.RecomputeQuiet))
	api := httpapi.New(st, groups, httpapi.Config{
		Subject:         subject,
		CursorSecret:    cfg.CursorSecret,
		DeleteAllBudget: cfg.DeleteAllBudget,
		RequestBudget:   cfg.RequestBudget,
		Logger:          slog.Default(),
	})
	return api, client, nil
}
