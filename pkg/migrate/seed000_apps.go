package migrate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/uds"
)

// The steps before the copy: the apps are found, their names registered
// and the namespaces their records land in made private.

// discover finds the seed's app names: every name of the apps table, and
// every name a data table holds records of, from a keys-only scan of its
// user index (only the keys are read) or, without the index, of the table.
func (r *seedRun) discover(ctx context.Context) error {
	n := r.o.Names
	r.progress.say("discovering the apps")
	r.progress.phase()
	var scans []scan
	if t := r.table(familyApps); t != "" {
		scans = append(scans, scan{
			name: "discover " + t,
			in: dynamodb.ScanInput{TableName: aws.String(t), ConsistentRead: aws.Bool(true),
				ProjectionExpression:     aws.String("#a, #d"),
				ExpressionAttributeNames: map[string]string{"#a": n.App, "#d": n.Description}},
			page: r.discoverApps,
		})
	}
	for _, f := range []family{familyJSON, familyBlob} {
		t := r.table(f)
		if t == "" {
			continue
		}
		in := dynamodb.ScanInput{TableName: aws.String(t), ProjectionExpression: aws.String("#h, #u"),
			ExpressionAttributeNames: map[string]string{"#h": n.AppUser, "#u": n.User}}
		if r.byUser[f] {
			in.IndexName = aws.String(n.ByUser)
		} else {
			r.progress.say("%s has no index %s: discovery scans the table", t, n.ByUser)
		}
		scans = append(scans, scan{name: "discover " + t, in: in, page: r.discoverData})
	}
	return r.scanAll(ctx, scans...)
}

func (r *seedRun) discoverApps(_ context.Context, items []map[string]types.AttributeValue) (pageDone, error) {
	n := r.o.Names
	return pageDone{apply: func(cp *seedCheckpoint) {
		for _, it := range items {
			name := attrS(it, n.App)
			if r.o.Tables.Apps == r.o.UDSApps && udsRecord(name) {
				cp.Ignored++
				continue
			}
			a := cp.app(name)
			a.Listed, a.Description = true, attrS(it, n.Description)
		}
	}}, nil
}

func (r *seedRun) discoverData(_ context.Context, items []map[string]types.AttributeValue) (pageDone, error) {
	m := mapper{names: r.o.Names}
	var names []string
	for _, it := range items {
		if name, ok := m.appName(it); ok && attrS(it, r.o.Names.User) != "" {
			names = append(names, name)
		}
	}
	return pageDone{apply: func(cp *seedCheckpoint) {
		for _, name := range names {
			cp.app(name).Data = true
		}
	}}, nil
}

func (cp *seedCheckpoint) app(name string) *seedApp {
	a := cp.Apps[name]
	if a == nil {
		a = &seedApp{}
		cp.Apps[name] = a
	}
	return a
}

// udsRecord reports whether a key of UDS's own apps table is one UDS
// wrote: an application id, or a name claim, rate limit bucket, release
// marker or the registry's marker (a prefix and #).
func udsRecord(key string) bool {
	if _, err := uds.ParseApp(key); err == nil {
		return true
	}
	for _, p := range []string{"name#", "rate#", "released#", "registry#"} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// resolve gives every app name its application id and registers the
// name, in the order described in docs/decisions/migration.md: names the registry
// holds exactly first, so that of two seed names that differ only in case
// the one registered keeps its records.
func (r *seedRun) resolve(ctx context.Context) error {
	r.mu.Lock()
	claimed := map[string]string{}
	var names []string
	for name, a := range r.cp.Apps {
		if a.App != "" || a.Refused != "" {
			claimed[uds.FoldAppName(name)] = name
			continue
		}
		names = append(names, name)
	}
	r.mu.Unlock()
	sort.Strings(names)
	regs := map[string]uds.AppRegistration{}
	for _, name := range names {
		reg, err := r.st.AppByName(ctx, name)
		switch {
		case errors.Is(err, uds.ErrNotFound):
		case err != nil:
			return err
		default:
			regs[name] = reg
		}
	}
	sort.SliceStable(names, func(i, j int) bool {
		return regs[names[i]].Name == names[i] && regs[names[j]].Name != names[j]
	})
	r.progress.say("registering %d app names", len(names))
	for _, name := range names {
		r.mu.Lock()
		a := *r.cp.Apps[name]
		r.mu.Unlock()
		lines, err := r.resolveApp(ctx, name, &a, regs[name], claimed)
		if err != nil {
			return err
		}
		r.mu.Lock()
		*r.cp.Apps[name] = a
		r.writeLines(lines)
		err = r.save()
		r.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// resolveApp resolves one app name: the registry's app for it, or the id
// -app-ids gives or AppIDOf derives, registered under it. A name the
// registry cannot take is refused, with the reason reported.
func (r *seedRun) resolveApp(ctx context.Context, name string, a *seedApp, reg uds.AppRegistration, claimed map[string]string) ([]string, error) {
	appsTable := r.o.Tables.Apps
	if appsTable == "" {
		appsTable = "(data tables)"
	}
	key := r.o.Names.App + "=" + quoteAttr(&types.AttributeValueMemberS{Value: name})
	refuse := func(why string) ([]string, error) {
		a.Refused = fmt.Sprintf("app name %q is refused: %s", name, why)
		return []string{line("refused", appsTable, key, why)}, nil
	}
	a.Namespace = r.o.AppNamespace
	cc := ""
	if name == uds.CreatedContentName {
		a.Namespace, cc = r.o.ContentNamespace, r.o.CreatedContentApp
	}
	if parsed, err := uds.ParseAppName(name); err != nil || parsed != name {
		why := "the registry trims white space from app names"
		if err != nil {
			why = reason(err)
		}
		return refuse(why)
	}
	fold := uds.FoldAppName(name)
	if other, ok := claimed[fold]; ok && other != name {
		return refuse(fmt.Sprintf("the registry compares names in any case, and the app name %q takes it", other))
	}
	claimed[fold] = name
	if reg.App != "" {
		if cc != "" && reg.App != cc {
			return refuse(fmt.Sprintf("the registry gives it to app %s, not to the created-content app %s", reg.App, cc))
		}
		a.App = reg.App
		return nil, nil
	}
	id := cc
	if id == "" {
		id = r.o.AppIDs[name]
	}
	if id == "" {
		id = AppIDOf(name)
	}
	switch held, err := r.st.App(ctx, id); {
	case err == nil:
		return refuse(fmt.Sprintf("its application id %s is registered as %q", id, held.Name))
	case !errors.Is(err, uds.ErrNotFound):
		return nil, err
	}
	var lines []string
	desc := a.Description
	if _, err := uds.ParseAppDescription(desc); err != nil {
		lines = append(lines, line("dropped", appsTable, key, "the description is not kept: "+reason(err)))
		desc = ""
	}
	if !r.o.DryRun {
		_, err := r.st.RegisterApp(ctx, id, name, desc)
		switch {
		case errors.Is(err, uds.ErrConflict):
			more, _ := refuse(reason(err))
			return append(lines, more...), nil
		case err != nil:
			return nil, err
		}
	}
	a.App, a.Registered = id, true
	return lines, nil
}

// target is a namespace records land in.
type nsTarget struct{ app, namespace string }

// targets are the namespaces the copy writes to.
func (r *seedRun) targets() []nsTarget {
	seen := map[nsTarget]bool{}
	var out []nsTarget
	add := func(t nsTarget) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	r.mu.Lock()
	for _, a := range r.cp.Apps {
		if a.Data && a.Refused == "" {
			add(nsTarget{a.App, a.Namespace})
		}
	}
	r.mu.Unlock()
	if r.table(familyBehavior) != "" {
		add(nsTarget{uds.BehaviorApp, r.o.BehaviorNamespace})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].app+"|"+out[i].namespace < out[j].app+"|"+out[j].namespace
	})
	return out
}

// makePrivate makes every namespace the copy writes to private, so that
// each user's keys are their own: every change is announced, the run
// waits until they settle (the store's settle time), and completes them.
// A namespace that is not private and holds data stops the run.
func (r *seedRun) makePrivate(ctx context.Context) error {
	var pending []nsTarget
	var settles time.Time
	for _, t := range r.targets() {
		r.mu.Lock()
		done := r.cp.MadePrivate[t.app+"|"+t.namespace]
		r.mu.Unlock()
		if done {
			continue
		}
		p, err := r.st.StoredPolicy(ctx, t.app, t.namespace)
		if err != nil {
			return err
		}
		if p.Mode() == uds.AccessPrivate {
			continue
		}
		if r.o.DryRun {
			held, err := r.st.NamespaceHoldsData(ctx, t.app, t.namespace)
			switch {
			case err != nil:
				return err
			case held:
				return r.inUse(t)
			}
			if err := r.madePrivate(t); err != nil {
				return err
			}
			continue
		}
		at, err := r.toPrivate(ctx, t, p)
		if err != nil {
			return err
		}
		if !at.IsZero() {
			pending = append(pending, t)
			settles = later(settles, at)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	r.progress.say("making %d namespaces private: waiting until %s for writes in flight to settle", len(pending), settles.Format(time.RFC3339))
	for len(pending) > 0 {
		if err := sleepUntil(ctx, settles); err != nil {
			return err
		}
		var again []nsTarget
		for _, t := range pending {
			p, err := r.st.StoredPolicy(ctx, t.app, t.namespace)
			if err != nil {
				return err
			}
			at, err := r.toPrivate(ctx, t, p)
			if err != nil {
				return err
			}
			if !at.IsZero() {
				again = append(again, t)
				settles = later(settles, at)
			}
		}
		pending = again
	}
	return nil
}

// toPrivate asks for a namespace whose policy is p to be private: a new
// change is announced, a settled one completed. It returns when the
// change settles, or the zero time once the namespace is private.
func (r *seedRun) toPrivate(ctx context.Context, t nsTarget, p uds.Policy) (time.Time, error) {
	p.Access, p.Pending = uds.AccessPrivate, nil
	got, err := r.st.SetPolicy(ctx, t.app, t.namespace, p)
	switch {
	case errors.Is(err, uds.ErrInUse):
		return time.Time{}, r.inUse(t)
	case err != nil:
		return time.Time{}, err
	case got.Pending != nil:
		return got.Pending.SettlesAt, nil
	}
	return time.Time{}, r.madePrivate(t)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// madePrivate records a namespace made private.
func (r *seedRun) madePrivate(t nsTarget) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cp.MadePrivate[t.app+"|"+t.namespace] = true
	r.progress.say("namespace %s/%s: private%s", t.app, t.namespace, dryNote(r.o.DryRun))
	return r.save()
}

func (r *seedRun) inUse(t nsTarget) error {
	return fmt.Errorf("namespace %s of app %s is not private and holds data: each user's records need a private namespace (their keys would collide), and a namespace that holds data cannot become private; name another namespace (-app-namespace, -content-namespace, -behavior-namespace) or empty it, then run again", t.namespace, t.app)
}

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}
