package main

import (
	"fmt"
	"slices"
	"time"
)

// tally is what the run's writes and receipts come to.
type tally struct {
	// writes are the writes sent, writeErrors those not acknowledged
	// (not answered 201 with the item), firstWriteError what the first
	// said.
	writes, writeErrors int
	firstWriteError     string
	// writeMs are the acknowledged writes' latencies, sorted.
	writeMs []float64

	// expected counts the deliveries the acknowledged writes call for
	// (each to every subscription that sees it), received those that
	// came, missing those that did not; missingExamples names a few.
	expected, received, missing int
	missingExamples             []string
	// duplicates are changes received again by a subscription that had
	// them (the protocol allows it), unexpected those that match no
	// acknowledged write's expected delivery.
	duplicates, unexpected int
	unexpectedExamples     []string

	// latencyMs are the received deliveries' latencies of the measured
	// writes (acknowledged once the warm-up was over), from the write's
	// acknowledgement to the message's read, sorted; byKind the same by
	// the kind of subscription.
	latencyMs []float64
	byKind    [kinds][]float64
	// beforeAck counts the measured deliveries read before their
	// write's acknowledgement (a latency below zero).
	beforeAck int
	// toRowMs are the measured writes' times from acknowledgement to
	// their row's instant in the changes table, fromRowMs the measured
	// deliveries' from that instant to their receipt, sorted, of the
	// writes whose row was found; noRow counts the measured writes whose
	// row was not.
	toRowMs, fromRowMs []float64
	noRow              int
	// toRowByTable are toRowMs by the table the item is in: key-value
	// items' (the data table), then list items' (the list table). The
	// changes handler reads the two tables' streams.
	toRowByTable [2][]float64
}

// maxExamples bounds the examples a tally names.
const maxExamples = 5

// deliveryKey names one delivery: a change of one item at one version to
// one subscription of one connection.
type deliveryKey struct {
	conn        int
	sub         string
	namespace   string
	id, sortKey string
	version     int64
}

func (k deliveryKey) String() string {
	item := k.id
	if k.sortKey != "" {
		item += "/" + k.sortKey
	}
	return fmt.Sprintf("%s/%s version %d to connection %d's %s", k.namespace, item, k.version, k.conn, k.sub)
}

// match pairs every acknowledged write's expected deliveries with the
// changes the connections received. receipts[c] are connection c's; rows
// are the instants of the writes' rows in the changes table, by write.
func match(acks []ack, receipts [][]receipt, rows map[int]time.Time, measuredFrom time.Time) tally {
	t := tally{writes: len(acks)}
	first := map[deliveryKey]time.Time{}
	for c, rs := range receipts {
		for _, r := range rs {
			k := r.key(c)
			if _, ok := first[k]; ok {
				t.duplicates++
				continue
			}
			first[k] = r.at
		}
	}
	used := map[deliveryKey]bool{}
	subs := make([][]subscription, len(receipts))
	for c := range subs {
		subs[c] = subscriptionsOf(c)
	}
	for _, a := range acks {
		if !a.ok() {
			if t.writeErrors++; t.writeErrors == 1 {
				t.firstWriteError = fmt.Sprintf("%d %s", a.status, a.problem)
			}
			continue
		}
		t.writeMs = append(t.writeMs, ms(a.at.Sub(a.sent)))
		measured := !a.at.Before(measuredFrom)
		row, hasRow := rows[a.w.n]
		switch {
		case measured && hasRow:
			t.toRowMs = append(t.toRowMs, ms(row.Sub(a.at)))
			table := 0
			if a.w.sortKey != "" {
				table = 1
			}
			t.toRowByTable[table] = append(t.toRowByTable[table], ms(row.Sub(a.at)))
		case measured:
			t.noRow++
		}
		for c, ss := range subs {
			for _, s := range ss {
				if !s.sees(c, a.w) {
					continue
				}
				t.expected++
				k := deliveryKey{conn: c, sub: s.id, namespace: a.w.namespace, id: a.w.id, sortKey: a.w.sortKey, version: a.version}
				at, ok := first[k]
				if !ok {
					if t.missing++; len(t.missingExamples) < maxExamples {
						t.missingExamples = append(t.missingExamples, k.String())
					}
					continue
				}
				t.received++
				used[k] = true
				if !measured {
					continue
				}
				lat := ms(at.Sub(a.at))
				if lat < 0 {
					t.beforeAck++
				}
				t.latencyMs = append(t.latencyMs, lat)
				t.byKind[s.kind] = append(t.byKind[s.kind], lat)
				if hasRow {
					t.fromRowMs = append(t.fromRowMs, ms(at.Sub(row)))
				}
			}
		}
	}
	for k := range first {
		if !used[k] {
			if t.unexpected++; len(t.unexpectedExamples) < maxExamples {
				t.unexpectedExamples = append(t.unexpectedExamples, k.String())
			}
		}
	}
	slices.Sort(t.writeMs)
	slices.Sort(t.latencyMs)
	slices.Sort(t.toRowMs)
	slices.Sort(t.fromRowMs)
	for i := range t.toRowByTable {
		slices.Sort(t.toRowByTable[i])
	}
	for k := range t.byKind {
		slices.Sort(t.byKind[k])
	}
	return t
}

// expectedDeliveries returns the deliveries the acknowledged writes call
// for, without matching them: the run waits until every one of them has
// come, or they stopped coming.
func expectedDeliveries(acks []ack, conns int) map[deliveryKey]bool {
	want := map[deliveryKey]bool{}
	for _, a := range acks {
		if !a.ok() {
			continue
		}
		for c := range conns {
			for _, s := range subscriptionsOf(c) {
				if s.sees(c, a.w) {
					want[deliveryKey{conn: c, sub: s.id, namespace: a.w.namespace, id: a.w.id, sortKey: a.w.sortKey, version: a.version}] = true
				}
			}
		}
	}
	return want
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
