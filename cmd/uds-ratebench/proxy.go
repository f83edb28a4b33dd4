package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/udsproject/uds/pkg/schema"
	"github.com/udsproject/uds/pkg/uds"
)

// leaseCounts is what the rate limiter's writes cost: conditional writes
// to a rate bucket that committed, those whose condition failed, the
// write units of both, and the tokens the committed ones took. A failed conditional write is charged too
// (DynamoDB bills the existing item's size, at least one unit), but its
// error carries no consumed capacity, so the servers' request lines leave
// it out: only a count at the wire sees it.
type leaseCounts struct {
	Writes, Failed, Errors int
	Units                  float64
	Tokens                 int64
}

// countingProxy stands between the servers and the DynamoDB engine and
// counts the writes to rate buckets (UpdateItem of an apps-table item
// whose key starts with "rate#", package store), passing every call on
// unchanged.
type countingProxy struct {
	target string
	client *http.Client
	// interval is a token's time in the buckets' TAT, in microseconds:
	// every limit of the run has one rate.
	interval int64

	mu     sync.Mutex
	counts leaseCounts
}

func newCountingProxy(target string, rate uds.Rate) *countingProxy {
	// DisableCompression keeps the engine's answer byte for byte: the
	// SDK checks its CRC32.
	return &countingProxy{target: strings.TrimSuffix(target, "/"), interval: 1_000_000 / rate.PerSecond, client: &http.Client{
		Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64},
	}}
}

// snapshot returns the counts so far.
func (p *countingProxy) snapshot() leaseCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts
}

func (p *countingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading the call: "+err.Error(), http.StatusBadGateway)
		return
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := p.client.Do(out)
	if err != nil {
		http.Error(w, "calling the engine: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, "reading the engine's answer: "+err.Error(), http.StatusBadGateway)
		return
	}
	p.count(r.Header.Get("X-Amz-Target"), body, resp.StatusCode, answer)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// count adds one call to the counts when it wrote a rate bucket.
func (p *countingProxy) count(target string, call []byte, status int, answer []byte) {
	if !strings.HasSuffix(target, ".UpdateItem") {
		return
	}
	var in struct {
		Key                       map[string]struct{ S string }
		ExpressionAttributeValues map[string]struct{ N string }
	}
	if json.Unmarshal(call, &in) != nil || !strings.HasPrefix(in.Key[schema.AttrApp].S, "rate#") {
		return
	}
	var res struct {
		Type             string `json:"__type"`
		ConsumedCapacity struct{ CapacityUnits float64 }
	}
	_ = json.Unmarshal(answer, &res)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case status == http.StatusOK:
		p.counts.Writes++
		p.counts.Units += res.ConsumedCapacity.CapacityUnits
		p.counts.Tokens += p.tokens(in.ExpressionAttributeValues)
	case strings.HasSuffix(res.Type, "#ConditionalCheckFailedException"):
		// A bucket's item is far below 1 KB: one unit.
		p.counts.Failed++
		p.counts.Units++
	default:
		p.counts.Errors++
	}
}

// tokens is what a committed lease took, read from its values as
// package store writes them: the time it adds to a drawn bucket's TAT
// (:cost), or the TAT it gives an idle one (:next) less now (:now).
func (p *countingProxy) tokens(values map[string]struct{ N string }) int64 {
	n := func(name string) int64 {
		v, _ := strconv.ParseInt(values[name].N, 10, 64)
		return v
	}
	if _, ok := values[":cost"]; ok {
		return n(":cost") / p.interval
	}
	return (n(":next") - n(":now")) / p.interval
}

// minus is the counts of a span: c less what was counted before it.
func (c leaseCounts) minus(before leaseCounts) leaseCounts {
	return leaseCounts{Writes: c.Writes - before.Writes, Failed: c.Failed - before.Failed,
		Errors: c.Errors - before.Errors, Units: c.Units - before.Units, Tokens: c.Tokens - before.Tokens}
}
