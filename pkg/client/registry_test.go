package client_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// TestAppRegistry registers, finds, lists and unregisters apps through
// the client, in order, against the server: each step's answer, or its
// error and a part of the error's text.
func TestAppRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := newClient(t, apitest.Server(t, 10*time.Second))
	const third = "3c0f7e2a-9b1d-4c5e-8f6a-7d2b1e0c9a84"
	names := func(apps []client.App) string {
		var out []string
		for _, a := range apps {
			out = append(out, a.Name+"="+a.ApplicationUUID)
		}
		return strings.Join(out, ",")
	}
	shown := func(a client.App) string {
		limits := "none"
		if a.Limits != nil {
			limits = fmt.Sprintf("%d/%d", a.Limits.LimitBytes, a.Limits.LimitItems)
		}
		if a.CreatedDate.IsZero() || a.UpdatedDate.Before(a.CreatedDate) {
			return fmt.Sprintf("dates %v, %v", a.CreatedDate, a.UpdatedDate)
		}
		return fmt.Sprintf("%s %q %q limits %s", a.ApplicationUUID, a.Name, a.Description, limits)
	}
	one := func(call func() (client.App, error)) func() (string, error) {
		return func() (string, error) {
			a, err := call()
			return shown(a), err
		}
	}
	runSteps(t, []step{
		{"not registered", one(func() (client.App, error) { return admin.App(ctx, app) }), "", client.ErrNotFound, "404 App not registered"},
		{"register", one(func() (client.App, error) { return admin.RegisterApp(ctx, app, "Fitness", "Workouts and goals") }),
			app + ` "Fitness" "Workouts and goals" limits none`, nil, ""},
		{"read back", one(func() (client.App, error) { return admin.App(ctx, app) }),
			app + ` "Fitness" "Workouts and goals" limits none`, nil, ""},
		{"the name in another case", one(func() (client.App, error) { return admin.RegisterApp(ctx, otherApp, "FITNESS", "") }),
			"", client.ErrConflict, "409 App name taken: the name \"FITNESS\" is registered by app " + app},
		{"a name the server refuses", one(func() (client.App, error) { return admin.RegisterApp(ctx, otherApp, " ", "") }),
			"", client.ErrInvalid, "400 Invalid name"},
		{"found by name", one(func() (client.App, error) { return admin.AppByName(ctx, "fitness") }),
			app + ` "Fitness" "Workouts and goals" limits none`, nil, ""},
		{"a name nobody has", one(func() (client.App, error) { return admin.AppByName(ctx, "Journal") }),
			"", client.ErrNotFound, `no app is registered under the name "Journal"`},
		{"limits shown", func() (string, error) {
			if _, err := admin.SetAppLimits(ctx, app, client.Limits{LimitItems: 10}); err != nil {
				return "", err
			}
			a, err := admin.App(ctx, app)
			return shown(a), err
		}, app + ` "Fitness" "Workouts and goals" limits 0/10`, nil, ""},
		{"renamed, its description removed", one(func() (client.App, error) { return admin.RegisterApp(ctx, app, "fitness tracker", "") }),
			app + ` "fitness tracker" "" limits 0/10`, nil, ""},
		{"the old name is free", one(func() (client.App, error) { return admin.RegisterApp(ctx, otherApp, "FITNESS", "") }),
			otherApp + ` "FITNESS" "" limits none`, nil, ""},
		{"a third", one(func() (client.App, error) { return admin.RegisterApp(ctx, third, "Diary", "") }),
			third + ` "Diary" "" limits none`, nil, ""},
		{"every app, by name", func() (string, error) {
			var all []client.App
			for a, err := range admin.Apps(ctx) {
				if err != nil {
					return "", err
				}
				all = append(all, a)
			}
			return names(all), nil
		}, "Diary=" + third + ",FITNESS=" + otherApp + ",fitness tracker=" + app, nil, ""},
		{"a page and its cursor", func() (string, error) {
			first, cursor, err := admin.AppsPage(ctx, "", 2)
			if err != nil || cursor == "" {
				return names(first) + " and no cursor", err
			}
			rest, end, err := admin.AppsPage(ctx, cursor, 2)
			return names(first) + " then " + names(rest) + fmt.Sprintf(" (cursor %q)", end), err
		}, "Diary=" + third + ",FITNESS=" + otherApp + " then fitness tracker=" + app + ` (cursor "")`, nil, ""},
		{"unregister", func() (string, error) { return "", admin.UnregisterApp(ctx, app) }, "", nil, ""},
		{"unregister again", func() (string, error) { return "", admin.UnregisterApp(ctx, app) }, "", nil, ""},
		{"gone", one(func() (client.App, error) { return admin.App(ctx, app) }), "", client.ErrNotFound, "404 App not registered"},
		{"its limits stay", func() (string, error) {
			l, err := admin.AppLimits(ctx, app)
			return fmt.Sprintf("%d/%d", l.LimitBytes, l.LimitItems), err
		}, "0/10", nil, ""},
	})
}
