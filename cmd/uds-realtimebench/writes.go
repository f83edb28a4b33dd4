package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/udsproject/uds/pkg/httpapi"
)

// ack is the answer to one write: when it was sent and when its answer was
// read (the acknowledgement), its status, and the version it created.
type ack struct {
	w       write
	sent    time.Time
	at      time.Time
	status  int
	version int64
	problem string
}

// itemBody is every write's body: a small item, about a hundred bytes of
// data, as a chat message or a status update is.
const itemBody = `{"data": {"from": "uds-realtimebench", "text": "A line of about a hundred bytes, as a chat message would be."}}`

// writeLoad sends rate writes a second for d, each at its own instant
// whatever the answers to the earlier ones (an open loop: a slow server
// does not slow the writes down), and returns their answers once all are
// in, in the order sent.
func writeLoad(ctx context.Context, client *http.Client, base, app string, conns int, rate float64, d time.Duration) []ack {
	interval := time.Duration(float64(time.Second) / rate)
	count := int(d / interval)
	acks := make([]ack, count)
	var wg sync.WaitGroup
	start := time.Now()
	for n := range count {
		if wait := time.Until(start.Add(time.Duration(n) * interval)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			acks = acks[:n]
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			acks[n] = send(ctx, client, base, app, writeAt(n, conns))
		}()
	}
	wg.Wait()
	return acks
}

// send makes one write as its writer and reads its answer.
func send(ctx context.Context, client *http.Client, base, app string, w write) ack {
	a := ack{w: w, sent: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+w.path(app), strings.NewReader(itemBody))
	if err != nil {
		a.problem = err.Error()
		return a
	}
	req.Header.Set(httpapi.SubjectHeader, subject(w.writer))
	resp, err := client.Do(req)
	if err != nil {
		a.at, a.problem = time.Now(), err.Error()
		return a
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	a.at, a.status = time.Now(), resp.StatusCode
	switch {
	case err != nil:
		a.problem = err.Error()
	case resp.StatusCode != http.StatusCreated:
		a.problem = strings.TrimSpace(string(body))
	default:
		var item struct {
			Version int64 `json:"version"`
		}
		if err := json.Unmarshal(body, &item); err != nil {
			a.problem = "the answer is not an item: " + err.Error()
		}
		a.version = item.Version
	}
	return a
}

// ok says whether the write was acknowledged: answered 201 with the item.
func (a ack) ok() bool { return a.status == http.StatusCreated && a.problem == "" }
