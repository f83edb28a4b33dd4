package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/udsproject/uds/pkg/store"
	"github.com/udsproject/uds/pkg/uds"
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

// Recompute sums the expired items it could not reclaim: the record counts
// them until their removal releases them. Lowering the record by them
// would release them twice, once now and once when they are removed. More
// expired items than one reclaim takes leave some stored.
func TestRecomputeCountsExpiredItemsStillStored(t *testing.T) {
	ctx := context.Background()
	f := newFaultyStore(t, 9, store.WithRecomputeQuiet(0))
	at := time.Now().Add(3 * time.Second).Truncate(time.Millisecond)
	const expiring = store.MaxReclaim + 1
	var wg sync.WaitGroup
	for worker := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := worker; i <= expiring; i += 8 {
				w := writeAs("rex", key(t, "many", fmt.Sprint(i)), `{"v":1}`)
				if i < expiring {
					w.ExpiresAt = at
				}
				if _, err := f.Create(ctx, w); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	time.Sleep(time.Until(at) + 10*time.Millisecond)
	rc, err := f.Recompute(ctx, app, "rex")
	if err != nil || rc.Drift != (uds.Usage{}) {
		t.Fatalf("recompute: %+v, %v; want no drift", rc, err)
	}
	f.exact(t, "rex")
	if n, err := f.SweepExpired(ctx); err != nil || n != expiring-store.MaxReclaim {
		t.Fatalf("sweep removed %d, %v; want the %d expired items recompute left", n, err, expiring-store.MaxReclaim)
	}
	f.exact(t, "rex")
	if u := f.recorded(t, "rex"); u.Items != 1 {
		t.Errorf("usage %+v, want the live item alone", u)
	}
}
