package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/pkg/config"
	"github.com/udsproject/uds/pkg/expiry"
	"github.com/udsproject/uds/pkg/httpapi/apitest"
	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/store/storetest"
	"github.com/udsproject/uds/pkg/store/storetest/faults"
	"github.com/udsproject/uds/pkg/streampoll"
	"github.com/udsproject/uds/pkg/uds"
)

// The streamed quota mode in the accounting workload: the tables' streams
// are read by a poller standing in for Lambda's event source mapping and
// handed to the expiry function's handler, as deployed. The stream is as
// unkind as it may be: batches are delivered twice (sometimes after newer
// ones), held back, cut at random sizes, and the handler itself meets
// DynamoDB faults (lost answers after commit, throttling, 500s, resets)
// and is now and then killed midway through a batch, which the poller then
// sends again.

// streamFaults are the stream function's own DynamoDB faults.
var streamFaults = []faults.Rule{
	{Kind: faults.LostAfterCommit, Ops: []string{"UpdateItem", "TransactWriteItems"}, Rate: 0.05},
	{Kind: faults.Throttle, Rate: 0.05},
	{Kind: faults.ServerError, Rate: 0.02},
	{Kind: faults.Reset, Rate: 0.02},
}

// streamPump reads the tables' streams while the workload runs.
type streamPump struct {
	poller *streampoll.Poller
	faults *faults.Transport
	stop   context.CancelFunc
	done   chan struct{}

	mu                                 sync.Mutex
	batches, duplicates, records, kill int
	// injected and calls are the faults and calls of the counting while
	// the workload ran.
	injected map[faults.Kind]int
	calls    int
}

func startStreamPump(t *testing.T, tables store.Tables, seed uint64) *streamPump {
	t.Helper()
	ctx := context.Background()
	client, ft := storetest.FaultyClient(t, seed+1<<20)
	ft.Set(streamFaults...)
	handle := expiry.Handler(store.New(client, tables), slog.New(slog.DiscardHandler), emf.NewWriter(io.Discard))
	p := &streamPump{faults: ft, done: make(chan struct{})}
	rng := rand.New(rand.NewPCG(seed, 7))
	// killable is the handler, killed midway through one batch in ten,
	// as a function that timed out or crashed would be.
	killable := func(ctx context.Context, ev events.DynamoDBTimeWindowEvent) (events.DynamoDBTimeWindowEventResponse, error) {
		p.mu.Lock()
		kill := len(ev.Records) > 0 && rng.IntN(10) == 0
		after := time.Duration(rng.IntN(3000)) * time.Microsecond
		if kill {
			p.kill++
		}
		p.mu.Unlock()
		if kill {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, after)
			defer cancel()
		}
		return handle(ctx, ev)
	}
	found, err := streampoll.Streams(ctx, storetest.Client(t), tables.Data, tables.List, tables.History)
	if err != nil {
		t.Fatal(err)
	}
	streams, err := streampoll.NewClient(ctx, os.Getenv(config.EnvDynamoDBEndpoint))
	if err != nil {
		t.Fatal(err)
	}
	p.poller, err = streampoll.New(streams, found, killable,
		streampoll.WithInterval(50*time.Millisecond),
		// Batches refused and handed over again are the point here: the
		// lines go with the test's, shown if it fails.
		streampoll.WithLogger(apitest.Logger(t)),
		streampoll.WithFaults(streampoll.Faults{Seed: seed, Duplicate: 0.2, Late: 0.2, MaxDelay: 300 * time.Millisecond, Split: true}),
		streampoll.WithDeliveries(func(d streampoll.Delivery) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.batches++
			p.records += d.Records
			if d.Duplicate {
				p.duplicates++
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	p.stop = stop
	go func() {
		defer close(p.done)
		p.poller.Run(runCtx)
	}()
	t.Cleanup(func() { stop(); <-p.done })
	return p
}

// settle lets the stream function count everything written so far, fault
// free, and stops the pump.
func (p *streamPump) settle(t *testing.T) {
	t.Helper()
	p.injected, p.calls = p.faults.Injected()
	p.faults.Set()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.poller.Drain(ctx); err != nil {
		t.Fatalf("draining the streams: %v", err)
	}
	p.stop()
	<-p.done
}

func (p *streamPump) stats() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("%d batches (%d delivered again), %d records, %d batches killed midway; the counting's %d DynamoDB calls while the workers wrote, faults %v",
		p.batches, p.duplicates, p.records, p.kill, p.calls, p.injected)
}

// overshootTally is how far the owners of streamed scenarios passed their
// limits, stored, once the streams had settled.
type overshootTally struct {
	mu           sync.Mutex
	owners, over int
	items, bytes int64
}

func (o *overshootTally) add(real uds.Usage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.owners++
	if real.Items > limitItems || real.Bytes > limitBytes {
		o.over++
	}
	o.items = max(o.items, real.Items-limitItems)
	o.bytes = max(o.bytes, real.Bytes-limitBytes)
}

func (o *overshootTally) report(t *testing.T) {
	if o.owners > 0 {
		t.Logf("streamed: %d of %d owners ended over their limit (%d items, %d bytes); most over: %d items, %d bytes",
			o.over, o.owners, limitItems, limitBytes, max(o.items, 0), max(o.bytes, 0))
	}
}
