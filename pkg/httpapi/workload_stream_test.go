package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
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
// limits, stored, once the streams had settled, against the bound.
type overshootTally struct {
	mu           sync.Mutex
	owners, over int
	items, bytes int64
	// bound is the largest bound of an owner that passed a limit.
	bound uds.Usage
}

// add notes an owner's usage once settled, and fails the test if it is
// further over the limits than bound, the overshoot streamed mode allows
// the owner (ownerWrites.bound).
func (o *overshootTally) add(t *testing.T, owner string, real, bound uds.Usage) {
	if real.Items > limitItems+bound.Items || real.Bytes > limitBytes+bound.Bytes {
		t.Errorf("%s stores %+v, over the limits of %d items, %d bytes by more than streamed mode allows: what its writes add within the tracked usage's %v and the stream's lag (at most %v) of one of its writes, %d items, %d bytes",
			owner, real, limitItems, limitBytes, store.DefaultTrackedTTL, streamLagAllowance, bound.Items, bound.Bytes)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.owners++
	if real.Items > limitItems || real.Bytes > limitBytes {
		o.over++
		o.bound.Items, o.bound.Bytes = max(o.bound.Items, bound.Items), max(o.bound.Bytes, bound.Bytes)
	}
	o.items = max(o.items, real.Items-limitItems)
	o.bytes = max(o.bytes, real.Bytes-limitBytes)
}

func (o *overshootTally) report(t *testing.T) {
	if o.owners > 0 {
		t.Logf("streamed: %d of %d owners ended over their limit (%d items, %d bytes); most over: %d items, %d bytes; the largest bound of those over: %d items, %d bytes",
			o.over, o.owners, limitItems, limitBytes, max(o.items, 0), max(o.bytes, 0), o.bound.Items, o.bound.Bytes)
	}
}

// The overshoot streamed mode allows. A streamed write is checked against
// the owner's usage record as read at most store.DefaultTrackedTTL before
// (checkTracked), and the record holds only what the stream has counted:
// the check that lets a write g through misses the writes of the owner
// that the stream had not counted by the read, and nothing else. Those
// were answered no earlier than the trackedTTL and the stream's lag before
// g was sent, and sent before g was answered (a strict write, checked
// against the record itself, misses the same ones). So an owner passes
// its limit by at most what the writes overlapping one such window add:
// one item per create (three per batch), and per write that may grow an
// item at most the largest item the workload writes. A write left without
// an answer (killed, or 503) may still land much later, on top of anything
// counted meanwhile, so its window never closes.
const (
	// streamLagAllowance bounds the workload's stream lag: a poll every
	// 50 ms, batches held back up to 300 ms, one in ten killed midway
	// and handed over again, the counting's own faults retried.
	streamLagAllowance = 2 * time.Second
	// maxWorkloadItemBytes bounds an item's quota size in the workload
	// (checkObjects holds the tables to it): values of up to about
	// 700 bytes, a key of about 70 and the store's 100 of overhead.
	maxWorkloadItemBytes = 1000
)

// ownerWrites keeps, per owner, the writes of a streamed scenario that may
// have added to its usage.
type ownerWrites struct {
	mu      sync.Mutex
	byOwner map[string][]growth
}

// growth is a write that may have added to its owner's usage: at most
// items items, and grows items made larger.
type growth struct {
	sent, answered time.Time // answered is zero for a write left without an answer
	items, grows   int64
}

// add notes a write whose answer was status, sent at sent: one that wrote
// (2xx) or may have (no answer, 503), and may add.
func (o *ownerWrites) add(owner, method, path string, sent time.Time, status int) {
	g := growth{sent: sent}
	switch {
	case method == "POST" && strings.HasSuffix(path, "/batch"):
		g.items, g.grows = 3, 3
	case method == "POST":
		g.items, g.grows = 1, 1
	case method == "PUT" || method == "PATCH":
		g.grows = 1
	default:
		return
	}
	switch {
	case status >= 200 && status < 300:
		g.answered = time.Now()
	case status != 0 && status != 503 && status != -503:
		return // refused: nothing written
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byOwner == nil {
		o.byOwner = map[string][]growth{}
	}
	o.byOwner[owner] = append(o.byOwner[owner], g)
}

// bound is how far owner may have passed its limits: the most that the
// writes overlapping the window of one of its writes add (see above).
func (o *ownerWrites) bound(owner string) uds.Usage {
	o.mu.Lock()
	defer o.mu.Unlock()
	window := store.DefaultTrackedTTL + streamLagAllowance
	ws := o.byOwner[owner]
	var most uds.Usage
	for _, g := range ws {
		var over uds.Usage
		for _, w := range ws {
			if (g.answered.IsZero() || w.sent.Before(g.answered)) && (w.answered.IsZero() || w.answered.After(g.sent.Add(-window))) {
				over.Items += w.items
				over.Bytes += w.grows * maxWorkloadItemBytes
			}
		}
		most.Items, most.Bytes = max(most.Items, over.Items), max(most.Bytes, over.Bytes)
	}
	return most
}
