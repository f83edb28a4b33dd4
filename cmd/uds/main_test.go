package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

const app = "d53065bd-f932-4841-83fb-849717d8df0f"

// uds runs the command line in-process against endpoint and returns its
// exit status and outputs.
func uds(t *testing.T, endpoint, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"--endpoint", endpoint}, args...), strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestUsageAndExitStatus(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	record := `{"namespace":"n","id":"i","owner":"o","data":1,"createdBySubject":"o","updatedBySubject":"o","version":1}`
	runCases(t, srv, []cliCase{
		{"help", []string{"--help"}, "", 0, "commands:", ""},
		{"no command", nil, "", 2, "", "usage: uds"},
		{"unknown command", []string{"frobnicate"}, "", 2, "", `unknown command "frobnicate"`},
		{"missing arguments", []string{"get", app, "ns"}, "", 2, "", "get takes APP NAMESPACE ID [SORTKEY]"},
		{"too many arguments", []string{"users", app, "extra"}, "", 2, "", "users takes APP"},
		{"an argument to a command that takes none", []string{"registry", "extra"}, "", 2, "", "registry takes no arguments"},
		{"unknown flag", []string{"get", app, "ns", "id", "--colour"}, "", 2, "", "flag provided but not defined: -colour"},
		{"data that is not JSON", []string{"create", app, "ns", "id", "--data", "{nope"}, "", 2, "", "--data is not JSON"},
		{"empty data", []string{"create", app, "ns", "id", "--data", ""}, "1", 2, "", "--data is empty"},
		{"an empty id", []string{"rm", app, "ns", ""}, "", 2, "", "ID is empty"},
		{"an empty sort key", []string{"rm", app, "ns", "id", ""}, "", 2, "", "SORTKEY is empty"},
		{"an empty user", []string{"quota", app, ""}, "", 2, "", "USER is empty"},
		// The reserved sort key names the list: sent, a delete would
		// delete the whole list.
		{"the sort key list", []string{"rm", app, "ns", "id", "list"}, "", 1, "", `the sort key "list" is reserved for the list itself`},
		{"not an endpoint", []string{"users", app, "--endpoint", "ftp://example.com"}, "", 2, "", `endpoint "ftp://example.com" is not an http(s) URL`},
		{"--token with --sigv4", []string{"--token", "jwt", "users", app, "--sigv4"}, "", 2, "", "--token and --sigv4 exclude each other"},
		{"set-quota without limits", []string{"set-quota", app}, "", 2, "", "give --bytes, --items or both"},
		{"set-quota of a user without limits", []string{"set-quota", app, "alice"}, "", 2, "", "give --bytes, --items or both"},
		{"set-quota --clear with limits", []string{"set-quota", app, "alice", "--clear", "--items", "3"}, "", 2, "", "give it without --bytes and --items"},
		{"set-rate-limits without limits", []string{"set-rate-limits", app}, "", 2, "", "give --per-caller, --per-app or both"},
		{"set-rate-limits of a user without --per-caller", []string{"set-rate-limits", app, "alice"}, "", 2, "", "give --per-caller R/B (or -1 for no limit), or --clear"},
		{"set-rate-limits of a user with --per-app", []string{"set-rate-limits", app, "alice", "--per-app", "5/5"}, "", 2, "", "a user's override sets --per-caller only"},
		{"set-rate-limits --clear with limits", []string{"set-rate-limits", app, "--clear", "--per-caller", "1/1"}, "", 2, "", "give it without --per-caller and --per-app"},
		{"set-rate-limits with a rate that is not R/B", []string{"set-rate-limits", app, "--per-caller", "10"}, "", 2, "",
			`invalid value "10" for flag -per-caller: want R/B, requests a second and a burst, such as 10/20, or -1 for no limit`},
		{"set-rate-limits with a rate the API refuses", []string{"set-rate-limits", app, "--per-app", "0/5"}, "", 1, "", "400 Invalid perApp.requestsPerSecond: must be a whole number from 1 to"},
		{"get with --version and --if-none-match", []string{"get", app, "ns", "id", "--version", "2", "--if-none-match", `"1-x"`}, "", 2, "", "--version and --if-none-match exclude each other"},
		{"restore without --version", []string{"restore", app, "ns", "id"}, "", 2, "", "--version is required"},
		{"restore with a version that is no number", []string{"restore", app, "ns", "id", "--version", "two"}, "", 2, "", `invalid value "two" for flag -version`},
		{"not found", []string{"get", app, "ns", "missing"}, "", 1, "", "404 Key not found"},
		{"refused by the API", []string{"get", "not-a-uuid", "ns", "id"}, "", 1, "", "400 Invalid applicationUuid"},
		// Bad input data is no usage error: the command line was right.
		{"data on standard input that is not JSON", []string{"create", app, "ns", "id"}, "{nope", 1, "", "the data read from standard input is not JSON"},
		{"an import line that is not a record", []string{"import", app}, record + "\n\n{\"namespace\": 1}\n", 1, "", "line 3 is not an exported record"},
	})
}

// cliCase is a command line, its standard input, and the exit status and
// parts of its output it must give.
type cliCase struct {
	name   string
	args   []string
	stdin  string
	code   int
	stdout string // a part of it
	stderr string // a part of it
}

// runCases runs each case against srv, in order, as a subtest.
func runCases(t *testing.T, srv string, cases []cliCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := uds(t, srv, tc.stdin, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

// TestErrorsHaveOnePrefix checks that a failed command's message starts
// with "uds COMMAND: " and goes on with what went wrong, without a second
// prefix from the client ("uds get: uds: 404 ..." before).
func TestErrorsHaveOnePrefix(t *testing.T) {
	srv := apitest.Server(t, 10*time.Second)
	if code, _, errOut := uds(t, srv, `{"v":1}`, "create", app, "ns", "taken"); code != 0 {
		t.Fatal(errOut)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // what follows "uds COMMAND: "
	}{
		{"get: an answer of the API", []string{"get", app, "ns", "missing"}, 1, "404 Key not found\n"},
		{"create: an answer of the API", []string{"create", app, "ns", "taken", "--data", "1"}, 1, "409 Key already exists\n"},
		{"put: an answer of the API", []string{"put", app, "ns", "taken", "--data", "2", "--if-match", `"9-x"`}, 1, "412 Precondition failed"},
		{"set-quota: an answer of the API", []string{"set-quota", "not-an-app", "--items", "1"}, 1, "400 Invalid applicationUuid: "},
		{"users: the client's own error", []string{"users", app, "--endpoint", "ftp://example.com"}, 2, `endpoint "ftp://example.com" is not an http(s) URL`},
		{"ls: no connection", []string{"ls", app, "ns", "list", "--endpoint", "http://127.0.0.1:1"}, 1, `Get "http://127.0.0.1:1/rest/api/v1/data/`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := uds(t, srv, "", tc.args...)
			if want := "uds " + tc.args[0] + ": " + tc.want; code != tc.code || !strings.HasPrefix(stderr, want) {
				t.Errorf("exit %d, stderr %q; want %d and a message starting %q", code, stderr, tc.code, want)
			}
		})
	}
}

// TestCommandHelp runs --help for every command: it prints the command's
// usage to standard output and exits 0, without calling the API.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	for name, cmd := range commands {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := uds(t, "http://127.0.0.1:1", "", name, "--help")
			if want := "usage: " + cmd.synopsis(name) + " [flags]"; code != 0 || !strings.HasPrefix(stdout, want) || !strings.Contains(stdout, cmd.short) || stderr != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want 0 and usage starting %q", code, stdout, stderr, want)
			}
		})
	}
}

// TestAWSConfigurationFailure checks that --sigv4 without a region to
// sign for is a failure (1), not a usage error: the command line is
// right, the environment is not.
func TestAWSConfigurationFailure(t *testing.T) {
	dir := t.TempDir()
	for name, value := range map[string]string{
		"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
	} {
		t.Setenv(name, value)
	}
	code, _, stderr := uds(t, "http://127.0.0.1:1", "", "--sigv4", "users", app)
	if code != 1 || !strings.HasPrefix(stderr, "uds users: no AWS region") {
		t.Errorf("exit %d, stderr %q; want 1 and the missing region named", code, stderr)
	}
}

func TestItemCommands(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	decode := func(out string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("not one JSON object: %q", out)
		}
		return m
	}
	code, out, errOut := uds(t, srv, `{"theme":"dark"}`, "--subject", "alice", "create", app, "prefs", "u1", "--class", "Prefs")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errOut)
	}
	created := decode(out)
	if created["className"] != "Prefs" || created["createdBySubject"] != "alice" || created["etag"] == "" {
		t.Errorf("created %v", created)
	}
	etag := created["etag"].(string)
	if code, out, _ := uds(t, srv, "", "get", app, "prefs", "u1", "--if-none-match", etag); code != 0 || out != "" {
		t.Errorf("get at the current ETag: %d %q, want nothing", code, out)
	}
	if code, _, errOut := uds(t, srv, "", "put", app, "prefs", "u1", "--data", `{"theme":"light"}`, "--if-match", `"9-x"`); code != 1 || !strings.Contains(errOut, "412") {
		t.Errorf("put at a stale ETag: %d %s", code, errOut)
	}
	code, out, _ = uds(t, srv, "", "put", "--data", `{"theme":"light","html":"<b>"}`, app, "prefs", "u1", "--if-match", etag)
	if code != 0 || decode(out)["version"] != 2.0 || !strings.Contains(out, `"html":"<b>"`) {
		t.Errorf("put: %d %s", code, out)
	}
	for i := range 5 {
		if code, _, errOut := uds(t, srv, fmt.Sprintf(`{"i":%d}`, i), "create", app, "feed", "u1", fmt.Sprintf("2024/01/%02d", i+1), "--ttl", "3600"); code != 0 {
			t.Fatalf("create list item: %s", errOut)
		}
	}
	code, out, _ = uds(t, srv, "", "ls", app, "feed", "u1", "--desc", "--limit", "2", "--end", "2024/01/05")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || decode(lines[0])["sortKey"] != "2024/01/04" || decode(lines[3])["expiresAt"] == nil {
		t.Errorf("ls: %d %q", code, out)
	}
	if code, _, errOut := uds(t, srv, "", "rm-list", app, "feed", "u1"); code != 0 {
		t.Errorf("rm-list: %s", errOut)
	}
	if code, out, _ := uds(t, srv, "", "ls", app, "feed", "u1"); code != 0 || out != "" {
		t.Errorf("ls after rm-list: %d %q", code, out)
	}
	if code, _, _ := uds(t, srv, "", "rm", app, "prefs", "u1"); code != 0 {
		t.Error("rm failed")
	}
	if code, _, _ := uds(t, srv, "", "get", app, "prefs", "u1"); code != 1 {
		t.Error("get after rm did not fail")
	}
}

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	for _, u := range []string{"alice", "bob"} {
		if code, _, errOut := uds(t, srv, "1", "--subject", u, "create", app, "n", u); code != 0 {
			t.Fatal(errOut)
		}
	}
	if code, out, _ := uds(t, srv, "", "users", app); code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"user":"bob"`) {
		t.Errorf("users: %d %q", code, out)
	}
	if code, out, _ := uds(t, srv, "", "apps", "alice"); code != 0 || !strings.Contains(out, app) {
		t.Errorf("apps: %d %q", code, out)
	}
	if code, out, _ := uds(t, srv, "", "set-quota", app, "--items", "5", "--bytes", "-1"); code != 0 || out != `{"limitBytes":-1,"limitItems":5}`+"\n" {
		t.Errorf("set-quota: %d %q", code, out)
	}
	if code, out, _ := uds(t, srv, "", "set-quota", app, "alice", "--items", "1"); code != 0 || !strings.Contains(out, `"limitItems":1`) {
		t.Errorf("set-quota for a user: %d %q", code, out)
	}
	if code, _, errOut := uds(t, srv, "1", "--subject", "alice", "create", app, "n", "second"); code != 1 || !strings.Contains(errOut, "Quota exceeded") {
		t.Errorf("create over the override: %d %s", code, errOut)
	}
	if code, _, _ := uds(t, srv, "", "set-quota", app, "alice", "--clear"); code != 0 {
		t.Error("set-quota --clear failed")
	}
	if code, _, errOut := uds(t, srv, "", "set-quota", app, "--clear"); code != 2 || !strings.Contains(errOut, "--clear takes a USER") {
		t.Errorf("--clear without a user: %d %s", code, errOut)
	}
	if code, out, _ := uds(t, srv, "", "quota", app, "alice"); code != 0 || !strings.Contains(out, `"limitItems":5`) || !strings.Contains(out, `"usedItems":1`) {
		t.Errorf("quota of alice: %d %q", code, out)
	}
	if code, out, _ := uds(t, srv, "", "--subject", "bob", "quota", app); code != 0 || !strings.Contains(out, `"user":"bob"`) {
		t.Errorf("own quota: %d %q", code, out)
	}
	if code, out, _ := uds(t, srv, "", "recompute", app, "alice"); code != 0 || !strings.Contains(out, `"drift":{"bytes":0,"items":0,"historyBytes":0}`) {
		t.Errorf("recompute: %d %q", code, out)
	}
}

// TestExportDeleteImportExport is the round trip of an app's data through
// files: several thousand records of several owners, key-value items and
// lists, values stored compressed, expiry, class names, items updated by
// others and a private namespace. Export, delete everything, import,
// export again: the same bytes, the same usage, no drift.
func TestExportDeleteImportExport(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("several thousand records")
	}
	ctx := context.Background()
	srv := apitest.Server(t, 20*time.Second)
	admin, err := client.New(srv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.SetPolicy(ctx, app, "mine", client.Policy{Access: "private"}); err != nil {
		t.Fatal(err)
	}
	owners := []string{"alice", "bob", "carol", "dave"}
	const listItems = 800 // per owner
	var wg sync.WaitGroup
	for o, owner := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _ := client.New(srv, client.WithSubject(owner))
			for b := range listItems / 100 {
				ops := make([]client.BatchOp, 100)
				for i := range ops {
					n := b*100 + i
					ops[i] = client.BatchOp{Method: "POST",
						Key:  client.Key{App: app, Namespace: "feeds", ID: fmt.Sprintf("list-%d", n%3), SortKey: fmt.Sprintf("%s/%05d", owner, n)},
						Data: map[string]any{"owner": o, "n": n, "text": strings.Repeat("word ", n%50)}}
					if n%7 == 0 {
						ops[i].Options = []client.CallOption{client.ClassName("Entry"), client.TTL(24 * time.Hour)}
					}
				}
				if _, err := c.Batch(ctx, app, false, ops); err != nil {
					t.Error(err)
					return
				}
			}
			for i := range 25 {
				// Over 4 KB: stored compressed.
				if _, err := c.Create(ctx, client.Key{App: app, Namespace: "docs", ID: fmt.Sprintf("%s-%d", owner, i)},
					map[string]any{"body": strings.Repeat(fmt.Sprintf("paragraph %d of %s. ", i, owner), 400)}); err != nil {
					t.Error(err)
				}
				if _, err := c.Create(ctx, client.Key{App: app, Namespace: "mine", ID: "notes", SortKey: fmt.Sprint(i)}, i); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	// Another subject updates alice's items: she stays their owner.
	other, _ := client.New(srv, client.WithSubject("erin"))
	for i := range 5 {
		if _, err := other.Update(ctx, client.Key{App: app, Namespace: "docs", ID: fmt.Sprintf("alice-%d", i)}, "edited"); err != nil {
			t.Fatal(err)
		}
	}
	total := len(owners) * (listItems + 50)

	code, first, errOut := uds(t, srv, "", "export", app)
	if code != 0 || strings.Count(first, "\n") != total || !strings.Contains(errOut, fmt.Sprintf("exported %d records", total)) {
		t.Fatalf("export: exit %d, %d lines (want %d), stderr %q", code, strings.Count(first, "\n"), total, errOut)
	}
	usage := map[string]client.Quota{}
	for _, o := range owners {
		if usage[o], err = admin.UserQuota(ctx, app, o); err != nil {
			t.Fatal(err)
		}
	}

	for _, o := range owners {
		c, _ := client.New(srv, client.WithSubject(o))
		for i := range 25 {
			if err := c.Delete(ctx, client.Key{App: app, Namespace: "docs", ID: fmt.Sprintf("%s-%d", o, i)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.DeleteList(ctx, client.Key{App: app, Namespace: "mine", ID: "notes"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if code, _, errOut := uds(t, srv, "", "rm-list", app, "feeds", fmt.Sprintf("list-%d", i)); code != 0 {
			t.Fatal(errOut)
		}
	}
	if code, out, _ := uds(t, srv, "", "export", app); code != 0 || out != "" {
		t.Fatalf("%d records left after deleting everything", strings.Count(out, "\n"))
	}

	code, out, errOut := uds(t, srv, first, "import", app)
	if code != 0 || !strings.Contains(out, fmt.Sprintf(`{"imported":%d,"skipped":0,"expired":0,"conflicts":[],"notImported":[]}`, total)) {
		t.Fatalf("import: exit %d, %q, stderr %q", code, out, errOut)
	}
	code, again, _ := uds(t, srv, "", "export", app)
	if code != 0 || again != first {
		t.Fatalf("the second export differs from the first (%d and %d bytes)", len(again), len(first))
	}
	for _, o := range owners {
		q, err := admin.UserQuota(ctx, app, o)
		if err != nil || q != usage[o] {
			t.Errorf("%s's usage after the round trip: %+v, before: %+v (%v)", o, q, usage[o], err)
		}
		if r, err := admin.Recompute(ctx, app, o); err != nil || r.Drift.Bytes != 0 || r.Drift.Items != 0 {
			t.Errorf("%s: recompute found drift %+v (%v)", o, r.Drift, err)
		}
	}

	// Importing again skips everything; a changed record is a conflict,
	// reported with exit status 1.
	code, out, _ = uds(t, srv, first, "import", app)
	if code != 0 || !strings.Contains(out, fmt.Sprintf(`"imported":0,"skipped":%d`, total)) {
		t.Errorf("a second import: exit %d, %q", code, out)
	}
	changed := strings.Replace(first, `"version":1`, `"version":7`, 1)
	code, out, errOut = uds(t, srv, changed, "import", app)
	if code != 1 || !strings.Contains(out, `"conflicts":[{"index":`) || !strings.Contains(errOut, "1 records conflict") {
		t.Errorf("an import with a changed record: exit %d, %q, %q", code, out, errOut)
	}
}

// Numbers out of the API's range are the command line's fault, said
// before any request: a --ttl that would overflow into another expiry, or
// that the API refuses (0, negative), was taken or ignored, and a --limit
// below 1 was ignored.
func TestNumberFlagRefusals(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"a ttl past ten years", []string{"create", app, "n", "t1", "--data", "1", "--ttl", "18446744173"}, "--ttl must be from 1 to 315360000"},
		{"a ttl of nothing", []string{"create", app, "n", "t2", "--data", "1", "--ttl", "0"}, "--ttl must be from 1"},
		{"a negative ttl", []string{"put", app, "n", "t3", "--data", "1", "--ttl", "-5"}, "--ttl must be from 1"},
		{"a negative limit", []string{"ls", app, "n", "l", "--limit", "-3"}, "--limit must be from 1 to 1000"},
		{"a limit past a page", []string{"changes", app, "n", "--limit", "1001"}, "--limit must be from 1 to 1000"},
		{"a query's limit of nothing", []string{"query", app, "n", "--index", "i", "--eq", "x", "--limit", "0"}, "--limit must be from 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, stderr := uds(t, srv, "", tc.args...); code != 2 || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.stderr)
			}
		})
	}
	if code, _, _ := uds(t, srv, "", "get", app, "n", "t1"); code != 1 {
		t.Errorf("get of the refused create's item: exit %d, want 1 (not found)", code)
	}
}
