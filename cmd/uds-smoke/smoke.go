package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/udsproject/uds/pkg/client"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1 // an answer a working deployment would not give, or none
	exitUsage  = 2 // the command line is wrong
)

// defaultApp is the application the smoke test writes under unless -app
// names another. It is always the same one, so that runs leave no more
// than one usage record per caller behind (at zero once a run has deleted
// its items), rather than one in a new app per run.
const defaultApp = "00000000-0000-4000-8000-00000000abcd"

// namespace holds every key the smoke test writes. It is shared (the
// default policy) unless someone sets a policy on it.
const namespace = "uds-smoke"

// cleanupTime bounds the deletes after a failure, which run even when the
// test's own time is up.
const cleanupTime = 15 * time.Second

// run is the whole command: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("uds-smoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	endpoint := fs.String("endpoint", os.Getenv("UDS_ENDPOINT"), "the API's base URL: the stack's ApiUrl output (env UDS_ENDPOINT)")
	token := fs.String("token", os.Getenv("UDS_TOKEN"), "a JWT for the data routes, when the stack has a JWT authorizer (env UDS_TOKEN)")
	app := fs.String("app", defaultApp, "the application UUID to write under")
	timeout := fs.Duration("timeout", time.Minute, "how long the whole test may take")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "uds-smoke: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	if *endpoint == "" {
		fmt.Fprintln(stderr, "uds-smoke: give -endpoint, the stack's ApiUrl output")
		return exitUsage
	}
	rec := &recorder{next: http.DefaultTransport}
	opts := []client.Option{
		client.WithHTTPClient(&http.Client{Transport: rec, Timeout: 30 * time.Second}),
		client.WithUserAgent("uds-smoke"),
	}
	if *token != "" {
		opts = append(opts, client.WithToken(*token))
	}
	c, err := client.New(*endpoint, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "uds-smoke: %v\n", err)
		return exitUsage
	}
	id, err := runID()
	if err != nil {
		fmt.Fprintf(stderr, "uds-smoke: %v\n", err)
		return exitFailed
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	s := &smokeTest{c: c, rec: rec, out: stdout, item: client.Key{App: *app, Namespace: namespace, ID: id}}
	fmt.Fprintf(stdout, "smoke test of %s, key %s/%s/%s\n", *endpoint, *app, namespace, id)
	if failed := s.run(ctx); failed != "" {
		fmt.Fprintf(stdout, "FAILED at %s\n", failed)
		return exitFailed
	}
	fmt.Fprintf(stdout, "ok: %d steps\n", s.steps)
	return exitOK
}

// runID names the run's key: the time, so that anything a failed run could
// not delete tells when it was written, and random bits, so that
// concurrent runs never meet.
func runID() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random key: %w", err)
	}
	return "run-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b), nil
}

// smokeTest is one run: a key-value item, a list item in the list under the
// same key, and what of them is still stored.
type smokeTest struct {
	c     *client.Client
	rec   *recorder
	out   io.Writer
	item  client.Key
	steps int
	// stored are the keys written and not deleted yet, which a failed run
	// deletes before it ends.
	stored []client.Key
}

// step is one call and what its answer must show.
type step struct {
	name string
	do   func(ctx context.Context) error
}

// run runs the steps in order and returns the name of the first that
// failed, "" when all passed. After a failure it deletes what it stored.
func (s *smokeTest) run(ctx context.Context) (failed string) {
	listItem := s.item
	listItem.SortKey = "0001"
	list := s.item // the list is addressed by the item's key
	first := s.data("created")
	second := s.data("updated")
	appended := s.data("appended")
	var created, updated, added client.Item

	steps := []step{
		{"create", func(ctx context.Context) error {
			it, err := s.c.Create(ctx, s.item, first)
			if err != nil {
				return err
			}
			s.stored = append(s.stored, s.item)
			created = it
			return checkItem(it, 1, first)
		}},
		{"read", func(ctx context.Context) error {
			it, err := s.c.Get(ctx, s.item)
			if err != nil {
				return err
			}
			if it.ETag != created.ETag {
				return fmt.Errorf("ETag %s, want the create's %s", it.ETag, created.ETag)
			}
			return checkItem(it, 1, first)
		}},
		{"update", func(ctx context.Context) error {
			it, err := s.c.Update(ctx, s.item, second, client.IfMatch(created.ETag))
			if err != nil {
				return err
			}
			if it.ETag == created.ETag {
				return fmt.Errorf("ETag %s unchanged by the update", it.ETag)
			}
			updated = it
			return checkItem(it, 2, second)
		}},
		{"append", func(ctx context.Context) error {
			it, err := s.c.Create(ctx, listItem, appended)
			if err != nil {
				return err
			}
			s.stored = append(s.stored, listItem)
			added = it
			return checkItem(it, 1, appended)
		}},
		{"list", func(ctx context.Context) error {
			page, err := s.c.ListPage(ctx, list, client.ListQuery{Limit: 10}, "")
			if err != nil {
				return err
			}
			if len(page.Items) != 1 || page.Cursor != "" {
				return fmt.Errorf("%d items and cursor %q, want the one appended and no cursor", len(page.Items), page.Cursor)
			}
			if it := page.Items[0]; it.SortKey != listItem.SortKey {
				return fmt.Errorf("sort key %q, want %q", it.SortKey, listItem.SortKey)
			}
			return checkListed(page.Items[0], 1, appended)
		}},
		{"quota", func(ctx context.Context) error {
			q, err := s.c.Quota(ctx, s.item.App)
			if err != nil {
				return err
			}
			// Other writers under the same identity may add to the
			// usage, never take this run's two items from it.
			if q.UsedItems < 2 || q.UsedBytes <= 0 {
				return fmt.Errorf("the caller uses %d items and %d bytes, want at least the 2 items stored", q.UsedItems, q.UsedBytes)
			}
			return nil
		}},
		{"delete", func(ctx context.Context) error { return s.delete(ctx, listItem, client.IfMatch(added.ETag)) }},
		{"delete", func(ctx context.Context) error { return s.delete(ctx, s.item, client.IfMatch(updated.ETag)) }},
		{"gone", func(ctx context.Context) error {
			it, err := s.c.Get(ctx, s.item)
			switch {
			case errors.Is(err, client.ErrNotFound):
				return nil
			case err != nil:
				return err
			}
			return fmt.Errorf("the deleted item is still there (version %d)", it.Version)
		}},
	}
	for _, st := range steps {
		if err := s.step(ctx, st.name, st.do); err != nil {
			s.cleanup(ctx)
			return st.name
		}
	}
	return ""
}

// delete deletes k and forgets it.
func (s *smokeTest) delete(ctx context.Context, k client.Key, opts ...client.CallOption) error {
	if err := s.c.Delete(ctx, k, opts...); err != nil {
		return err
	}
	s.stored = slices.DeleteFunc(s.stored, func(x client.Key) bool { return x == k })
	return nil
}

// cleanup deletes what a failed run stored, whatever revision it is at,
// each delete a step of its own whose failure is printed and changes
// nothing else.
func (s *smokeTest) cleanup(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTime)
	defer cancel()
	for _, k := range slices.Backward(slices.Clone(s.stored)) {
		_ = s.step(ctx, "cleanup", func(ctx context.Context) error { return s.delete(ctx, k) })
	}
}

// step runs one step and prints its line: the name, the status of the
// last answer, the request that got it (with its If-Match), the time taken
// (and the attempts, when the client retried), and what was wrong.
func (s *smokeTest) step(ctx context.Context, name string, do func(context.Context) error) error {
	s.rec.reset()
	s.steps++
	start := time.Now()
	err := do(ctx)
	elapsed := time.Since(start)

	status := "---" // no answer
	if s.rec.status != 0 {
		status = fmt.Sprint(s.rec.status)
	}
	line := fmt.Sprintf("%-7s %s %s %s", name, status, s.rec.method, s.rec.target)
	if s.rec.ifMatch != "" {
		line += " If-Match: " + s.rec.ifMatch
	}
	line += fmt.Sprintf("  %d ms", elapsed.Milliseconds())
	if s.rec.attempts > 1 {
		line += fmt.Sprintf(" (%d attempts)", s.rec.attempts)
	}
	if err != nil {
		line += "  FAIL: " + err.Error()
	}
	fmt.Fprintln(s.out, line)
	return err
}

// data is what the run stores at one step: JSON naming the run, so that
// what a read returns can be told from anything else.
func (s *smokeTest) data(what string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"smoke":%q,"run":%q}`, what, s.item.ID))
}

// checkItem checks an item as the API answered it on its own route: its
// ETag (a header, which list pages do not carry for their items), then
// what checkListed checks.
func checkItem(it client.Item, version int64, data json.RawMessage) error {
	if it.ETag == "" {
		return errors.New("no ETag")
	}
	return checkListed(it, version, data)
}

// checkListed checks an item's version and its data, byte for byte (UDS
// stores JSON exactly as it was sent).
func checkListed(it client.Item, version int64, data json.RawMessage) error {
	switch {
	case it.Version != version:
		return fmt.Errorf("version %d, want %d", it.Version, version)
	case !bytes.Equal(it.Data, data):
		return fmt.Errorf("data %s, want %s", it.Data, data)
	}
	return nil
}

// recorder is the client's transport: it passes requests on and keeps the
// last exchange of the step in hand, so that the step can print the status
// it got (the client returns items, not statuses) and how many attempts
// its retries took. The test sends one request at a time.
type recorder struct {
	next                    http.RoundTripper
	method, target, ifMatch string
	status, attempts        int
}

func (r *recorder) reset() { *r = recorder{next: r.next} }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := r.next.RoundTrip(req)
	r.attempts++
	r.method, r.target, r.ifMatch, r.status = req.Method, req.URL.RequestURI(), req.Header.Get("If-Match"), 0
	if err == nil {
		r.status = res.StatusCode
	}
	return res, err
}
