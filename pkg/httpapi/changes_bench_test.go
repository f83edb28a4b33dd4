package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/pkg/blob"
	"github.com/udsproject/uds/pkg/blob/blobtest"
	"github.com/udsproject/uds/pkg/httpapi"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/uds"
)

// BenchmarkChangesCatchUp measures how long a replica takes to catch up
// with a namespace's changes feed through the API, over HTTP, against the
// engine (docs/performance.md, "Changes feed"): 10,000 changes (1,000
// with -short), read with limit=1000 until the feed says it is up to
// date. The namespace holds 10,000 items of 1 KB, created through the API
// in atomic batches of 50; the changes function's rows of their creation
// are written with store.LogChanges from synthetic stream records (one
// per item, as its INSERT's record names it), which is what the changes
// function does with the stream's, without waiting for the engine's
// streams. The reads are then those of a real replica: every page queries
// the four buckets and reads its items, strongly consistent.
//
//   - cursor: from a cursor taken before the changes (the log, 10,000
//     rows);
//   - empty: from an empty cursor, once the changes are older than the
//     snapshot margin (as in a namespace that has been written to for a
//     while): the walk of the 10,000 current items, then the log from a
//     minute before the walk began (nothing).
//
// Each reports the time of a whole catch-up (ns/op, and the fastest of
// the iterations, fastest-s: on a shared machine the others' work only
// adds to a run's time), its pages and the
// changes it read, and the time its DynamoDB calls took, by operation
// (Query-s/op, BatchGetItem-s/op: the calls of a page are made one after
// another), so that what is left is the API's own.
func BenchmarkChangesCatchUp(b *testing.B) {
	n := 10_000
	if testing.Short() {
		n = 1_000
	}
	tables := storetest.NewTables(b)
	client := &timedClient{Client: storetest.Client(b)}
	clock := &storetest.Clock{}
	objects := blob.Objects{Bucket: blobtest.New(b)}
	st := store.New(client, tables, store.WithClock(clock.Now), store.WithObjects(objects))
	srv := httptest.NewServer(httpapi.New(httpapi.StoresOf(st), httpapi.GroupAll, httpapi.Config{
		Subject: httpapi.HeaderSubject, CursorSecret: []byte("k"), DeleteAllBudget: apitest.Budget, RequestBudget: apitest.Budget,
		Logger: apitest.Logger(b), Now: clock.Now, Bucket: objects,
	}))
	defer srv.Close()
	feed := srv.URL + base + "/catchup"

	// The replica's cursor from before the changes: the empty namespace's
	// walk hands over to the log.
	start, _, _, err := catchUp(feed, "", 1000)
	if err != nil {
		b.Fatal(err)
	}
	if err := createItems(srv.URL, n); err != nil {
		b.Fatal(err)
	}
	changes := make([]store.StreamChange, n)
	for i := range changes {
		changes[i] = store.StreamChange{Sequence: fmt.Sprintf("%021d", i), At: clock.Now(), New: map[string]types.AttributeValue{
			schema.AttrDataKey: &types.AttributeValueMemberS{Value: app + uds.KeyDelimiter + "catchup" + uds.KeyDelimiter + catchUpID(i)},
			schema.AttrVersion: &types.AttributeValueMemberN{Value: "1"},
		}}
	}
	if err := logInParallel(st, changes); err != nil {
		b.Fatal(err)
	}
	// Past the feed's horizon.
	clock.Advance(3 * time.Second)

	b.Run("cursor", func(b *testing.B) {
		var pages, read int
		client.take()
		fastest := time.Duration(0)
		for b.Loop() {
			began := time.Now()
			_, pages, read, err = catchUp(feed, start, 1000)
			if err != nil {
				b.Fatal(err)
			}
			if d := time.Since(began); fastest == 0 || d < fastest {
				fastest = d
			}
		}
		b.ReportMetric(fastest.Seconds(), "fastest-s")
		b.ReportMetric(float64(pages), "pages/op")
		b.ReportMetric(float64(read), "changes/op")
		client.report(b)
		if read < n {
			b.Errorf("read %d changes, want %d", read, n)
		}
	})
	// The changes are older than the snapshot margin: the walk's log
	// begins after them.
	clock.Advance(2 * time.Minute)
	b.Run("empty", func(b *testing.B) {
		var pages, read int
		client.take()
		fastest := time.Duration(0)
		for b.Loop() {
			began := time.Now()
			_, pages, read, err = catchUp(feed, "", 1000)
			if err != nil {
				b.Fatal(err)
			}
			if d := time.Since(began); fastest == 0 || d < fastest {
				fastest = d
			}
		}
		b.ReportMetric(fastest.Seconds(), "fastest-s")
		b.ReportMetric(float64(pages), "pages/op")
		b.ReportMetric(float64(read), "changes/op")
		client.report(b)
		if read != n {
			b.Errorf("read %d changes, want %d", read, n)
		}
	})
}

// catchUpID is the id of the catch-up's item i.
func catchUpID(i int) string { return fmt.Sprintf("i%05d", i) }

// catchUp reads the feed at feed from cursor with limit until it is up to
// date, and returns the cursor then, the pages read and the changes they
// held.
func catchUp(feed, cursor string, limit int) (string, int, int, error) {
	pages, read := 0, 0
	for {
		res, err := testClient.Get(feed + "?changes=" + url.QueryEscape(cursor) + "&limit=" + strconv.Itoa(limit))
		if err != nil {
			return "", pages, read, err
		}
		var page struct {
			Changes  []json.RawMessage `json:"changes"`
			Cursor   string            `json:"cursor"`
			UpToDate bool              `json:"upToDate"`
		}
		raw, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err == nil && res.StatusCode != http.StatusOK {
			err = fmt.Errorf("page %d: %d %s", pages+1, res.StatusCode, raw)
		}
		if err == nil {
			err = json.Unmarshal(raw, &page)
		}
		if err != nil {
			return "", pages, read, err
		}
		pages++
		read += len(page.Changes)
		cursor = page.Cursor
		if page.UpToDate {
			return cursor, pages, read, nil
		}
	}
}

// createItems creates the catch-up's n items of 1 KB in namespace
// catchup, in atomic batches of 50, four at a time.
func createItems(srvURL string, n int) error {
	var wg sync.WaitGroup
	errs := make(chan error, n/uds.MaxAtomicOps+1)
	sem := make(chan struct{}, 4)
	for from := 0; from < n; from += uds.MaxAtomicOps {
		ops := make([]string, 0, uds.MaxAtomicOps)
		for i := from; i < min(n, from+uds.MaxAtomicOps); i++ {
			ops = append(ops, fmt.Sprintf(`{"method":"POST","path":"catchup/%s","body":%s}`, catchUpID(i), kb1))
		}
		body := `{"atomic":true,"operations":[` + strings.Join(ops, ",") + `]}`
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, err := testClient.Post(srvURL+base+"/batch", "application/json", strings.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("batch from %d: %d %s", from, res.StatusCode, raw)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// logInParallel writes the feed's rows of changes with LogChanges, in
// parts of 1,000, four at a time.
func logInParallel(st *store.Store, changes []store.StreamChange) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(changes)/1000+1)
	sem := make(chan struct{}, 4)
	for from := 0; from < len(changes); from += 1000 {
		part := changes[from:min(len(changes), from+1000)]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := st.LogChanges(context.Background(), part); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// timedClient adds up the time of the reads a feed's pages make.
type timedClient struct {
	store.Client
	query, batchGet atomic.Int64 // nanoseconds
}

func (c *timedClient) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	start := time.Now()
	defer func() { c.query.Add(int64(time.Since(start))) }()
	return c.Client.Query(ctx, in, o...)
}

func (c *timedClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	start := time.Now()
	defer func() { c.batchGet.Add(int64(time.Since(start))) }()
	return c.Client.BatchGetItem(ctx, in, o...)
}

// take starts the sums afresh.
func (c *timedClient) take() { c.query.Store(0); c.batchGet.Store(0) }

// report reports the sums per iteration of b.
func (c *timedClient) report(b *testing.B) {
	b.ReportMetric(time.Duration(c.query.Load()).Seconds()/float64(b.N), "Query-s/op")
	b.ReportMetric(time.Duration(c.batchGet.Load()).Seconds()/float64(b.N), "BatchGetItem-s/op")
}
