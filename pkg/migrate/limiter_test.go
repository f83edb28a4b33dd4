package migrate

import (
	"context"
	"testing"
	"time"
)

// The limiter spaces work out to its rate: 3 grants of 50 units at 200
// units a second take at least half a second after the first.
func TestLimiterSpacesWork(t *testing.T) {
	l := newLimiter(200)
	start := time.Now()
	for range 3 {
		if err := l.wait(context.Background(), 50); err != nil {
			t.Fatal(err)
		}
	}
	if elapsed := time.Since(start); elapsed < 490*time.Millisecond {
		t.Errorf("3 grants of 50 units at 200/s took %v, want at least 500ms", elapsed)
	}
	if err := newLimiter(0).wait(context.Background(), 1e9); err != nil {
		t.Errorf("no limit: %v", err)
	}
}
