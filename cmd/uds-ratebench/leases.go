package main

import (
	"encoding/json"
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

// leaseCounter counts, at a proxy between the servers and the DynamoDB
// engine (localbench.Proxy), the writes to rate buckets: UpdateItem of an
// apps-table item whose key starts with "rate#" (package store).
type leaseCounter struct {
	// interval is a token's time in the buckets' TAT, in microseconds:
	// every limit of the run has one rate.
	interval int64

	mu     sync.Mutex
	counts leaseCounts
}

func newLeaseCounter(rate uds.Rate) *leaseCounter {
	return &leaseCounter{interval: 1_000_000 / rate.PerSecond}
}

// snapshot returns the counts so far.
func (p *leaseCounter) snapshot() leaseCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts
}

// count adds one call to the counts when it wrote a rate bucket.
func (p *leaseCounter) count(target string, call []byte, status int, answer []byte) {
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
func (p *leaseCounter) tokens(values map[string]struct{ N string }) int64 {
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
