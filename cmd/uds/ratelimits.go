package main

import (
	"errors"
	"strconv"
	"strings"

	"github.com/udsproject/uds/pkg/client"
)

// Rate limits (admin): an app's, per caller and for the whole app, and a
// user's override of the per-caller one.

// rateFlag is set-rate-limits' --per-caller and --per-app: R/B, or -1;
// nil when not given.
type rateFlag struct{ rate *client.Rate }

func (f *rateFlag) String() string {
	switch {
	case f == nil || f.rate == nil:
		return ""
	case f.rate.RequestsPerSecond == -1:
		return "-1"
	}
	return strconv.FormatInt(f.rate.RequestsPerSecond, 10) + "/" + strconv.FormatInt(f.rate.Burst, 10)
}

// Set reads R/B, whole numbers, or -1 alone. The server judges their
// bounds, and names the one it refuses.
func (f *rateFlag) Set(s string) error {
	if s == "-1" {
		f.rate = &client.Rate{RequestsPerSecond: -1}
		return nil
	}
	rs, bs, ok := strings.Cut(s, "/")
	r, errR := strconv.ParseInt(rs, 10, 64)
	b, errB := strconv.ParseInt(bs, 10, 64)
	if !ok || errR != nil || errB != nil {
		return errors.New("want R/B, requests a second and a burst, such as 10/20, or -1 for no limit")
	}
	f.rate = &client.Rate{RequestsPerSecond: r, Burst: b}
	return nil
}

// rate reads a rateFlag by name.
func (e *env) rate(name string) *client.Rate {
	return e.flags.Lookup(name).Value.(*rateFlag).rate
}

func rateLimits(e *env, args []string) error {
	if len(args) == 2 {
		l, err := e.c.UserRateLimits(e.ctx, args[0], args[1])
		if err != nil {
			return err
		}
		return e.writeJSON(l)
	}
	l, err := e.c.AppRateLimits(e.ctx, args[0])
	if err != nil {
		return err
	}
	return e.writeJSON(l)
}

// setRateLimits replaces an app's rate limits (a limit not given is
// removed) or a user's override, or with --clear removes them.
func setRateLimits(e *env, args []string) error {
	perCaller, perApp := e.rate("per-caller"), e.rate("per-app")
	clear := e.flag("clear") == "true"
	user := len(args) == 2
	switch {
	case clear && (perCaller != nil || perApp != nil):
		return usageError("--clear removes the limits: give it without --per-caller and --per-app")
	case user && perApp != nil:
		return usageError("a user's override sets --per-caller only; --per-app is the app's (uds set-rate-limits APP --per-app R/B)")
	case !clear && perCaller == nil && user:
		return usageError("give --per-caller R/B (or -1 for no limit), or --clear")
	case !clear && perCaller == nil && perApp == nil:
		return usageError("give --per-caller, --per-app or both (R/B, or -1 for no limit), or --clear")
	case clear && user:
		return e.c.ClearUserRateLimits(e.ctx, args[0], args[1])
	case clear:
		return e.c.ClearAppRateLimits(e.ctx, args[0])
	case user:
		l, err := e.c.SetUserRateLimits(e.ctx, args[0], args[1], *perCaller)
		if err != nil {
			return err
		}
		return e.writeJSON(l)
	}
	l, err := e.c.SetAppRateLimits(e.ctx, args[0], client.RateLimits{PerCaller: perCaller, PerApp: perApp})
	if err != nil {
		return err
	}
	return e.writeJSON(l)
}
