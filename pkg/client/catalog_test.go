package client_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// TestCatalogue lists, through the client, an app that holds data and is
// not registered, its namespaces, and a namespace's keys page by page.
func TestCatalogue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := apitest.Server(t, 10*time.Second)
	admin := newClient(t, url)
	if _, err := admin.RegisterApp(ctx, otherApp, "Empty", ""); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"erin", "frank"} {
		c := newClient(t, url, client.WithSubject(u))
		for j := range 3 {
			if _, err := c.Create(ctx, client.Key{App: app, Namespace: "notes", ID: fmt.Sprintf("%s-%d", u, j)}, map[string]int{"j": j}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Create(ctx, client.Key{App: app, Namespace: "notes", ID: "log", SortKey: u}, "hello"); err != nil {
			t.Fatal(err)
		}
	}
	var apps []string
	for a, err := range admin.AllApps(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		apps = append(apps, fmt.Sprintf("%s %s %v", a.ApplicationUUID, a.Name, a.Registered))
	}
	if want := []string{otherApp + " Empty true", app + "  false"}; !slices.Equal(apps, want) {
		t.Errorf("AllApps: %q, want %q", apps, want)
	}
	var namespaces []string
	for p, err := range admin.Namespaces(ctx, app) {
		if err != nil {
			t.Fatal(err)
		}
		namespaces = append(namespaces, fmt.Sprintf("%s %s %v %v", p.Namespace, p.Access, *p.HasPolicy, p.HeldSince != ""))
	}
	if want := []string{"notes shared false true"}; !slices.Equal(namespaces, want) {
		t.Errorf("Namespaces: %q, want %q", namespaces, want)
	}
	var keys []string
	for it, err := range admin.NamespaceItems(ctx, app, "notes", "frank") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, it.ID+"/"+it.SortKey+" "+it.Owner)
	}
	if want := []string{"frank-0/ frank", "frank-1/ frank", "frank-2/ frank", "log/frank frank"}; !slices.Equal(keys, want) {
		t.Errorf("NamespaceItems of frank: %q, want %q", keys, want)
	}
	page, cursor, err := admin.NamespaceItemsPage(ctx, app, "notes", client.NamespaceItemsQuery{Limit: 3, Newest: true})
	if err != nil || len(page) == 0 || cursor == "" || page[0].UpdatedDate.Before(page[len(page)-1].UpdatedDate) {
		t.Errorf("a page of 3, newest first: %+v, %q, %v", page, cursor, err)
	}
	if _, _, err := admin.NamespaceItemsPage(ctx, app, "notes", client.NamespaceItemsQuery{Limit: 500}); err == nil {
		t.Error("a limit of 500 was taken")
	}
}
