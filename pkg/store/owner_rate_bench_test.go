package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/expiry"
	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/streampoll"
	"github.com/udsproject/uds/pkg/uds"
)

// conflictCounter counts the transactions DynamoDB cancelled because
// another transaction held one of their items. The store sends those again
// inside its transact, out of the caller's sight; counting them at the
// client shows how often an owner's writers collide on its usage record.
type conflictCounter struct {
	store.Client
	sent, conflicts atomic.Int64
}

func (c *conflictCounter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := c.Client.TransactWriteItems(ctx, in, o...)
	c.sent.Add(1)
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) && slices.ContainsFunc(tce.CancellationReasons, func(r types.CancellationReason) bool {
		return aws.ToString(r.Code) == "TransactionConflict"
	}) {
		c.conflicts.Add(1)
	}
	return out, err
}

// BenchmarkOwnerRate measures how fast one owner can write: N writers
// create distinct 1 KB items at once, all owned by one owner (so every
// transaction also updates that owner's one usage record); the same N
// writers each with an owner of its own, for comparison; and, as the floor,
// N writers putting the same stored item under new keys with a bare
// conditional PutItem (no usage record, no transaction); and one owner's
// N writers again with the app in streamed quota mode. It reports
// creates a second, the transactions cancelled by a conflict and the
// transactions sent again (or the puts the SDK retried) per
// create, and the latency of a create. The owners have a quota, as
// deployments do, so the usage update carries its condition. With -short
// (make test runs every benchmark once) only 1 and 4 writers run.
func BenchmarkOwnerRate(b *testing.B) {
	client := storetest.Client(b)
	counter := &conflictCounter{Client: client}
	tables := storetest.NewStreamedTables(b) // the streamed rows read the streams
	s := store.New(counter, tables, store.WithDefaultLimits(uds.Limits{Bytes: 1 << 40, Items: 1 << 30}))
	data := json.RawMessage(`{"note":"` + strings.Repeat("x", 1000) + `"}`)
	stored := storedItem(b, s, counter, tables.Data, write(key(b, "rate", "stored"), string(data)))
	writers := []int{1, 4, 16, 64}
	if testing.Short() {
		writers = writers[:2]
	}
	run := 0
	// The streamed rows come last: they switch the app to streamed mode,
	// where a create is a plain conditional put and the usage record is
	// written only by the stream's counting.
	var lag *lagMeter
	for _, mode := range []string{"one-owner", "owner-each", "bare-put", "one-owner-streamed"} {
		if mode == "one-owner-streamed" {
			if err := s.SetQuotaMode(context.Background(), app, uds.QuotaStreamed); err != nil {
				b.Fatal(err)
			}
			lag = startLagMeter(b, client, tables)
		}
		for _, n := range writers {
			b.Run(fmt.Sprintf("%s/writers=%d", mode, n), func(b *testing.B) {
				run++
				subject := func(w int) string {
					if strings.HasPrefix(mode, "one-owner") {
						return "owner"
					}
					return fmt.Sprintf("owner-%d-%d", n, w)
				}
				create := func(ctx context.Context, w int, id string) error {
					wr := uds.Write{Key: key(b, "rate", id), Data: data, Subject: subject(w)}
					if mode == "bare-put" {
						return barePut(ctx, client, tables.Data, stored, wr)
					}
					_, err := s.Create(ctx, wr)
					if err == nil && lag != nil {
						lag.wrote(wr.DataKey())
					}
					return err
				}
				// Each owner's first write reads its limits; a warm cache is
				// what a steady load meets.
				for w := range n {
					if err := create(context.Background(), w, fmt.Sprintf("warm-%d-%d", run, w)); err != nil {
						b.Fatal(err)
					}
				}
				if lag != nil {
					lag.reset(b)
				}
				ctx, stats := store.WithCallStats(context.Background())
				sent, conflicts := counter.sent.Load(), counter.conflicts.Load()
				latencies := make([][]time.Duration, n)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for w := range n {
					wg.Go(func() {
						for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
							start := time.Now()
							if err := create(ctx, w, fmt.Sprintf("%d-%d", run, i)); err != nil {
								b.Error(err)
								return
							}
							latencies[w] = append(latencies[w], time.Since(start))
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				creates := float64(b.N)
				// A bare put is one call; a create, one transaction (in
				// streamed mode, none).
				firsts := int64(0)
				if mode == "one-owner" || mode == "owner-each" {
					firsts = int64(b.N)
				}
				all := slices.Sorted(slices.Values(slices.Concat(latencies...)))
				b.ReportMetric(creates/b.Elapsed().Seconds(), "creates/s")
				b.ReportMetric(float64(counter.conflicts.Load()-conflicts)/creates, "conflicts/create")
				// A create's transaction sent again, by transact or by the
				// commit loop, passes the counter; a bare put is retried by
				// the SDK.
				retried := counter.sent.Load() - sent - firsts
				if mode == "bare-put" {
					retried = int64(stats.Snapshot().Retries)
				}
				b.ReportMetric(float64(retried)/creates, "retries/create")
				b.ReportMetric(float64(percentile(all, 50))/1e6, "p50-ms")
				b.ReportMetric(float64(percentile(all, 99))/1e6, "p99-ms")
				if lag != nil {
					lag.report(b, b.N)
				}
			})
		}
	}
}

// storedItem creates w through the store and reads back its item as
// stored, attribute by attribute, for bare puts of the same item.
func storedItem(b *testing.B, s *store.Store, c store.Client, table string, w uds.Write) map[string]types.AttributeValue {
	b.Helper()
	ctx := context.Background()
	if _, err := s.Create(ctx, w); err != nil {
		b.Fatal(err)
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{schema.AttrDataKey: &types.AttributeValueMemberS{Value: w.DataKey()}},
	})
	if err != nil || out.Item == nil {
		b.Fatalf("read the stored item: %v", err)
	}
	return out.Item
}

// barePut writes the stored item under w's key and owner with the one
// condition a create needs, that the key is free: what a write costs
// without its usage change.
func barePut(ctx context.Context, c *dynamodb.Client, table string, stored map[string]types.AttributeValue, w uds.Write) error {
	item := maps.Clone(stored)
	item[schema.AttrDataKey] = &types.AttributeValueMemberS{Value: w.DataKey()}
	item[schema.AttrOwnerKey] = &types.AttributeValueMemberS{Value: w.App + uds.KeyDelimiter + w.Subject}
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table), Item: item,
		ConditionExpression:      aws.String("attribute_not_exists(#k)"),
		ExpressionAttributeNames: map[string]string{"#k": schema.AttrDataKey},
	})
	return err
}

// percentile is the p-th percentile of sorted durations (0 for none).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}

// lagMeter measures the stream's lag as streamed counting meets it: from a
// create's answer to the moment its record is counted into the usage
// record, through the poller standing in for Lambda's event source
// mapping (polling every 50 ms) and the stream function's handler. It also
// counts the batches the handler wrote, one usage record write per owner
// and batch: what the counting costs per create. DynamoDB Local rounds the
// records' own instants to the minute, so the lag is timed here.
type lagMeter struct {
	poller  *streampoll.Poller
	mu      sync.Mutex
	written map[string]time.Time
	lags    []time.Duration
	batches int
}

func startLagMeter(b *testing.B, client *dynamodb.Client, tables store.Tables) *lagMeter {
	b.Helper()
	ctx := context.Background()
	m := &lagMeter{written: map[string]time.Time{}}
	handle := expiry.Handler(store.New(client, tables), slog.New(slog.DiscardHandler), emf.NewWriter(io.Discard))
	counted := func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		resp, err := handle(ctx, ev)
		if err != nil || len(resp.BatchItemFailures) > 0 || len(ev.Records) == 0 {
			return resp, err
		}
		now := time.Now()
		m.mu.Lock()
		defer m.mu.Unlock()
		m.batches++
		for _, r := range ev.Records {
			if at, ok := m.written[r.Change.Keys[schema.AttrDataKey].String()]; ok {
				m.lags = append(m.lags, now.Sub(at))
			}
		}
		return resp, err
	}
	found, err := streampoll.Streams(ctx, client, tables.Data)
	if err != nil {
		b.Fatal(err)
	}
	streams, err := streampoll.NewClient(ctx, os.Getenv(config.EnvDynamoDBEndpoint))
	if err != nil {
		b.Fatal(err)
	}
	if m.poller, err = streampoll.New(streams, found, counted, streampoll.WithInterval(50*time.Millisecond),
		streampoll.WithLogger(slog.New(slog.DiscardHandler))); err != nil {
		b.Fatal(err)
	}
	// What the other rows wrote is counted (or skipped) before the
	// streamed rows start.
	if err := m.poller.Drain(ctx); err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); m.poller.Run(runCtx) }()
	b.Cleanup(func() { stop(); <-done })
	return m
}

func (m *lagMeter) wrote(dataKey string) {
	m.mu.Lock()
	m.written[dataKey] = time.Now()
	m.mu.Unlock()
}

// reset starts a row with the stream settled.
func (m *lagMeter) reset(b *testing.B) {
	if err := m.poller.Drain(context.Background()); err != nil {
		b.Fatal(err)
	}
	m.mu.Lock()
	m.written, m.lags, m.batches = map[string]time.Time{}, nil, 0
	m.mu.Unlock()
}

// report waits for the row's creates to be counted and reports the lag
// and the counting's usage record writes per create.
func (m *lagMeter) report(b *testing.B, creates int) {
	if err := m.poller.Drain(context.Background()); err != nil {
		b.Fatal(err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lags := slices.Sorted(slices.Values(m.lags))
	b.ReportMetric(float64(percentile(lags, 50))/1e6, "lag-p50-ms")
	b.ReportMetric(float64(percentile(lags, 99))/1e6, "lag-p99-ms")
	b.ReportMetric(float64(m.batches)/float64(creates), "count-writes/create")
}
