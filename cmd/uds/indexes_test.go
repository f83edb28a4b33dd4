package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/client"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
)

// itemIDs reads query's output, one item a line, as the ids of the items
// (id/sortKey for list items).
func itemIDs(t *testing.T, out string) string {
	t.Helper()
	var ids []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var it client.Item
		if err := json.Unmarshal([]byte(line), &it); err != nil || it.ApplicationUUID != app || len(it.Data) == 0 {
			t.Fatalf("not an item as ls writes it: %q (%v)", line, err)
		}
		id := it.ID
		if it.SortKey != "" {
			id += "/" + it.SortKey
		}
		ids = append(ids, id)
	}
	return strings.Join(ids, " ")
}

// step is one command of a sequence: its exit status, a part of its
// output and of its standard error, and what its output must not hold.
type step struct {
	name                string
	args                []string
	code                int
	out, notOut, errOut string
}

func (s step) run(t *testing.T, srv string) {
	t.Run(s.name, func(t *testing.T) {
		code, out, errOut := uds(t, srv, "", s.args...)
		if code != s.code || !strings.Contains(out, s.out) || (s.notOut != "" && strings.Contains(out, s.notOut)) || !strings.Contains(errOut, s.errOut) {
			t.Errorf("%v: %d %q %q; want %d, output with %q and not %q, errors with %q", s.args, code, out, errOut, s.code, s.out, s.notOut, s.errOut)
		}
	})
}

// TestIndexCommands declares a namespace's indexes with set-policy, builds
// them, queries them, changes and drops them, and refuses command lines
// that cannot work.
func TestIndexCommands(t *testing.T) {
	t.Parallel()
	srv := apitest.Server(t, 10*time.Second)
	for _, w := range [][]string{
		{`{"status":"open","rank":2}`, "t1"},
		{`{"status":"done","rank":1}`, "t2"},
		{`{"status":"open","rank":-1.5}`, "t3"},
		{`{"status":"","rank":10}`, "t4"},
		{`{"status":"opening","rank":0}`, "list", "a"},
	} {
		if code, _, errOut := uds(t, srv, w[0], append([]string{"create", app, "tasks"}, w[1:]...)...); code != 0 {
			t.Fatal(errOut)
		}
	}
	hint := "; uds build-indexes " + app + " tasks runs the build to its end"
	for _, s := range []step{
		{"declared", []string{"set-policy", app, "tasks", "--access", "shared", "--index", "byStatus:/status:string", "--index", "byRank:/rank:number"},
			0, `{"name":"byRank","path":"/rank","type":"number","state":"building"}`, "", "building byStatus (0 items indexed), byRank (0 items indexed)"},
		{"declared again, the build still to do", []string{"set-policy", app, "tasks", "--access", "shared", "--index", "byStatus:/status:string", "--index", "byRank:/rank:number"},
			0, `"indexBuild":{"settlesAt":`, "", hint},
		{"a query before the build", []string{"query", app, "tasks", "--index", "byStatus"},
			1, "", "", "uds query: 409 Index not ready: index byStatus is still being built"},
		{"the query names the command that builds", []string{"query", app, "tasks", "--index", "byStatus"},
			1, "", "", "; uds build-indexes " + app + " tasks builds it"},
		{"built", []string{"build-indexes", app, "tasks"},
			0, `{"name":"byStatus","path":"/status","type":"string","state":"ready","itemsIndexed":5}`, "building",
			"done: every index is ready: byStatus (5 items indexed), byRank (5 items indexed)"},
		{"shown", []string{"policy", app, "tasks"}, 0, `"state":"ready","itemsIndexed":5`, "indexBuild", ""},
	} {
		s.run(t, srv)
	}
	t.Run("query", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			args []string
			want string
		}{
			{"eq", []string{"--index", "byStatus", "--eq", "open"}, "t1 t3"},
			{"eq the empty string", []string{"--index", "byStatus", "--eq", ""}, "t4"},
			{"prefix, descending, a page at a time", []string{"--index", "byStatus", "--prefix", "open", "--desc", "--limit", "1"}, "list/a t3 t1"},
			{"every item the index holds", []string{"--index", "byStatus"}, "t4 t2 t1 t3 list/a"},
			{"from and to", []string{"--index", "byRank", "--from", "-1.5", "--to", "1"}, "t3 list/a"},
			{"to alone, descending", []string{"--desc", "--index", "byRank", "--to", "2"}, "t2 list/a t3"},
			{"from alone", []string{"--index", "byRank", "--from", "1e0"}, "t2 t1 t4"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, out, errOut := uds(t, srv, "", append([]string{"query", app, "tasks"}, tc.args...)...)
				if got := itemIDs(t, out); code != 0 || got != tc.want {
					t.Errorf("%v: %d %q %q; want %q", tc.args, code, got, errOut, tc.want)
				}
			})
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, s := range []step{
			{"query without --index", []string{"query", app, "tasks", "--eq", "open"}, 2, "", "", "--index is required"},
			{"query by two selections", []string{"query", app, "tasks", "--index", "byStatus", "--eq", "open", "--prefix", "o"}, 2, "", "", "--eq, --prefix and --from/--to exclude each other"},
			{"query by eq and a bound", []string{"query", app, "tasks", "--index", "byRank", "--eq", "1", "--to", "2"}, 2, "", "", "exclude each other"},
			{"a prefix of numbers", []string{"query", app, "tasks", "--index", "byRank", "--prefix", "1"}, 1, "", "", "uds query: 400 Invalid prefix"},
			{"a bound that is no number", []string{"query", app, "tasks", "--index", "byRank", "--from", "two"}, 1, "", "", "uds query: 400 Invalid from"},
			{"an index without a type", []string{"set-policy", app, "tasks", "--access", "shared", "--index", "byStatus:/status"}, 2, "", "",
				`invalid value "byStatus:/status" for flag -index: want NAME:PATH:TYPE`},
			{"an index of an unknown type", []string{"set-policy", app, "tasks", "--access", "shared", "--index", "byStatus:/status:text"}, 1, "", "",
				"uds set-policy: 400 Invalid indexes[0].type"},
			{"--clear with an index", []string{"set-policy", app, "tasks", "--clear", "--index", "a:/a:string"}, 2, "", "", "--clear takes no"},
			{"unchanged by the refusals", []string{"policy", app, "tasks"}, 0, `"state":"ready","itemsIndexed":5`, "indexBuild", ""},
		} {
			s.run(t, srv)
		}
	})
	t.Run("changed and dropped", func(t *testing.T) {
		for _, s := range []step{
			{"one kept, one new whose path holds ':'", []string{"set-policy", app, "tasks", "--access", "shared", "--index", "byStatus:/status:string", "--index", "odd:/a:b:number"},
				0, `"indexes":[{"name":"byStatus","path":"/status","type":"string","state":"ready","itemsIndexed":5},{"name":"odd","path":"/a:b","type":"number","state":"building"}]`,
				"", "building odd (0 items indexed); removing the entries of 1 dropped index (0 removed)"},
			{"the kept one answers at once", []string{"query", app, "tasks", "--index", "byStatus", "--eq", "done"}, 0, `"id":"t2"`, "", ""},
			{"built again", []string{"build-indexes", app, "tasks"}, 0, `"name":"odd","path":"/a:b","type":"number","state":"ready"`, "indexBuild",
				"done: every index is ready: byStatus (5 items indexed), odd (0 items indexed)"},
			{"a set-policy without --index keeps them", []string{"set-policy", app, "tasks", "--access", "shared"}, 0,
				`{"name":"odd","path":"/a:b","type":"number","state":"ready"}`, "droppedIndexes", ""},
			{"--drop indexes drops them", []string{"set-policy", app, "tasks", "--drop", "indexes"}, 0, `"droppedIndexes":2`, `"indexes"`,
				"removing the entries of 2 dropped indexes (0 removed)"},
			{"the dropped entries removed", []string{"build-indexes", app, "tasks"}, 0, `"access":"shared"`, "index", "done: the namespace declares no indexes"},
			{"a query of a dropped index", []string{"query", app, "tasks", "--index", "byStatus"}, 1, "", "", "uds query: 400 Invalid index: namespace tasks has no index"},
		} {
			s.run(t, srv)
		}
	})
}

// TestDescribeBuild checks the progress line of a build against states a
// test server passes through too quickly to be seen.
func TestDescribeBuild(t *testing.T) {
	t.Parallel()
	now := time.Now()
	later := now.Add(90 * time.Second)
	for _, tc := range []struct {
		name string
		p    client.Policy
		want string
	}{
		{"done", client.Policy{Indexes: []client.Index{{Name: "a", State: "ready", ItemsIndexed: 3}}}, ""},
		{"building, settled", client.Policy{
			Indexes:    []client.Index{{Name: "a", State: "ready"}, {Name: "b", State: "building", ItemsIndexed: 7}},
			IndexBuild: &client.IndexBuild{SettlesAt: now.Add(-time.Second)},
		}, "building b (7 items indexed)"},
		{"dropping, settling", client.Policy{IndexBuild: &client.IndexBuild{SettlesAt: later, DroppedIndexes: 2, EntriesRemoved: 40}},
			"removing the entries of 2 dropped indexes (40 removed); the build starts once the change settles at " + later.Format(time.RFC3339) + " (in 1m30s)"},
		{"both", client.Policy{
			Indexes:    []client.Index{{Name: "b", State: "building"}},
			IndexBuild: &client.IndexBuild{DroppedIndexes: 1},
		}, "building b (0 items indexed); removing the entries of 1 dropped index (0 removed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describeBuild(tc.p, now); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
