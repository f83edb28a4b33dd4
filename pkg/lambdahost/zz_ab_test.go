package lambdahost_test

import (
	"context"
	"sort"
	"testing"
	"time"
)

func BenchmarkZZAlternate(b *testing.B) {
	obs, quiet := benchHandler(b), quietHandler(b)
	for _, c := range []struct {
		method, body string
	}{{"GET", ""}, {"POST", benchBody}} {
		ev := benchEvent(c.method, benchPath, c.body)
		timeOf := func(h func(context.Context, any) (any, error)) float64 { return 0 }
		_ = timeOf
		var o, q []float64
		for round := 0; round < 80; round++ {
			t := time.Now()
			for j := 0; j < 200; j++ {
				_, _ = obs(context.Background(), ev)
			}
			to := float64(time.Since(t).Microseconds()) / 200
			t = time.Now()
			for j := 0; j < 200; j++ {
				_, _ = quiet(context.Background(), ev)
			}
			tq := float64(time.Since(t).Microseconds()) / 200
			o, q = append(o, to), append(q, tq)
		}
		sort.Float64s(o)
		sort.Float64s(q)
		b.Logf("%s observed median %.1fµs p25 %.1f; quiet median %.1fµs p25 %.1f; +%.1f%% (median), +%.1f%% (p25)", c.method, o[40], o[20], q[40], q[20], 100*(o[40]/q[40]-1), 100*(o[20]/q[20]-1))
	}
}

func BenchmarkZZAlternateReversed(b *testing.B) {
	quiet, obs := quietHandler(b), benchHandler(b)
	ev := benchEvent("GET", benchPath, "")
	var o, q []float64
	for round := 0; round < 80; round++ {
		t := time.Now()
		for j := 0; j < 200; j++ {
			_, _ = quiet(context.Background(), ev)
		}
		tq := float64(time.Since(t).Microseconds()) / 200
		t = time.Now()
		for j := 0; j < 200; j++ {
			_, _ = obs(context.Background(), ev)
		}
		to := float64(time.Since(t).Microseconds()) / 200
		o, q = append(o, to), append(q, tq)
	}
	sort.Float64s(o)
	sort.Float64s(q)
	b.Logf("GET (quiet first) observed median %.1fµs; quiet median %.1fµs; +%.1f%%", o[40], q[40], 100*(o[40]/q[40]-1))
}
