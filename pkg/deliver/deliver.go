// Package deliver is the deliver function of the deployed realtime
// endpoint (pkg/wsgateway): it takes each connection's events from the
// FIFO queue, in order, through the realtime protocol (realtime.Steps)
// over the changes feed as the HTTP API reads it, and posts the answers
// to the connection. It is a package of its own so that the functions
// that only route or publish (realtime, changes) do not link the HTTP
// layer.
package deliver

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/lambdahost"
	"github.com/udsproject/uds/pkg/lambdamain"
	"github.com/udsproject/uds/pkg/realtime"
	"github.com/udsproject/uds/pkg/server"
	"github.com/udsproject/uds/pkg/wsgateway"
)

// Main is the deliver function's whole main. The feed is the kv
// function's feed route (the same policies, rate limits, error answers
// and cursors), built as that function builds its API.
func Main() {
	lambdamain.Start(func(ctx context.Context, cfg config.Config, logger *slog.Logger) (any, error) {
		e, err := wsgateway.EnvFromOS()
		if err == nil {
			err = e.Require(false, true)
		}
		if err != nil {
			return nil, err
		}
		c, err := wsgateway.NewClients(ctx, cfg, e)
		if err != nil {
			return nil, err
		}
		api, _, err := server.Build(ctx, cfg, httpapi.GroupKV, server.Host{
			Subject: lambdahost.Subject(cfg.SubjectClaim), RefuseSubjectHeader: lambdahost.AuthorizerOnly,
			Logger: logger, Function: wsgateway.FunctionDeliver,
		})
		if err != nil {
			return nil, err
		}
		engine := wsgateway.StepsEngine{Steps: realtime.NewSteps(api.RealtimeFeed(), time.Now)}
		return wsgateway.NewDeliverer(c.Conns, engine, c.Mgmt, logger, emf.NewWriter(os.Stdout)).Handle, nil
	})
}
