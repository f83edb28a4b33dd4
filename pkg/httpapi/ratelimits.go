package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/udsproject/uds/pkg/uds"
)

// RateLimitStore reads and sets rate limits.
type RateLimitStore interface {
	RatesInEffect(ctx context.Context, app, user string) (caller, whole uds.Rate, err error)
	AppRateLimits(ctx context.Context, app string) (uds.RateLimits, error)
	SetAppRateLimits(ctx context.Context, app string, r uds.RateLimits) error
	UserRateLimits(ctx context.Context, app, user string) (uds.Rate, error)
	SetUserRateLimits(ctx context.Context, app, user string, r uds.Rate) error
}

// Rate limits. Every data request (batches included) spends tokens of
// its caller's bucket in its app, and of the app's, before its handler
// runs: one token, or one per operation for a batch. A request over
// either limit is answered 429 and does nothing; so is a batch of more
// operations than either limit's burst, which no wait would let through.
// Admin routes are not limited.

// admit charges a data request n tokens and answers 429 when a limit
// refuses them, reporting whether the request may go on. The limits'
// state headers (RateLimit-Policy, RateLimit) go on every answer of a
// limited caller. A request whose app or caller is not known yet (a
// malformed one, which its handler refuses) is not charged; nor is any
// request when the limits cannot be read (they fail open, as the limiter
// does, and the handler meets the same store).
func (a *API) admit(w http.ResponseWriter, r *http.Request, p params, n int) bool {
	if a.limiter == nil {
		return true
	}
	app, err := uds.ParseApp(p.app)
	if err != nil {
		return true
	}
	subject, err := a.subject(r)
	if err != nil {
		return true
	}
	policies, states, err := a.charge(r.Context(), app, subject, n)
	setRateHeaders(w, policies, states)
	if err != nil {
		a.fail(w, r, err, &uds.Key{App: app})
		return false
	}
	return true
}

// charge spends n tokens of subject's bucket in app and of the app's, and
// returns the limits in effect and their state (for the rate headers),
// with a uds.RateLimitedError when a limit refuses them: then nothing is
// spent. Limits that cannot be read let everything through.
func (a *API) charge(ctx context.Context, app, subject string, n int) (policies, states []string, err error) {
	caller, whole, err := a.stores.RateLimits.RatesInEffect(ctx, app, subject)
	if err != nil {
		return nil, nil, nil
	}
	// spent is the tokens taken so far, given back when a later limit
	// refuses the request: it does nothing, and pays nothing.
	type spent struct {
		bucket string
		n      int64
	}
	var taken []spent
	for _, l := range [...]struct {
		name, bucket string
		rate         uds.Rate
	}{{"caller", "caller#" + app + "#" + subject, caller}, {"app", "app#" + app, whole}} {
		if !l.rate.On() {
			continue
		}
		d := a.limiter.Take(ctx, l.bucket, l.rate, int64(n))
		if d.Open {
			observationFrom(ctx).noteRateLimiterOpen(d.Cause)
			continue
		}
		policies = append(policies, strconv.Quote(l.name)+";q="+strconv.FormatInt(l.rate.PerSecond, 10)+";w=1")
		states = append(states, strconv.Quote(l.name)+";r="+strconv.FormatInt(d.Remaining, 10)+";t="+strconv.Itoa(seconds(d.RetryAfter)))
		if !d.Allowed {
			for _, t := range taken {
				a.limiter.Give(t.bucket, t.n)
			}
			refusal := &uds.RateLimitedError{Limit: l.name, Rate: l.rate, RetryAfter: d.RetryAfter}
			if d.OverBurst {
				refusal.Operations = n
			}
			return policies, states, refusal
		}
		taken = append(taken, spent{l.bucket, d.Charged})
	}
	return policies, states, nil
}

// setRateHeaders writes the limits and their state as
// draft-ietf-httpapi-ratelimit-headers words them: each limit's quota a
// second (q, w=1), and what remains of it (r) with the seconds until a
// request is let through again (t, 0 when one is now).
func setRateHeaders(w http.ResponseWriter, policies, states []string) {
	if len(policies) == 0 {
		return
	}
	w.Header().Set("RateLimit-Policy", strings.Join(policies, ", "))
	w.Header().Set("RateLimit", strings.Join(states, ", "))
}

// seconds is a wait in whole seconds, rounded up.
func seconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// rateJSON is a rate limit as the admin routes show and take it.
type rateJSON struct {
	RequestsPerSecond int64 `json:"requestsPerSecond"`
	Burst             int64 `json:"burst,omitempty"`
}

func rateBody(r uds.Rate) *rateJSON {
	if r == (uds.Rate{}) {
		return nil
	}
	return &rateJSON{RequestsPerSecond: r.PerSecond, Burst: r.Burst}
}

// rateLimitsJSON is an app's rate limits, or a user's override (perCaller
// only); null where none is set.
type rateLimitsJSON struct {
	ApplicationUUID string    `json:"applicationUuid"`
	User            string    `json:"user,omitempty"`
	PerCaller       *rateJSON `json:"perCaller"`
	PerApp          *rateJSON `json:"perApp,omitempty"`
}

func (a *API) getAppRateLimits(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	rl, err := a.stores.RateLimits.AppRateLimits(r.Context(), app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, appRatesBody(app, rl))
}

func appRatesBody(app string, rl uds.RateLimits) any {
	return struct {
		ApplicationUUID string    `json:"applicationUuid"`
		PerCaller       *rateJSON `json:"perCaller"`
		PerApp          *rateJSON `json:"perApp"`
	}{app, rateBody(rl.PerCaller), rateBody(rl.PerApp)}
}

func (a *API) putAppRateLimits(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	rl, err := readRateLimits(r, true)
	if err == nil {
		err = a.stores.RateLimits.SetAppRateLimits(r.Context(), app, rl)
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, appRatesBody(app, rl))
}

func (a *API) deleteAppRateLimits(w http.ResponseWriter, r *http.Request, p params) {
	app, err := uds.ParseApp(p.app)
	if err == nil {
		err = a.stores.RateLimits.SetAppRateLimits(r.Context(), app, uds.RateLimits{})
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) getUserRateLimits(w http.ResponseWriter, r *http.Request, p params) {
	app, user, err := appAndUser(p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	rate, err := a.stores.RateLimits.UserRateLimits(r.Context(), app, user)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, rateLimitsJSON{ApplicationUUID: app, User: user, PerCaller: rateBody(rate)})
}

func (a *API) putUserRateLimits(w http.ResponseWriter, r *http.Request, p params) {
	app, user, err := appAndUser(p)
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	rl, err := readRateLimits(r, false)
	if err == nil {
		err = a.stores.RateLimits.SetUserRateLimits(r.Context(), app, user, rl.PerCaller)
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	writeJSON(w, http.StatusOK, rateLimitsJSON{ApplicationUUID: app, User: user, PerCaller: rateBody(rl.PerCaller)})
}

func (a *API) deleteUserRateLimits(w http.ResponseWriter, r *http.Request, p params) {
	app, user, err := appAndUser(p)
	if err == nil {
		err = a.stores.RateLimits.SetUserRateLimits(r.Context(), app, user, uds.Rate{})
	}
	if err != nil {
		a.fail(w, r, err, nil)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// maxRateBody bounds a rate limits body.
const maxRateBody = 4 << 10

func readRateLimits(r *http.Request, perApp bool) (uds.RateLimits, error) {
	body, err := readBody(r, maxRateBody, fmt.Sprintf("a rate limits body takes at most %d bytes", maxRateBody))
	if err != nil {
		return uds.RateLimits{}, err
	}
	return parseRateLimits(body, perApp)
}

// parseRateLimits parses {"perCaller": {"requestsPerSecond": r, "burst":
// b}, "perApp": {...}}, either part optional or null (not set); perApp
// only where an app's limits are set. The numbers are read as sent, whole
// numbers: a rate from 1 to uds.MaxRatePerSecond with a burst of at least
// 1, or a requestsPerSecond of -1 alone, which lifts the limit at this
// level.
func parseRateLimits(body []byte, perApp bool) (uds.RateLimits, error) {
	shape := `{"perCaller": {"requestsPerSecond": n, "burst": n} | null}`
	var b struct {
		PerCaller json.RawMessage `json:"perCaller"`
		PerApp    json.RawMessage `json:"perApp"`
	}
	if perApp {
		shape = `{"perCaller": {"requestsPerSecond": n, "burst": n} | null, "perApp": {"requestsPerSecond": n, "burst": n} | null}`
		if err := decodeBody(body, &b, shape); err != nil {
			return uds.RateLimits{}, err
		}
	} else {
		var only struct {
			PerCaller json.RawMessage `json:"perCaller"`
		}
		if err := decodeBody(body, &only, shape); err != nil {
			return uds.RateLimits{}, err
		}
		b.PerCaller = only.PerCaller
	}
	var out uds.RateLimits
	for _, part := range []struct {
		field string
		raw   json.RawMessage
		to    *uds.Rate
	}{{"perCaller", b.PerCaller, &out.PerCaller}, {"perApp", b.PerApp, &out.PerApp}} {
		if !present(part.raw) {
			continue
		}
		var nums struct {
			RequestsPerSecond json.RawMessage `json:"requestsPerSecond"`
			Burst             json.RawMessage `json:"burst"`
		}
		if err := decodeBody(part.raw, &nums, `{"requestsPerSecond": n, "burst": n}`); err != nil {
			return out, uds.Invalid(part.field, "must be an object {\"requestsPerSecond\": n, \"burst\": n} or null")
		}
		for _, f := range []struct {
			name string
			raw  json.RawMessage
			to   *int64
		}{{"requestsPerSecond", nums.RequestsPerSecond, &part.to.PerSecond}, {"burst", nums.Burst, &part.to.Burst}} {
			if !present(f.raw) {
				continue
			}
			n, err := strconv.ParseInt(string(f.raw), 10, 64)
			if err != nil {
				return out, uds.Invalid(part.field+"."+f.name, "must be a whole number, got %s", uds.Truncate(string(f.raw), 64))
			}
			*f.to = n
		}
		if err := part.to.Validate(part.field); err != nil {
			return out, err
		}
	}
	return out, nil
}
