package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/udsproject/uds/pkg/client"
)

// A namespace's indexes: declared with its policy (set-policy --index),
// built (build-indexes), and queried (query).

// indexFlag is set-policy's repeatable --index NAME:PATH:TYPE.
type indexFlag []client.Index

func (f *indexFlag) String() string {
	if f == nil {
		return ""
	}
	s := make([]string, len(*f))
	for i, ix := range *f {
		s[i] = ix.Name + ":" + ix.Path + ":" + ix.Type
	}
	return strings.Join(s, " ")
}

// Set reads one declaration. A name and a type hold no ':', a JSON
// Pointer may: the path is what lies between the first ':' and the last.
// The server judges the three parts, and names the one it refuses.
func (f *indexFlag) Set(s string) error {
	first, last := strings.Index(s, ":"), strings.LastIndex(s, ":")
	if first < 0 || first == last {
		return errors.New("want NAME:PATH:TYPE, such as byStatus:/status:string")
	}
	*f = append(*f, client.Index{Name: s[:first], Path: s[first+1 : last], Type: s[last+1:]})
	return nil
}

// indexes reads set-policy's --index flags.
func (e *env) indexes() []client.Index {
	return *e.flags.Lookup("index").Value.(*indexFlag)
}

// describeBuild says what a policy's index build has left to do and, at
// now, when it may start.
func describeBuild(p client.Policy, now time.Time) string {
	var parts []string
	var building []string
	for _, ix := range p.Indexes {
		if ix.State != "ready" {
			building = append(building, fmt.Sprintf("%s (%d items indexed)", ix.Name, ix.ItemsIndexed))
		}
	}
	if len(building) > 0 {
		parts = append(parts, "building "+strings.Join(building, ", "))
	}
	b := p.IndexBuild
	if b == nil {
		return strings.Join(parts, "; ")
	}
	if b.DroppedIndexes > 0 {
		dropped := "dropped indexes"
		if b.DroppedIndexes == 1 {
			dropped = "dropped index"
		}
		parts = append(parts, fmt.Sprintf("removing the entries of %d %s (%d removed)", b.DroppedIndexes, dropped, b.EntriesRemoved))
	}
	if wait := b.SettlesAt.Sub(now); wait > 0 {
		parts = append(parts, fmt.Sprintf("the build starts once the change settles at %s (in %s)", b.SettlesAt.Format(time.RFC3339), wait.Round(time.Second)))
	}
	return strings.Join(parts, "; ")
}

// buildIndexes runs the build step after step, a progress line for each,
// and writes the policy it leaves.
func buildIndexes(e *env, args []string) error {
	p, err := e.c.BuildIndexes(e.ctx, args[0], args[1], func(s client.IndexBuildStep) {
		e.progress.note(describeBuild(s.Policy, time.Now()))
	})
	if err != nil {
		return err
	}
	ready := make([]string, len(p.Indexes))
	for i, ix := range p.Indexes {
		ready[i] = fmt.Sprintf("%s (%d items indexed)", ix.Name, ix.ItemsIndexed)
	}
	if len(ready) == 0 {
		e.progress.final("done: the namespace declares no indexes")
	} else {
		e.progress.final("done: every index is ready: " + strings.Join(ready, ", "))
	}
	return e.writeJSON(p)
}

// query writes the items an index selects, page after page, as ls does.
func query(e *env, args []string) error {
	q := client.IndexQuery{Index: e.flag("index"), Prefix: e.flag("prefix"), Descending: e.flag("desc") == "true"}
	var err error
	if q.Limit, err = e.limit(); err != nil {
		return err
	}
	if q.Index == "" {
		return usageError("--index is required: the index to query (uds policy lists the namespace's)")
	}
	// Given, not empty: --eq "" selects the items whose value is "".
	for _, b := range []struct {
		flag  string
		bound *any
	}{{"eq", &q.Eq}, {"from", &q.From}, {"to", &q.To}} {
		if e.given(b.flag) {
			*b.bound = e.flag(b.flag)
		}
	}
	selections := 0
	for _, group := range [][]string{{"eq"}, {"prefix"}, {"from", "to"}} {
		if slices.ContainsFunc(group, e.given) {
			selections++
		}
	}
	if selections > 1 {
		return usageError("--eq, --prefix and --from/--to exclude each other: select by one of them")
	}
	err = writeItems(e, e.c.Query(e.ctx, args[0], args[1], q))
	if errors.Is(err, client.ErrIndexNotReady) {
		return fmt.Errorf("%w; uds build-indexes %s %s builds it", err, args[0], args[1])
	}
	return err
}
