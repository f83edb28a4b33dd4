package main

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/udsproject/uds/internal/localbench"
)

// drive sends GET path as subject at perSecond requests a second for d,
// evenly spaced (open loop: a request is sent on time whether or not the
// ones before it were answered), the i-th to servers[i%len(servers)], and
// returns every outcome once all are answered. A slow start is caught up:
// the schedule, not the last send, sets when the next request goes.
func drive(ctx context.Context, client *http.Client, servers []string, path, subject string, perSecond float64, d time.Duration) []localbench.Outcome {
	n := int(perSecond * d.Seconds())
	out := make([]localbench.Outcome, n)
	interval := time.Duration(float64(time.Second) / perSecond)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			select {
			case <-ctx.Done():
				out = out[:i]
				wg.Wait()
				return out
			case <-time.After(wait):
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = localbench.Do(ctx, client, http.MethodGet, servers[i%len(servers)]+path, subject, "")
		}()
	}
	wg.Wait()
	return out
}
