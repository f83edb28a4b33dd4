// Package wsgateway is the deployed side of the realtime endpoint
// (docs/decisions/realtime.md): an API Gateway WebSocket API whose
// client messages are the protocol itself (route selection on the
// message's action), a connections table, and a FIFO queue that puts
// each connection's events in one line. Routes serves the API's routes,
// Deliverer takes the queue's events through the realtime engine and
// posts its messages (package deliver is its function), and Publisher,
// in the changes function, queues the rows the feed lands for the
// connections that watch their feeds.
package wsgateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/udsproject/uds/internal/awsconf"
	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/lambdamain"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
)

// The functions whose metrics the endpoint's EMF records name, as the
// stack's alarms read them.
const (
	FunctionDeliver = "deliver"
	FunctionChanges = "changes"
)

// Env is the endpoint's configuration beside config.Config.
type Env struct {
	Table, Queue, Callback string
	Issuer                 string
	Audiences              []string
}

// EnvFromOS reads the endpoint's environment. The queue and the callback
// are required of the functions that use them (Require).
func EnvFromOS() (Env, error) {
	e := Env{
		Table:    os.Getenv(schema.Connections.EnvVar),
		Queue:    os.Getenv(config.EnvRealtimeQueue),
		Callback: os.Getenv(config.EnvRealtimeCallback),
		Issuer:   os.Getenv(config.EnvJWTIssuer),
	}
	if e.Table == "" {
		e.Table = schema.Connections.DefaultName
	}
	for _, a := range strings.Split(os.Getenv(config.EnvJWTAudience), ",") {
		if a = strings.TrimSpace(a); a != "" {
			e.Audiences = append(e.Audiences, a)
		}
	}
	if (e.Issuer == "") != (len(e.Audiences) == 0) {
		return e, fmt.Errorf("%s and %s must be set together", config.EnvJWTIssuer, config.EnvJWTAudience)
	}
	return e, nil
}

// Require reports the named settings that are empty.
func (e Env) Require(queue, callback bool) error {
	var errs []error
	if queue && e.Queue == "" {
		errs = append(errs, fmt.Errorf("%s is not set", config.EnvRealtimeQueue))
	}
	if callback && e.Callback == "" {
		errs = append(errs, fmt.Errorf("%s is not set", config.EnvRealtimeCallback))
	}
	return errors.Join(errs...)
}

// Clients are what the endpoint's functions call: the connections table,
// the queue and the stage's Management API, from the one AWS
// configuration.
type Clients struct {
	Conns *Connections
	Queue *SQSQueue
	Mgmt  *Management
}

// NewClients builds the endpoint's clients for the environment e.
func NewClients(ctx context.Context, cfg config.Config, e Env) (*Clients, error) {
	db, err := store.NewClient(ctx, cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	aws, err := awsconf.Load(ctx, cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	mgmt, err := NewManagement(e.Callback, aws.Region, aws.Credentials, nil)
	if err != nil {
		return nil, err
	}
	return &Clients{
		Conns: NewConnections(db, e.Table),
		Queue: NewSQSQueue(sqs.NewFromConfig(aws), e.Queue),
		Mgmt:  mgmt,
	}, nil
}

// RoutesMain is the realtime function's whole main: the WebSocket API's
// routes.
func RoutesMain() {
	lambdamain.Start(func(ctx context.Context, cfg config.Config, logger *slog.Logger) (any, error) {
		e, err := EnvFromOS()
		if err == nil {
			err = e.Require(true, true)
		}
		if err != nil {
			return nil, err
		}
		c, err := NewClients(ctx, cfg, e)
		if err != nil {
			return nil, err
		}
		var auth Authenticator
		if e.Issuer != "" {
			auth = NewVerifier(e.Issuer, e.Audiences, cfg.SubjectClaim, nil)
		}
		return NewRoutes(c.Conns, c.Queue, c.Mgmt, auth, cfg.AllowedOrigins, logger).Handle, nil
	})
}

// LandedHook is the changes function's publisher's function
// (changes.Landed), where the stack deploys the realtime endpoint
// (config.EnvRealtimeQueue set); nil elsewhere.
func LandedHook(ctx context.Context, cfg config.Config, logger *slog.Logger) (func([]store.FeedRow), error) {
	e, err := EnvFromOS()
	if err != nil || e.Queue == "" {
		return nil, err
	}
	if err := e.Require(true, true); err != nil {
		return nil, err
	}
	c, err := NewClients(ctx, cfg, e)
	if err != nil {
		return nil, err
	}
	return NewPublisher(c.Conns, c.Queue, c.Mgmt, logger, emf.NewWriter(os.Stdout)).Landed, nil
}
