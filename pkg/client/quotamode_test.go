package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/uds"
)

// TestQuotaModeAdmin reads and sets an app's quota mode, in order, and
// has the server refuse a mode it does not know and an app that is no
// UUID, naming the field.
func TestQuotaModeAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := newClient(t, apitest.Server(t, 10*time.Second))
	set := func(app string, m uds.QuotaMode) func() (string, error) {
		return func() (string, error) {
			got, err := admin.SetQuotaMode(ctx, app, m)
			return string(got), err
		}
	}
	get := func(app string) func() (string, error) {
		return func() (string, error) {
			got, err := admin.QuotaMode(ctx, app)
			return string(got), err
		}
	}
	runSteps(t, []step{
		{"an app never set", get(app), "strict", nil, ""},
		{"set streamed", set(app, uds.QuotaStreamed), "streamed", nil, ""},
		{"read back", get(app), "streamed", nil, ""},
		{"a mode the server does not know", set(app, "eventual"), "", client.ErrInvalid, `Invalid mode: must be "strict" or "streamed", got "eventual"`},
		{"no mode", set(app, ""), "", client.ErrInvalid, "Invalid mode"},
		{"unchanged by the refusals", get(app), "streamed", nil, ""},
		{"switch back to strict", set(app, uds.QuotaStrict), "strict", nil, ""},
		{"read back strict", get(app), "strict", nil, ""},
		{"read of an app that is no UUID", get("not-an-app"), "", client.ErrInvalid, "Invalid applicationUuid"},
		{"set of an app that is no UUID", set("not-an-app", uds.QuotaStreamed), "", client.ErrInvalid, "Invalid applicationUuid"},
	})
}
