package main

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/udsproject/uds/pkg/httpapi"
)

// outcome is one request's answer as the caller saw it: its status (0
// when none came) and how long it took.
type outcome struct {
	status  int
	latency time.Duration
}

// drive sends GET path as subject at perSecond requests a second for d,
// evenly spaced (open loop: a request is sent on time whether or not the
// ones before it were answered), the i-th to servers[i%len(servers)], and
// returns every outcome once all are answered. A slow start is caught up:
// the schedule, not the last send, sets when the next request goes.
func drive(ctx context.Context, client *http.Client, servers []string, path, subject string, perSecond float64, d time.Duration) []outcome {
	n := int(perSecond * d.Seconds())
	out := make([]outcome, n)
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
			out[i] = get(ctx, client, servers[i%len(servers)]+path, subject)
		}()
	}
	wg.Wait()
	return out
}

// get sends one request and reads its answer to the end, so that the
// connection is kept for the next.
func get(ctx context.Context, client *http.Client, url, subject string) outcome {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return outcome{}
	}
	req.Header.Set(httpapi.SubjectHeader, subject)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return outcome{latency: time.Since(start)}
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return outcome{status: resp.StatusCode, latency: time.Since(start)}
}
