package wsgateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/udsproject/uds/internal/emf"
)

// Poster posts messages to connections and closes them: the stage's
// Management API (*Management).
type Poster interface {
	Post(ctx context.Context, id string, msg []byte) error
	Close(ctx context.Context, id string) error
}

// Deliverer is the function that takes the queue's events: for each, in
// its connection's order, it loads the connection's session, has the
// engine take the event, saves the session and posts the engine's
// messages. Every message a connection receives is posted by the one
// worker that holds its message group, so it arrives in the order the
// engine made it: the engine shows an item as it is when the message is
// made, and two workers posting to one connection could show an older
// version after a newer one.
//
// The session is saved before its messages are posted, with the id of
// the queue message being served. A connection whose messages cannot all
// be posted is closed, so that its client reconnects and resumes each
// subscription from the last cursor it received: nothing is lost, only
// time. A queue message handed over again after its session was saved
// (the function stopped while posting) finds its own id saved, cannot
// know what its client received, and closes the connection the same way.
type Deliverer struct {
	conns   *Connections
	engine  Engine
	poster  Poster
	log     *slog.Logger
	metrics *emf.Writer
}

// NewDeliverer delivers the events of the connections in conns through
// engine, posting with poster. metrics may be nil.
func NewDeliverer(conns *Connections, engine Engine, poster Poster, log *slog.Logger, metrics *emf.Writer) *Deliverer {
	return &Deliverer{conns: conns, engine: engine, poster: poster, log: log, metrics: metrics}
}

// outcome counts what a batch did.
type outcome struct {
	mu                     sync.Mutex
	events, posted, closed int
	// postFailures are connections closed because a message could not be
	// posted to them (not those API Gateway had closed already).
	postFailures int
}

func (o *outcome) add(posted, closed, postFailures int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events++
	o.posted += posted
	o.closed += closed
	o.postFailures += postFailures
}

// Handle serves one batch of the FIFO queue. The batch may hold several
// connections' events: each connection's are taken in order, the
// connections side by side. An event that fails is reported failed with
// every later event of its connection, so that the queue hands them over
// again in the same order.
func (d *Deliverer) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	start := time.Now()
	var groups [][]events.SQSMessage
	index := map[string]int{}
	for _, rec := range ev.Records {
		g := rec.Attributes["MessageGroupId"]
		i, ok := index[g]
		if !ok {
			i = len(groups)
			index[g] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], rec)
	}
	var (
		out      outcome
		mu       sync.Mutex
		failed   []events.SQSBatchItemFailure
		wg       sync.WaitGroup
		firstErr error
	)
	for _, group := range groups {
		wg.Go(func() {
			for i, rec := range group {
				err := d.deliver(ctx, rec, &out)
				if err != nil && receives(rec) >= giveUp {
					// Tried enough: the connection is closed, as a local
					// session ends on a failure, and its client resumes.
					// Its later events find it gone.
					id := rec.Attributes["MessageGroupId"]
					if d.close(ctx, id, "its event failed "+strconv.Itoa(giveUp)+" times: "+err.Error()) == nil {
						out.add(0, 1, 0)
						err = nil
					}
				}
				if err != nil {
					mu.Lock()
					firstErr = firstError(firstErr, err)
					for _, r := range group[i:] {
						failed = append(failed, events.SQSBatchItemFailure{ItemIdentifier: r.MessageId})
					}
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	attrs := []slog.Attr{
		slog.Int("records", len(ev.Records)), slog.Int("connections", len(groups)),
		slog.Int("posted", out.posted), slog.Int("closed", out.closed), slog.Int("postFailures", out.postFailures),
		slog.Int("failed", len(failed)), slog.Float64("latencyMs", emf.DurationMs(time.Since(start))),
	}
	level := slog.LevelInfo
	if firstErr != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("cause", firstErr.Error()))
	}
	d.log.LogAttrs(ctx, level, "realtime batch", attrs...)
	if d.metrics != nil {
		_ = d.metrics.Write(deliverLayout, []emf.Dimension{{Name: "function", Value: FunctionDeliver}},
			[]float64{float64(out.posted), float64(out.postFailures)})
	}
	return events.SQSEventResponse{BatchItemFailures: failed}, nil
}

// deliverLayout is the EMF record of a batch: the messages posted, and
// the connections closed because a message could not be posted to them,
// which an alarm reads.
var deliverLayout = emf.NewLayout(emf.Directive{DimensionSets: [][]string{{"function"}}, Metrics: []emf.Metric{
	{Name: "Deliveries", Unit: emf.Count}, {Name: "PostFailures", Unit: emf.Count},
}})

// deliver takes one event. It returns an error only when the event is to
// be handed over again: the session has not been saved.
func (d *Deliverer) deliver(ctx context.Context, rec events.SQSMessage, out *outcome) error {
	ev, err := decodeEvent(rec.Body)
	if err != nil {
		// Nothing sends such a message; handing it over again would
		// not change it.
		d.log.ErrorContext(ctx, "realtime event dropped", slog.String("messageId", rec.MessageId), slog.String("cause", err.Error()))
		out.add(0, 0, 0)
		return nil
	}
	conn, err := d.conns.Load(ctx, ev.Connection)
	switch {
	case err != nil:
		return err
	case conn == nil:
		// Closed: its events have nobody to go to.
		out.add(0, 0, 0)
		return nil
	case conn.Posting == rec.MessageId:
		if err := d.close(ctx, ev.Connection, "its event came again after its session was saved"); err != nil {
			return err
		}
		out.add(0, 1, 0)
		return nil
	}
	sess := &Session{
		Connection: conn.ID, Subject: conn.Subject, State: conn.State,
		Watches: connectionWatcher{conns: d.conns, id: conn.ID, expires: conn.Expires},
	}
	msgs, err := d.engine.Handle(ctx, sess, ev)
	if err != nil {
		return err
	}
	if len(msgs) == 0 && bytes.Equal(sess.State, conn.State) {
		out.add(0, 0, 0)
		return nil
	}
	switch err := d.conns.Save(ctx, conn.ID, sess.State, rec.MessageId); {
	case errors.Is(err, errNoConnection):
		out.add(0, 0, 0)
		return nil
	case err != nil:
		return err
	}
	for i, m := range msgs {
		switch err := d.poster.Post(ctx, conn.ID, m); {
		case errors.Is(err, ErrGone):
			if err := d.conns.Close(ctx, conn.ID); err != nil {
				d.log.WarnContext(ctx, "realtime connection not removed", slog.String("connection", conn.ID), slog.String("cause", err.Error()))
			}
			out.add(i, 1, 0)
			return nil
		case err != nil:
			// Handed over again, the event finds its id saved and
			// closes the connection then.
			if err := d.close(ctx, conn.ID, "a message could not be posted: "+err.Error()); err != nil {
				return err
			}
			out.add(i, 1, 1)
			return nil
		}
	}
	out.add(len(msgs), 0, 0)
	return nil
}

// giveUp is how often an event is tried before its connection is closed
// for it. The queue's redrive to its dead-letter queue comes after more
// tries than this: an event there is one whose connection could not even
// be closed, and a connection whose event was skipped would miss it, so
// the dead-letter queue's alarm is worth a look at once.
const giveUp = 3

// receives is how often the queue has handed the message over.
func receives(rec events.SQSMessage) int {
	n, _ := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	return n
}

// close closes a connection that cannot be served in order, so that its
// client reconnects and resumes from its cursors, and removes its
// records (API Gateway's $disconnect would, later). A connection that
// could not be closed keeps its records, and the error has its event
// handed over again: a client left connected with its events dropped
// would wait for changes that never come.
func (d *Deliverer) close(ctx context.Context, id, why string) error {
	d.log.WarnContext(ctx, "realtime connection closed", slog.String("connection", id), slog.String("why", why))
	if err := d.poster.Close(ctx, id); err != nil {
		return fmt.Errorf("close connection %s: %w", id, err)
	}
	if err := d.conns.Close(ctx, id); err != nil {
		d.log.WarnContext(ctx, "realtime connection not removed", slog.String("connection", id), slog.String("cause", err.Error()))
	}
	return nil
}
