package client

import (
	"context"
	"net/http"

	"github.com/udsproject/uds/pkg/uds"
)

// quotaModeBody is an app's quota mode as the admin route shows and takes
// it (a PUT sends Mode alone).
type quotaModeBody struct {
	ApplicationUUID string        `json:"applicationUuid,omitempty"`
	Mode            uds.QuotaMode `json:"mode"`
}

// QuotaMode reads how app's quotas are kept: uds.QuotaStrict, the
// default, or uds.QuotaStreamed.
func (c *Client) QuotaMode(ctx context.Context, app string) (uds.QuotaMode, error) {
	var m quotaModeBody
	_, err := c.call(ctx, request{method: http.MethodGet, path: adminApp(app) + "/quota-mode", retry: always}, &m, http.StatusOK)
	return m.Mode, err
}

// SetQuotaMode sets how app's quotas are kept and returns the mode as the
// server stored it. The server judges the mode: one it does not know is
// ErrInvalid, naming it.
func (c *Client) SetQuotaMode(ctx context.Context, app string, mode uds.QuotaMode) (uds.QuotaMode, error) {
	var m quotaModeBody
	err := c.putJSON(ctx, adminApp(app)+"/quota-mode", quotaModeBody{Mode: mode}, &m)
	return m.Mode, err
}
