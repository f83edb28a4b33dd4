package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/internal/localbench"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
)

// The feed probe measures the changes feed's lag under the load: while
// the load runs, a probe creates an item every probeInterval in a
// namespace of its own, and a follower reads that namespace's feed from
// its cursor, again every followInterval once it is up to date, as a
// replica would. For each acknowledged create it records the time from
// its acknowledgement (the 201's arrival) to its first appearance in a
// page the follower received. The lag is the stream's delivery to the
// server's changes poller (reading every 200 ms when it found nothing),
// the row's write, the feed's settle (a read shows only rows at least
// 2 s old), and the follower's own wait between reads and its read.

// probeNamespace is the probe's namespace: the load's requests do not
// touch it, and its requests are left out of the load's figures.
const probeNamespace = "feedprobe"

// probeSubject is the caller the probe writes and reads as.
const probeSubject = "feed-probe"

// probeInterval is how often the probe creates an item.
const probeInterval = 100 * time.Millisecond

// followInterval is how long the follower waits after a page that left
// it up to date before it reads again.
const followInterval = 20 * time.Millisecond

// followGrace is how long the follower goes on reading after the probe's
// last write, for that write to appear: the feed's settle and the
// stream's delivery take a few seconds.
const followGrace = 10 * time.Second

// feedResult is what the probe and the follower saw.
type feedResult struct {
	// Writes are the probe's acknowledged creates; WriteErrors those not
	// answered 201.
	Writes      int `json:"writes"`
	WriteErrors int `json:"writeErrors"`
	// LagsMs are the lags of the writes that appeared, from
	// acknowledgement to first appearance; Missing counts the writes
	// that did not appear within followGrace of the probe's end.
	LagsMs  []float64 `json:"lagsMs"`
	Missing int       `json:"missing"`
	// ToRowMs and FromRowMs split the lags of the writes that appeared
	// at their rows' instants (the first row of each item), sorted
	// each.
	ToRowMs   []float64 `json:"toRowMs"`
	FromRowMs []float64 `json:"fromRowMs"`
	// Reads are the follower's reads of the feed, ReadErrors those not
	// answered 200, ReadMs their latencies (of 200 answers).
	// Batches are the server's changes batch lines of the measured
	// load's time: the feed's writer at work.
	Batches    []localbench.Batch `json:"batches"`
	Reads      int                `json:"reads"`
	ReadErrors int                `json:"readErrors"`
	ReadMs     []float64          `json:"readMs"`
}

// probeFeed runs the probe for d and the follower until every write
// appeared or followGrace after the probe's end, and returns what they
// saw. base is the API's URL; rows reads the instants of the probe's
// rows, by item id.
func probeFeed(ctx context.Context, client *http.Client, base string, d time.Duration, rows func(context.Context) (map[string]time.Time, error)) (*feedResult, error) {
	ns := base + "/data/" + benchApp + "/" + probeNamespace
	f := &follower{client: client, feed: ns, seen: map[string]time.Time{}}
	// From the empty namespace's beginning: its walk hands over to the
	// log, before the first write.
	for upToDate := false; !upToDate; {
		var err error
		if upToDate, err = f.read(ctx); err != nil {
			return nil, fmt.Errorf("the feed probe's first read: %w", err)
		}
	}
	r := &feedResult{}
	acked := map[string]time.Time{}
	var mu sync.Mutex
	probeDone := make(chan struct{})
	go func() {
		defer close(probeDone)
		tick := time.NewTicker(probeInterval)
		defer tick.Stop()
		deadline := time.Now().Add(d)
		for n := 0; time.Now().Before(deadline) && ctx.Err() == nil; n++ {
			id := fmt.Sprintf("p%06d", n)
			o := localbench.Do(ctx, client, http.MethodPost, ns+"/"+id, probeSubject, `{"data":{"n":`+fmt.Sprint(n)+`}}`)
			at := time.Now()
			mu.Lock()
			if o.Status == http.StatusCreated {
				acked[id] = at
			} else {
				r.WriteErrors++
			}
			mu.Unlock()
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
	}()
	var graceEnd time.Time
follow:
	for {
		upToDate, err := f.read(ctx)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		select {
		case <-probeDone:
			// The probe's writes are all in acked now.
			if graceEnd.IsZero() {
				graceEnd = time.Now().Add(followGrace)
			}
			if f.sawAll(acked) || time.Now().After(graceEnd) {
				break follow
			}
		default:
		}
		if upToDate || err != nil {
			select {
			case <-time.After(followInterval):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	instants, err := rows(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the feed probe's rows: %w", err)
	}
	r.Writes, r.Reads, r.ReadErrors, r.ReadMs = len(acked), f.reads, f.readErrors, f.readMs
	for id, at := range acked {
		seen, ok := f.seen[id]
		if !ok {
			r.Missing++
			continue
		}
		r.LagsMs = append(r.LagsMs, ms(seen.Sub(at)))
		if row, ok := instants[id]; ok {
			r.ToRowMs, r.FromRowMs = append(r.ToRowMs, ms(row.Sub(at))), append(r.FromRowMs, ms(seen.Sub(row)))
		}
	}
	slices.Sort(r.LagsMs)
	slices.Sort(r.ToRowMs)
	slices.Sort(r.FromRowMs)
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rowInstants reads the instants of the probe's rows from the changes
// table over the engine at endpoint: the first row's of each item, by
// item id. It scans the table, which holds the load's rows too.
func rowInstants(endpoint, table string) func(context.Context) (map[string]time.Time, error) {
	return func(ctx context.Context) (map[string]time.Time, error) {
		client, err := store.NewClient(ctx, endpoint)
		if err != nil {
			return nil, err
		}
		prefix := benchApp + uds.KeyDelimiter + probeNamespace + uds.KeyDelimiter
		pages := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{
			TableName:                aws.String(table),
			FilterExpression:         aws.String("begins_with(#k, :p)"),
			ExpressionAttributeNames: map[string]string{"#k": schema.AttrChangesKey},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":p": &types.AttributeValueMemberS{Value: prefix},
			},
			ConsistentRead: aws.Bool(true),
		})
		instants := map[string]time.Time{}
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			for _, row := range page.Items {
				key, _ := row[schema.AttrDataKey].(*types.AttributeValueMemberS)
				seq, _ := row[schema.AttrChangeSeq].(*types.AttributeValueMemberS)
				if key == nil || seq == nil || !strings.HasPrefix(key.Value, prefix) || len(seq.Value) < seqMillis {
					continue
				}
				n, err := strconv.ParseInt(seq.Value[:seqMillis], 10, 64)
				if err != nil {
					continue
				}
				id, at := strings.TrimPrefix(key.Value, prefix), time.UnixMilli(n)
				if first, ok := instants[id]; !ok || at.Before(first) {
					instants[id] = at
				}
			}
		}
		return instants, nil
	}
}

// seqMillis is the width of the millisecond a row's sort key starts with
// (store's seqWidth).
const seqMillis = 14

// follower reads a namespace's feed from its cursor and notes when each
// item first appeared.
type follower struct {
	client *http.Client
	feed   string
	cursor string
	seen   map[string]time.Time

	reads, readErrors int
	readMs            []float64
}

// read reads one page of the feed and says whether it left the follower
// up to date.
func (f *follower) read(ctx context.Context) (bool, error) {
	f.reads++
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.feed+"?limit=1000&changes="+url.QueryEscape(f.cursor), nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("X-Uds-Subject", probeSubject)
	start := time.Now()
	res, err := f.client.Do(req)
	if err != nil {
		f.readErrors++
		return false, err
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	at := time.Now()
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("%d %s", res.StatusCode, strings.TrimSpace(string(raw)))
	}
	var page struct {
		Changes []struct {
			ID string `json:"id"`
		} `json:"changes"`
		Cursor   string `json:"cursor"`
		UpToDate bool   `json:"upToDate"`
	}
	if err == nil {
		err = json.Unmarshal(raw, &page)
	}
	if err != nil {
		f.readErrors++
		return false, err
	}
	f.readMs = append(f.readMs, float64(at.Sub(start))/float64(time.Millisecond))
	for _, c := range page.Changes {
		if _, ok := f.seen[c.ID]; !ok {
			f.seen[c.ID] = at
		}
	}
	f.cursor = page.Cursor
	return page.UpToDate, nil
}

// sawAll reports whether every acknowledged write has appeared.
func (f *follower) sawAll(acked map[string]time.Time) bool {
	for id := range acked {
		if _, ok := f.seen[id]; !ok {
			return false
		}
	}
	return true
}
