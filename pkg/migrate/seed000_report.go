package migrate

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/udsproject/uds/pkg/uds"
)

// TableStats counts what a pass did with the records of one source table
// (in a dry run, what it would do): records read, written, already there
// and identical (unchanged), left alone because a different item holds
// their key (conflicts), skipped as UDS cannot hold them, and JSON texts
// stored without their insignificant white space (compacted).
type TableStats struct {
	Read      int `json:"read"`
	Written   int `json:"written"`
	Unchanged int `json:"unchanged"`
	Conflicts int `json:"conflicts"`
	Skipped   int `json:"skipped"`
	Compacted int `json:"compacted"`
}

func (s *TableStats) add(o TableStats) {
	s.Read += o.Read
	s.Written += o.Written
	s.Unchanged += o.Unchanged
	s.Conflicts += o.Conflicts
	s.Skipped += o.Skipped
	s.Compacted += o.Compacted
}

// TableReport is one source table's counts.
type TableReport struct {
	Family, Table string
	TableStats
}

// AppsReport says what became of the seed's app names: found (in the
// apps table or the data tables), registered by the pass, already
// registered, refused by the registry; and the records of the apps table
// that UDS itself wrote, ignored.
type AppsReport struct {
	Found, Registered, Known, Refused, Ignored int
}

// OverLimit is an owner whose usage, recomputed after the copy, is over
// a limit in effect. Nothing is cut: the owner can delete but not grow.
type OverLimit struct {
	App   string     `json:"app"`
	Name  string     `json:"name,omitempty"`
	Owner string     `json:"owner"`
	Used  uds.Usage  `json:"used"`
	Limit uds.Limits `json:"limit"`
}

// Seed000Report says what a pass did (or, in a dry run, would do).
type Seed000Report struct {
	DryRun bool
	Tables []TableReport
	Apps   AppsReport
	// Private counts the namespaces made private.
	Private int
	// Owners counts the owners whose usage was recomputed, Drifted those
	// whose recorded usage differed from their items.
	Owners, Drifted int
	OverLimit       []OverLimit
}

// Changed reports whether the pass changed anything: a record written, an
// app registered, a namespace made private or a usage corrected.
func (r Seed000Report) Changed() bool {
	written := 0
	for _, t := range r.Tables {
		written += t.Written
	}
	return written > 0 || r.Apps.Registered > 0 || r.Private > 0 || r.Drifted > 0
}

// WriteSummary prints the report for an operator.
func (r Seed000Report) WriteSummary(w io.Writer) {
	would := ""
	if r.DryRun {
		would = " (dry run: what would be done; nothing was written)"
	}
	fmt.Fprintf(w, "seed 000 migration%s\n", would)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "table\tread\twritten\tunchanged\tconflicts\tskipped")
	compacted := 0
	for _, t := range r.Tables {
		name := t.Table
		if name != t.Family {
			name += " (" + t.Family + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", name, t.Read, t.Written, t.Unchanged, t.Conflicts, t.Skipped)
		compacted += t.Compacted
	}
	tw.Flush()
	fmt.Fprintf(w, "apps: %d found, %d registered, %d already registered, %d refused", r.Apps.Found, r.Apps.Registered, r.Apps.Known, r.Apps.Refused)
	if r.Apps.Ignored > 0 {
		fmt.Fprintf(w, "; %d records UDS keeps in the apps table ignored", r.Apps.Ignored)
	}
	fmt.Fprintf(w, "\nnamespaces made private: %d\n", r.Private)
	if compacted > 0 {
		fmt.Fprintf(w, "JSON texts stored without their insignificant white space: %d\n", compacted)
	}
	if !r.DryRun {
		fmt.Fprintf(w, "owners recomputed: %d (usage corrected for %d); over a limit: %d\n", r.Owners, r.Drifted, len(r.OverLimit))
		for _, o := range r.OverLimit {
			fmt.Fprintf(w, "  over a limit: %s in app %s%s: %s\n", o.Owner, o.App, nameNote(o.Name), overBy(o))
		}
	}
	switch {
	case r.DryRun:
	case r.Changed():
		fmt.Fprintln(w, "done: the counts above were changed by this pass")
	default:
		fmt.Fprintln(w, "nothing changed: every record, app and namespace was already migrated")
	}
}

func nameNote(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf(" (%q)", name)
}

// overBy says which limits an owner passes, with the numbers.
func overBy(o OverLimit) string {
	var parts []string
	if o.Limit.Items > 0 && o.Used.Items > o.Limit.Items {
		parts = append(parts, fmt.Sprintf("%d items of %d", o.Used.Items, o.Limit.Items))
	}
	if o.Limit.Bytes > 0 && o.Used.Bytes > o.Limit.Bytes {
		parts = append(parts, fmt.Sprintf("%d bytes of %d", o.Used.Bytes, o.Limit.Bytes))
	}
	return strings.Join(parts, ", ")
}

// report is the checkpoint's counts as a report. The caller holds mu.
func (r *seedRun) report() Seed000Report {
	rep := Seed000Report{DryRun: r.o.DryRun, Private: len(r.cp.MadePrivate), Drifted: r.cp.Drifted, OverLimit: r.cp.OverLimit}
	for _, t := range r.tables {
		tr := TableReport{Family: t.family.String(), Table: t.name}
		if s := r.cp.Stats[t.family.String()]; s != nil {
			tr.TableStats = *s
		}
		if t.family == familyApps {
			// The apps table's names: registered, already registered
			// or refused.
			for _, a := range r.cp.Apps {
				if !a.Listed {
					continue
				}
				tr.Read++
				switch {
				case a.Refused != "":
					tr.Skipped++
				case a.Registered:
					tr.Written++
				case a.App != "":
					tr.Unchanged++
				}
			}
		}
		rep.Tables = append(rep.Tables, tr)
	}
	rep.Apps.Ignored = r.cp.Ignored
	for _, a := range r.cp.Apps {
		rep.Apps.Found++
		switch {
		case a.Refused != "":
			rep.Apps.Refused++
		case a.Registered:
			rep.Apps.Registered++
		case a.App != "":
			rep.Apps.Known++
		}
	}
	for _, done := range r.cp.Owners {
		if done {
			rep.Owners++
		}
	}
	return rep
}
