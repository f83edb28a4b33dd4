package wsgateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"time"

	"github.com/udsproject/uds/internal/emf"
	"github.com/udsproject/uds/pkg/store"
)

// Subscribers lists the connections that watch a feed (*Connections).
type Subscribers interface {
	Subscribers(ctx context.Context, feed string) ([]string, error)
}

// Publisher hands the rows the changes function lands to the connections
// that watch their feeds: one event per connection, on the queue, under
// the connection's message group. It never fails the changes function's
// batch: the feed is written, and whoever missed a row can read it there.
// A connection whose event could not be queued is closed instead, so that
// its client reconnects and resumes from its cursors; only a failure to
// learn a feed's subscribers leaves them waiting for the next change,
// which the PublishFailures alarm tells.
type Publisher struct {
	subs    Subscribers
	queue   Queue
	close   Closer
	log     *slog.Logger
	metrics *emf.Writer
	// budget bounds one call of Landed: the changes function's batch
	// waits for it.
	budget time.Duration
}

// publishBudget is how long a batch's rows may take to publish.
const publishBudget = 5 * time.Second

// NewPublisher publishes to the subscribers subs lists, through queue,
// closing with closer the connections it cannot reach. metrics may be nil.
func NewPublisher(subs Subscribers, queue Queue, closer Closer, log *slog.Logger, metrics *emf.Writer) *Publisher {
	return &Publisher{subs: subs, queue: queue, close: closer, log: log, metrics: metrics, budget: publishBudget}
}

// Landed queues rows the changes function has just written for their
// feeds' subscribers (store.WithLanded's function). Each connection gets
// the rows of the feeds it watches, in the order given, in as few events
// as fit a queue message.
//
// Each event carries the instant its publish started less the budget:
// every row that landed before then was published, within the budget,
// before this publish began, so its event is ahead of this one in the
// connection's queue, or failed and closed the connection. That is what
// lets the engine move a subscription's cursor past what it has shown,
// whichever of the changes function's invocations (one per stream shard)
// landed it.
func (p *Publisher) Landed(landed []store.FeedRow) {
	rows := make([]Row, len(landed))
	for i, r := range landed {
		rows[i] = rowOf(r)
	}
	p.publish(rows)
}

func (p *Publisher) publish(rows []Row) {
	if len(rows) == 0 {
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), p.budget)
	defer cancel()
	byFeed := map[string][]int{}
	var feeds []string
	for i, r := range rows {
		f := r.Feed()
		if _, ok := byFeed[f]; !ok {
			feeds = append(feeds, f)
		}
		byFeed[f] = append(byFeed[f], i)
	}
	// Each connection's rows, in the batch's order.
	perConn := map[string][]int{}
	var conns []string
	failures := 0
	for _, f := range feeds {
		ids, err := p.subs.Subscribers(ctx, f)
		if err != nil {
			failures++
			p.log.ErrorContext(ctx, "realtime publish failed", slog.String("cause", err.Error()))
			continue
		}
		for _, id := range ids {
			if _, ok := perConn[id]; !ok {
				conns = append(conns, id)
			}
			perConn[id] = append(perConn[id], byFeed[f]...)
		}
	}
	var evs []Event
	for _, id := range conns {
		// A connection that watches several feeds takes their rows in
		// the batch's order.
		slices.Sort(perConn[id])
		evs = append(evs, eventsOf(id, rows, perConn[id], start.Add(-p.budget))...)
	}
	closed := 0
	if len(evs) > 0 {
		failed, err := p.queue.Send(ctx, evs)
		if err != nil {
			p.log.ErrorContext(ctx, "realtime publish failed", slog.String("cause", err.Error()))
		}
		seen := map[string]bool{}
		for _, e := range failed {
			if seen[e.Connection] {
				continue
			}
			seen[e.Connection] = true
			closed++
			if err := p.close.Close(ctx, e.Connection); err != nil {
				failures++
				p.log.ErrorContext(ctx, "realtime connection not closed", slog.String("connection", e.Connection), slog.String("cause", err.Error()))
			}
		}
	}
	level := slog.LevelDebug
	if failures > 0 || closed > 0 {
		level = slog.LevelWarn
	}
	p.log.LogAttrs(ctx, level, "realtime publish",
		slog.Int("rows", len(rows)), slog.Int("feeds", len(feeds)), slog.Int("connections", len(conns)),
		slog.Int("events", len(evs)), slog.Int("closed", closed), slog.Int("failures", failures),
		slog.Float64("latencyMs", emf.DurationMs(time.Since(start))))
	if p.metrics != nil && failures+closed > 0 {
		_ = p.metrics.Write(publishLayout, []emf.Dimension{{Name: "function", Value: FunctionChanges}}, []float64{float64(failures + closed)})
	}
}

// publishLayout is the EMF record of a publish that failed somewhere:
// feeds whose subscribers could not be read, and connections closed
// because their events could not be queued. Only failures write it, so
// that it costs nothing while all is well.
var publishLayout = emf.NewLayout(emf.Directive{DimensionSets: [][]string{{"function"}}, Metrics: []emf.Metric{
	{Name: "PublishFailures", Unit: emf.Count},
}})

// eventsOf splits one connection's rows (indexes into rows) into events
// that each fit a queue message.
func eventsOf(id string, rows []Row, indexes []int, landed time.Time) []Event {
	var evs []Event
	var cur []Row
	size := 0
	for _, i := range indexes {
		b, _ := json.Marshal(rows[i])
		if len(cur) > 0 && size+len(b)+1 > maxEventBytes {
			evs = append(evs, Event{Connection: id, Rows: cur, Landed: landed})
			cur, size = nil, 0
		}
		cur = append(cur, rows[i])
		size += len(b) + 1
	}
	if len(cur) > 0 {
		evs = append(evs, Event{Connection: id, Rows: cur, Landed: landed})
	}
	return evs
}
