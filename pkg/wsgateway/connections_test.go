package wsgateway

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestConnections(t *testing.T) {
	c := newConnections(t)
	ctx := context.Background()
	at := time.Now().Truncate(time.Millisecond)
	if err := c.Open(ctx, "A", "alice", at); err != nil {
		t.Fatal(err)
	}
	if err := c.Open(ctx, "B", "bob", at); err != nil {
		t.Fatal(err)
	}
	conn, err := c.Load(ctx, "A")
	if err != nil || conn == nil {
		t.Fatalf("Load: %+v, %v", conn, err)
	}
	if conn.Subject != "alice" || !conn.ConnectedAt.Equal(at) || conn.State != nil || conn.Posting != "" ||
		!conn.Expires.Equal(at.Add(connectionLife).Truncate(time.Second)) {
		t.Fatalf("Load: %+v", conn)
	}
	if none, err := c.Load(ctx, "nobody"); none != nil || err != nil {
		t.Fatalf("Load of a connection never opened: %+v, %v", none, err)
	}

	if err := c.Save(ctx, "A", []byte("state"), "m1"); err != nil {
		t.Fatal(err)
	}
	conn, _ = c.Load(ctx, "A")
	if string(conn.State) != "state" || conn.Posting != "m1" {
		t.Fatalf("after Save: %+v", conn)
	}

	feed := feedOf("app", "ns", "")
	for _, w := range []struct{ conn, sub string }{{"A", "s1"}, {"A", "s2"}, {"B", "s1"}} {
		if err := c.Watch(ctx, w.conn, feed, w.sub, at.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Watch(ctx, "A", feedOf("app", "other", "alice"), "s3", at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	subs, err := c.Subscribers(ctx, feed)
	slices.Sort(subs)
	if err != nil || !slices.Equal(subs, []string{"A", "B"}) {
		t.Fatalf("Subscribers: %v, %v; want each connection once", subs, err)
	}

	if err := c.Unwatch(ctx, "B", feed, "s1"); err != nil {
		t.Fatal(err)
	}
	if subs, _ := c.Subscribers(ctx, feed); !slices.Equal(subs, []string{"A"}) {
		t.Fatalf("Subscribers after B's unwatch: %v", subs)
	}

	if err := c.Close(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{feed, feedOf("app", "other", "alice")} {
		if subs, _ := c.Subscribers(ctx, f); len(subs) != 0 {
			t.Fatalf("Subscribers of %s after A closed: %v", f, subs)
		}
	}
	if conn, _ := c.Load(ctx, "A"); conn != nil {
		t.Fatalf("A is still there: %+v", conn)
	}
	// A closed connection is not made again, and watches nothing.
	if err := c.Save(ctx, "A", []byte("x"), "m2"); !errors.Is(err, errNoConnection) {
		t.Fatalf("Save after Close: %v", err)
	}
	if err := c.Watch(ctx, "A", feed, "s9", at); !errors.Is(err, errNoConnection) {
		t.Fatalf("Watch after Close: %v", err)
	}
	if subs, _ := c.Subscribers(ctx, feed); len(subs) != 0 {
		t.Fatalf("a closed connection watches %v", subs)
	}
	// Closing again, and closing what never was, are fine.
	for _, id := range []string{"A", "never"} {
		if err := c.Close(ctx, id); err != nil {
			t.Fatalf("Close %s: %v", id, err)
		}
	}
}

// TestConnectionsManySubscriptions closes a connection whose
// subscribers' records take more than one BatchWriteItem to remove.
func TestConnectionsManySubscriptions(t *testing.T) {
	c := newConnections(t)
	ctx := context.Background()
	if err := c.Open(ctx, "A", "alice", time.Now()); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if err := c.Watch(ctx, "A", feedOf("app", "ns", ""), string(rune('a'+i%26))+string(rune('0'+i/26)), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	if subs, _ := c.Subscribers(ctx, feedOf("app", "ns", "")); len(subs) != 0 {
		t.Fatalf("left: %v", subs)
	}
}
