package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// TestExportUser stores a caller's JSON, list items and a large value in
// two apps, beside another caller's item, and exports the caller with
// uds export-user: apps.json names both apps, each app's file holds the
// caller's records there and no one else's, and the large value's bytes
// are in the folder. uds import puts each app's file into an empty
// deployment, whose export then holds the same records, the large value
// aside (an import leaves it out, and says so with exit 1).
func TestExportUser(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	const second = "0b4e7c4e-6f0a-4b43-9d53-2f6c1e0f6a11"
	large, want := fileOf(t, "scan.pdf", client.MaxInlineBytes+100)
	for _, args := range [][]string{
		{"create", app, "prefs", "theme", "--data", `{"dark":true}`},
		{"create", app, "progress", "unit1", "step1", "--data", `1`},
		{"create", second, "prefs", "theme", "--data", `{"dark":false}`},
		{"put", second, "files", "scan", "--file", large},
		{"create", app, "prefs", "bobs", "--data", `1`, "--subject", "bob"},
	} {
		if code, _, stderr := uds(t, srv, "", args...); code != 0 {
			t.Fatalf("%v: exit %d, %s", args, code, stderr)
		}
	}
	dir := t.TempDir()
	code, _, stderr := uds(t, srv, "", "export-user", "anonymous", "--out", dir)
	if code != 0 || !strings.Contains(stderr, "exported 4 records (1 large values) of 2 apps to "+dir) {
		t.Fatalf("export-user: exit %d, stderr %q", code, stderr)
	}
	var apps []client.UserApp
	if b, err := os.ReadFile(filepath.Join(dir, "apps.json")); err != nil || json.Unmarshal(b, &apps) != nil {
		t.Fatalf("apps.json: %s, %v", b, err)
	}
	if len(apps) != 2 || apps[0].ApplicationUUID != second || apps[1].ApplicationUUID != app || apps[0].UsedItems != 2 || apps[1].UsedItems != 2 {
		t.Errorf("apps.json holds %+v", apps)
	}
	records := map[string][]string{}
	for _, a := range []string{app, second} {
		b, err := os.ReadFile(filepath.Join(dir, a+".ndjson"))
		if err != nil {
			t.Fatal(err)
		}
		records[a] = strings.Split(strings.TrimSpace(string(b)), "\n")
		for _, r := range records[a] {
			if !strings.Contains(r, `"applicationUuid":"`+a+`"`) || !strings.Contains(r, `"owner":"anonymous"`) || strings.Contains(r, "downloadUrl") {
				t.Errorf("%s.ndjson holds %s", a, r)
			}
		}
	}
	if len(records[app]) != 2 || len(records[second]) != 2 {
		t.Fatalf("the files hold %d and %d records, want 2 and 2", len(records[app]), len(records[second]))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "large", second, "files", "scan", "v1")); err != nil || !bytes.Equal(b, want) {
		t.Errorf("the large value's file holds %d bytes, %v; want the %d put", len(b), err, len(want))
	}

	// Into an empty deployment, app by app.
	empty := apitest.Server(t, 10*time.Second)
	for _, a := range []string{app, second} {
		code, _, stderr := uds(t, empty, "", "import", a, "--file", filepath.Join(dir, a+".ndjson"))
		if wantCode := map[string]int{app: 0, second: 1}[a]; code != wantCode {
			t.Errorf("import of %s.ndjson: exit %d, want %d; stderr %q", a, code, wantCode, stderr)
		}
	}
	again := t.TempDir()
	if code, _, stderr := uds(t, empty, "", "export-user", "anonymous", "--out", again); code != 0 {
		t.Fatalf("export-user from the empty deployment: exit %d, %s", code, stderr)
	}
	for _, a := range []string{app, second} {
		b, err := os.ReadFile(filepath.Join(again, a+".ndjson"))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSpace(string(b)), "\n")
		kept := slices.DeleteFunc(slices.Clone(records[a]), func(r string) bool { return strings.Contains(r, `"large":true`) })
		if !slices.Equal(got, kept) {
			t.Errorf("%s exported again:\n%s\nwant:\n%s", a, strings.Join(got, "\n"), strings.Join(kept, "\n"))
		}
	}
}

// TestLargeValuePath checks that the file of a large value stays inside
// the export's folder whatever its key holds.
func TestLargeValuePath(t *testing.T) {
	for _, tc := range []struct {
		rec  client.Record
		want string
	}{
		{client.Record{ApplicationUUID: app, Namespace: "files", ID: "scan", Version: 3}, "large/" + app + "/files/scan/v3"},
		{client.Record{ApplicationUUID: app, Namespace: "files", ID: "..", SortKey: "../../etc", Version: 1, KeptAt: "2026-01-01T00:00:00.000Z"},
			"large/" + app + "/files/%2E%2E/..%2F..%2Fetc/v1-kept"},
		{client.Record{ApplicationUUID: app, Namespace: ".", ID: "a b", Version: 2}, "large/" + app + "/%2E/a%20b/v2"},
	} {
		if got := filepath.ToSlash(largeValuePath(tc.rec)); got != tc.want {
			t.Errorf("largeValuePath(%+v) = %q, want %q", tc.rec, got, tc.want)
		}
	}
}

// TestEraseUser erases a caller with uds erase-user: without --yes it
// refuses and erases nothing; with it, it runs the erase to its end and
// prints the receipt, after which the caller's export is empty, the other
// caller's item is there, and --status prints the receipt again.
func TestEraseUser(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	for _, args := range [][]string{
		{"create", app, "prefs", "theme", "--data", `{"dark":true}`, "--subject", "carol"},
		{"create", app, "progress", "unit1", "step1", "--data", `1`, "--subject", "carol"},
		{"create", app, "prefs", "bobs", "--data", `1`, "--subject", "bob"},
	} {
		if code, _, stderr := uds(t, srv, "", args...); code != 0 {
			t.Fatalf("%v: exit %d, %s", args, code, stderr)
		}
	}
	if code, _, stderr := uds(t, srv, "", "erase-user", "carol"); code != 2 || !strings.Contains(stderr, "--yes") {
		t.Fatalf("erase-user without --yes: exit %d, %q", code, stderr)
	}
	if code, _, _ := uds(t, srv, "", "get", app, "prefs", "theme", "--subject", "carol"); code != 0 {
		t.Fatal("erase-user without --yes erased")
	}
	code, stdout, stderr := uds(t, srv, "", "erase-user", "carol", "--yes", "--hold-days", "1")
	var receipt client.Erasure
	if code != 0 || json.Unmarshal([]byte(stdout), &receipt) != nil || !receipt.Done() || receipt.HoldDays != 1 ||
		receipt.Erased[app]["items"] != 1 || receipt.Erased[app]["listItems"] != 1 || receipt.Erased[app]["records"] != 1 {
		t.Fatalf("erase-user: exit %d, %s, stderr %q", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "erased 3 records of carol in 1 apps") {
		t.Errorf("erase-user said %q", stderr)
	}
	dir := t.TempDir()
	if code, _, stderr := uds(t, srv, "", "export-user", "carol", "--out", dir); code != 0 || !strings.Contains(stderr, "exported 0 records") {
		t.Errorf("export-user after the erase: exit %d, %q", code, stderr)
	}
	if code, _, _ := uds(t, srv, "", "get", app, "prefs", "bobs"); code != 0 {
		t.Error("the other caller's item went")
	}
	code, stdout, _ = uds(t, srv, "", "erase-user", "carol", "--status")
	var again client.Erasure
	if code != 0 || json.Unmarshal([]byte(stdout), &again) != nil || again.EndedAt != receipt.EndedAt {
		t.Errorf("erase-user --status: exit %d, %s", code, stdout)
	}
}
