package main

import (
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

func TestWatch(t *testing.T) {
	t.Parallel()
	srv := apitest.FeedServer(t, 10*time.Second)
	if code, _, errOut := uds(t, srv, "", "create", app, "notes", "a", "--data", `"a"`); code != 0 {
		t.Fatal(errOut)
	}

	// From the beginning: the item there before, then each write as it
	// commits, one line each; Ctrl-C ends the command with status 0 and
	// the cursor reached.
	w := follow(srv, "watch", app, "notes", "--cursor", "")
	w.await(t, `"a"`)
	if code, _, errOut := uds(t, srv, "", "create", app, "notes", "b", "--data", `"b"`); code != 0 {
		t.Fatal(errOut)
	}
	w.await(t, `"b"`)
	if code, _, errOut := uds(t, srv, "", "rm", app, "notes", "a"); code != 0 {
		t.Fatal(errOut)
	}
	w.await(t, `"deleted":true`)
	if code := w.end(t); code != 0 {
		t.Errorf("Ctrl-C: exit %d, stderr %q", code, w.stderr.String())
	}
	if got := entries(t, w.stdout.String()); len(got) != 2 || got["a"] != "deleted" || got["b"] != `"b"` {
		t.Errorf("watched: %v", got)
	}
	cursor := lastCursor(t, w.stderr.String())

	// One item, from that cursor: another item's writes are not its.
	w = follow(srv, "watch", app, "notes", "b", "--cursor", cursor)
	for _, args := range [][]string{{"create", app, "notes", "c", "--data", `"c2"`}, {"put", app, "notes", "b", "--data", `"b2"`}} {
		if code, _, errOut := uds(t, srv, "", args...); code != 0 {
			t.Fatal(errOut)
		}
	}
	w.await(t, `"b2"`)
	if code := w.end(t); code != 0 || strings.Contains(w.stdout.String(), `"c2"`) {
		t.Errorf("watching b: exit %d, stdout %q, stderr %q", code, w.stdout.String(), w.stderr.String())
	}

	// A namespace changed into private: alice's cursor taken before
	// starts her watch again from the beginning, which the command says.
	code, _, errOut := uds(t, srv, "", "--subject", "alice", "changes", app, "drafts")
	if code != 0 {
		t.Fatal(errOut)
	}
	drafts := lastCursor(t, errOut)
	if code, _, errOut := uds(t, srv, "", "set-policy", app, "drafts", "--access", "private"); code != 0 {
		t.Fatal(errOut)
	}
	w = follow(srv, "--subject", "alice", "watch", app, "drafts", "--cursor", drafts)
	w.await(t, `{"resync":true}`)
	if code, _, errOut := uds(t, srv, "", "--subject", "alice", "create", app, "drafts", "d", "--data", `"mine"`); code != 0 {
		t.Fatal(errOut)
	}
	w.await(t, `"mine"`)
	if code := w.end(t); code != 0 || !strings.Contains(w.stderr.String(), "reading the namespace again from the beginning") {
		t.Errorf("a cursor the feed no longer continues: exit %d, stderr %q", code, w.stderr.String())
	}

	// Refusals end the command with the server's error: an anonymous
	// caller in a private namespace, a sort key without its list.
	code, _, errOut = uds(t, srv, "", "watch", app, "drafts")
	if code != 1 || !strings.HasPrefix(errOut, "uds watch: 401 ") {
		t.Errorf("anonymous in a private namespace: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = uds(t, srv, "", "watch", app, "notes", "--sort-key", "s")
	if code != 2 || !strings.Contains(errOut, "--sort-key names a list item: give the list's ID too") {
		t.Errorf("--sort-key without ID: exit %d, stderr %q", code, errOut)
	}
}
