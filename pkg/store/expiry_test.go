package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The local server's sweep removes expired items nothing touched and
// releases them once; a second sweep finds nothing.
func TestSweepExpired(t *testing.T) {
	ctx := context.Background()
	f := newFaultyStore(t, 8)
	at := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	for i := range 5 {
		w := writeAs("tess", key(t, "sweep", fmt.Sprint(i)), `{"v":1}`)
		if i < 3 {
			w.ExpiresAt = at
		}
		if _, err := f.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		lw := writeAs("tess", listKey(t, "sweep", fmt.Sprint(i)), `2`)
		lw.ExpiresAt = at
		if _, err := f.Create(ctx, lw); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Until(at) + 10*time.Millisecond)
	n, err := f.SweepExpired(ctx)
	if err != nil || n != 8 {
		t.Fatalf("sweep removed %d, %v; want the 8 expired items", n, err)
	}
	f.exact(t, "tess")
	if u := f.recorded(t, "tess"); u.Items != 2 {
		t.Errorf("usage %+v, want the 2 live items", u)
	}
	if n, err := f.SweepExpired(ctx); err != nil || n != 0 {
		t.Errorf("second sweep removed %d, %v", n, err)
	}
	if _, err := f.Get(ctx, key(t, "sweep", "4")); err != nil {
		t.Errorf("a live item: %v", err)
	}
}
