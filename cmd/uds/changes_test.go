package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// syncBuffer is a buffer a command writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// following is a run of the command line in the background, until stop.
type following struct {
	stdout, stderr syncBuffer
	stop           context.CancelFunc
	code           chan int
}

func follow(endpoint string, args ...string) *following {
	ctx, stop := context.WithCancel(context.Background())
	f := &following{stop: stop, code: make(chan int, 1)}
	go func() {
		f.code <- run(ctx, append([]string{"--endpoint", endpoint}, args...), strings.NewReader(""), &f.stdout, &f.stderr)
	}()
	return f
}

// await waits until the command's standard output holds want.
func (f *following) await(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(f.stdout.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("the output never held %s:\n%s\nstandard error:\n%s", want, f.stdout.String(), f.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// end stops the command as Ctrl-C does and returns its exit status.
func (f *following) end(t *testing.T) int {
	t.Helper()
	f.stop()
	select {
	case code := <-f.code:
		return code
	case <-time.After(30 * time.Second):
		t.Fatal("the command did not stop")
		return 0
	}
}

// lastCursor is the cursor a run's last line on standard error gives.
func lastCursor(t *testing.T, stderr string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	c, ok := strings.CutPrefix(lines[len(lines)-1], "cursor ")
	if !ok || c == "" {
		t.Fatalf("standard error does not end with the cursor: %q", stderr)
	}
	return c
}

// entries are a run's lines of the feed by key: the data of an item, or
// "deleted".
func entries(t *testing.T, stdout string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if line == "" {
			continue
		}
		var ch client.Change
		if err := json.Unmarshal([]byte(line), &ch); err != nil {
			t.Fatalf("not an entry of the feed: %q: %v", line, err)
		}
		got[ch.ID] = string(ch.Data)
		if ch.Deleted {
			got[ch.ID] = "deleted"
		}
	}
	return got
}

func TestChanges(t *testing.T) {
	// The waits of --follow, shortened; no other test follows a feed.
	saved := followWaits
	followWaits = waits{first: 20 * time.Millisecond, most: 100 * time.Millisecond}
	t.Cleanup(func() { followWaits = saved })
	srv := apitest.FeedServer(t, 10*time.Second)
	for _, id := range []string{"a", "b"} {
		if code, _, errOut := uds(t, srv, "", "create", app, "notes", id, "--data", `"`+id+`"`); code != 0 {
			t.Fatal(errOut)
		}
	}

	// From the beginning: the items as they are, one line each, and the
	// cursor to read on from.
	code, out, errOut := uds(t, srv, "", "changes", app, "notes", "--limit", "1")
	if got := entries(t, out); code != 0 || len(got) != 2 || got["a"] != `"a"` || got["b"] != `"b"` {
		t.Fatalf("exit %d, entries %v, stderr %q", code, got, errOut)
	}
	cursor := lastCursor(t, errOut)

	// Followed from there: a delete comes as a tombstone, an update as
	// the item, and Ctrl-C ends the command with status 0 and the cursor
	// reached.
	f := follow(srv, "changes", app, "notes", "--cursor", cursor, "--follow")
	if code, _, errOut := uds(t, srv, "", "rm", app, "notes", "a"); code != 0 {
		t.Fatal(errOut)
	}
	f.await(t, `"id":"a"`)
	if code, _, errOut := uds(t, srv, "", "put", app, "notes", "b", "--data", `"b2"`); code != 0 {
		t.Fatal(errOut)
	}
	f.await(t, `"b2"`)
	if code := f.end(t); code != 0 {
		t.Errorf("Ctrl-C: exit %d, stderr %q", code, f.stderr.String())
	}
	if got := entries(t, f.stdout.String()); len(got) != 2 || got["a"] != "deleted" || got["b"] != `"b2"` {
		t.Errorf("followed: %v", got)
	}
	followed := lastCursor(t, f.stderr.String())

	// Read on from the followed feed's cursor: nothing new. b2 may come
	// again (a row the changes function wrote a second time, when its
	// first write took over a second), as the feed's guide allows.
	code, out, errOut = uds(t, srv, "", "changes", app, "notes", "--cursor", followed)
	if got := entries(t, out); code != 0 || (out != "" && (len(got) != 1 || got["b"] != `"b2"`)) || lastCursor(t, errOut) == "" {
		t.Errorf("nothing new: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// A namespace changed into private: alice's cursor taken before
	// fails with 410 and says to read again from the beginning; --follow does
	// so, and says so.
	code, _, errOut = uds(t, srv, "", "--subject", "alice", "changes", app, "drafts")
	if code != 0 {
		t.Fatal(errOut)
	}
	drafts := lastCursor(t, errOut)
	if code, _, errOut := uds(t, srv, "", "set-policy", app, "drafts", "--access", "private"); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut = uds(t, srv, "", "--subject", "alice", "changes", app, "drafts", "--cursor", drafts)
	if code != 1 || out != "" || !strings.HasPrefix(errOut, "uds changes: 410 ") || !strings.Contains(errOut, "(read it again from the beginning, without --cursor, into an empty replica)") ||
		strings.Contains(errOut, "cursor "+drafts) {
		t.Errorf("an expired cursor: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	f = follow(srv, "--subject", "alice", "changes", app, "drafts", "--cursor", drafts, "--follow")
	f.await(t, `{"resync":true}`)
	if code, _, errOut := uds(t, srv, "", "--subject", "alice", "create", app, "drafts", "d", "--data", `"mine"`); code != 0 {
		t.Fatal(errOut)
	}
	f.await(t, `"mine"`)
	if code := f.end(t); code != 0 || !strings.Contains(f.stderr.String(), "reading the feed again from the beginning") {
		t.Errorf("--follow with an expired cursor: exit %d, stderr %q", code, f.stderr.String())
	}
}

// TestFollowWaits checks the waits of --follow: 1 s, doubling while
// nothing changes up to 30 s, and 1 s again after a change.
func TestFollowWaits(t *testing.T) {
	w := waits{first: time.Second, most: 30 * time.Second}
	var got []time.Duration
	wait := time.Duration(0)
	for _, changed := range []bool{false, false, false, false, false, false, false, true, false} {
		wait = w.next(wait, changed)
		got = append(got, wait)
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 1, 2}
	for i := range want {
		want[i] *= time.Second
	}
	if !slices.Equal(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
}
