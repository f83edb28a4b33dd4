// Package lambdamain is what every function's main does on Lambda: read
// the configuration once, build the handler at init, log through Lambda's
// log format at the configured level, and serve. It is its own package so
// that the expiry function does not link the HTTP layer.
package lambdamain

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/udsproject/uds/internal/lambdalog"
	"github.com/udsproject/uds/pkg/config"
)

// Start is what every function's main does: read the configuration once,
// build the handler (and its clients) at init with build, and serve events
// until the runtime stops the process. Logs go through NewLogger at the
// configured level; a configuration or init failure is logged at ERROR,
// which every level keeps, and ends the process with status 1, which
// Lambda reports as an init error.
func Start(build func(ctx context.Context, cfg config.Config, logger *slog.Logger) (any, error)) {
	cfg, err := config.FromEnv()
	logger := NewLogger(cfg.LogLevel)
	slog.SetDefault(logger)
	if err != nil {
		fatal(logger, fmt.Errorf("configuration: %w", err))
	}
	h, err := build(context.Background(), cfg, logger)
	if err != nil {
		fatal(logger, fmt.Errorf("init: %w", err))
	}
	lambda.Start(h)
}

func fatal(logger *slog.Logger, err error) {
	logger.Error("init failed", slog.String("cause", err.Error()))
	os.Exit(1)
}

// NewLogger returns the functions' logger: aws-lambda-go's handler, which
// follows the function's log format and adds the invocation's request id,
// keeping only the records at level or above. The stack leaves Lambda's
// own level filter at INFO, since Lambda files the EMF records, which
// have no level, as INFO: UDS_LOG_LEVEL applies the configured level
// here instead, to the log lines only.
func NewLogger(level slog.Level) *slog.Logger {
	return slog.New(levelHandler{Handler: lambdacontext.NewLogHandler(), level: level})
}

// jsonFormat says whether the function's log format is Lambda's JSON (the
// stack's), read at init as aws-lambda-go reads it.
var jsonFormat = os.Getenv("AWS_LAMBDA_LOG_FORMAT") == "JSON"

// LambdaLog returns the writer of request lines to stdout in Lambda's JSON
// log format when that is the function's format, and nil otherwise, where
// the lines go through the logger's handler (httpapi.Config.LambdaLog).
// The logger's level still applies to them.
func LambdaLog() *lambdalog.Writer {
	if !jsonFormat {
		return nil
	}
	return lambdalog.NewWriter(os.Stdout)
}

// levelHandler passes the records at level or above to the handler it
// wraps.
type levelHandler struct {
	slog.Handler
	level slog.Level
}

func (h levelHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= h.level && h.Handler.Enabled(ctx, level)
}

func (h levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{Handler: h.Handler.WithAttrs(attrs), level: h.level}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{Handler: h.Handler.WithGroup(name), level: h.level}
}
