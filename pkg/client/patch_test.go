package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

func TestPatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newClient(t, apitest.Server(t, 10*time.Second), client.WithSubject("pat"))
	k := client.Key{App: app, Namespace: "prefs", ID: "pat"}
	if _, err := c.MergePatch(ctx, k, map[string]any{"theme": "dark"}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("a patch of nothing: %v, want ErrNotFound", err)
	}
	created, err := c.Create(ctx, k, json.RawMessage(`{"theme":"dark","level":3,"badges":[]}`), client.ClassName("Prefs"))
	if err != nil {
		t.Fatal(err)
	}
	it, err := c.MergePatch(ctx, k, json.RawMessage(`{"theme":null,"lang":"en"}`), client.IfMatch(created.ETag))
	if err != nil || string(it.Data) != `{"level":3,"badges":[],"lang":"en"}` || it.ClassName != "Prefs" || it.Version != 2 || it.ETag == created.ETag {
		t.Fatalf("merge patch: %+v, %v", it, err)
	}
	it, err = c.Patch(ctx, k, []client.PatchOp{
		{Op: "test", Path: "/level", Value: 3},
		{Op: "replace", Path: "/level", Value: 4},
		{Op: "add", Path: "/badges/-", Value: "streak"},
		{Op: "add", Path: "/note", Value: nil},
		{Op: "copy", From: "/lang", Path: "/fallback"},
	}, client.ClassName("Prefs2"), client.TTL(time.Hour))
	if err != nil || string(it.Data) != `{"level":4,"badges":["streak"],"lang":"en","note":null,"fallback":"en"}` || it.ClassName != "Prefs2" || it.ExpiresAt.IsZero() {
		t.Fatalf("JSON Patch: %+v, %v", it, err)
	}
	_, err = c.Patch(ctx, k, []client.PatchOp{{Op: "remove", Path: "/note"}, {Op: "test", Path: "/level", Value: 3}})
	var apiErr *client.APIError
	if !errors.Is(err, client.ErrConflict) || !errors.As(err, &apiErr) || apiErr.PatchOperation == nil ||
		*apiErr.PatchOperation != (client.PatchOperation{Index: 1, Op: "test", Path: "/level"}) {
		t.Errorf("a failed test: %v (%+v), want ErrConflict naming operation 1", err, apiErr)
	}
	if _, err := c.MergePatch(ctx, k, 1, client.IfMatch(created.ETag)); !errors.Is(err, client.ErrPreconditionFailed) {
		t.Errorf("a patch at a stale ETag: %v, want ErrPreconditionFailed", err)
	}

	// In a batch, one by one and all or none.
	other := client.Key{App: app, Namespace: "prefs", ID: "other"}
	results, err := c.Batch(ctx, app, false, []client.BatchOp{
		client.MergePatchItem(k, map[string]any{"lang": "fr"}),
		client.PatchItem(other, []client.PatchOp{{Op: "add", Path: "/a", Value: 1}}),
	})
	if err != nil || len(results) != 2 || results[0].Status != 200 || results[1].Status != 404 {
		t.Fatalf("batch: %+v, %v", results, err)
	}
	if it, err := results[0].Item(); err != nil || string(it.Data) != `{"level":4,"badges":["streak"],"lang":"fr","note":null,"fallback":"en"}` {
		t.Errorf("patched in a batch: %+v, %v", it, err)
	}
	_, err = c.Batch(ctx, app, true, []client.BatchOp{
		{Method: "POST", Key: other, Data: 1},
		client.PatchItem(k, []client.PatchOp{{Op: "test", Path: "/lang", Value: "de"}}),
	})
	if !errors.Is(err, client.ErrConflict) || !errors.As(err, &apiErr) || apiErr.FailedIndex == nil || *apiErr.FailedIndex != 1 || apiErr.PatchOperation == nil {
		t.Errorf("an atomic batch whose patch does not apply: %v (%+v)", err, apiErr)
	}
	if _, err := c.Get(ctx, other); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("the refused atomic batch wrote: %v", err)
	}
}
