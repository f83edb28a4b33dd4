package httpapi

import (
	"context"
	"net/http"
	"strconv"

	"github.com/udsproject/uds/pkg/uds"
)

// QuotaModeStore reads and sets how an app's quotas are kept.
type QuotaModeStore interface {
	QuotaMode(ctx context.Context, app string) (uds.QuotaMode, error)
	SetQuotaMode(ctx context.Context, app string, mode uds.QuotaMode) error
}

// An app's quota mode (uds.QuotaMode): how its owners' usage is kept,
// charged by each write's transaction (strict) or summed from the tables'
// streams (streamed). The route reads and sets the mode alone; the
// limits stay where they are (/admin/apps/{app}/quota).

// quotaModeJSON is an app's quota mode as the route shows it.
type quotaModeJSON struct {
	ApplicationUUID string        `json:"applicationUuid"`
	Mode            uds.QuotaMode `json:"mode"`
}

// maxQuotaModeBody bounds a quota mode body, which names one short word.
const maxQuotaModeBody = 1 << 10

// quotaModeShape is the quota mode body, as a refusal of its form
// describes it.
const quotaModeShape = `{"mode": "strict" | "streamed"}`

func (a *API) getQuotaMode(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	mode, err := a.stores.QuotaModes.QuotaMode(r.Context(), app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, quotaModeJSON{ApplicationUUID: app, Mode: mode})
}

func (a *API) putQuotaMode(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	body, err := readBody(r, maxQuotaModeBody, "a quota mode body takes at most 1 KiB: "+quotaModeShape)
	var mode uds.QuotaMode
	if err == nil {
		mode, err = parseQuotaMode(body)
	}
	if err == nil {
		err = a.stores.QuotaModes.SetQuotaMode(r.Context(), app, mode)
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, quotaModeJSON{ApplicationUUID: app, Mode: mode})
}

// parseQuotaMode reads {"mode": "strict"} or {"mode": "streamed"}. The
// mode is required: a body without one would otherwise set strict, the
// default, which an operator who misspelt the member did not ask for.
func parseQuotaMode(body []byte) (uds.QuotaMode, error) {
	var b struct {
		Mode *string `json:"mode"`
	}
	if err := decodeBody(body, &b, quotaModeShape); err != nil {
		return "", err
	}
	if b.Mode == nil {
		return "", uds.Invalid("mode", "is required: %q or %q", uds.QuotaStrict, uds.QuotaStreamed)
	}
	mode, err := uds.ParseQuotaMode(*b.Mode)
	if err != nil {
		return "", uds.Invalid("mode", "must be %q or %q, got %s", uds.QuotaStrict, uds.QuotaStreamed, strconv.Quote(uds.Truncate(*b.Mode, 64)))
	}
	return mode, nil
}
