package client

import (
	"context"
	"iter"
)

// pages iterates over every element of a paged listing: fetch reads the
// page after cursor ("" for the first) and returns its elements and the
// next cursor ("" after the last). The iteration stops at the first error,
// which it yields.
func pages[T any](ctx context.Context, fetch func(ctx context.Context, cursor string) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		cursor := ""
		for {
			page, next, err := fetch(ctx, cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, v := range page {
				if !yield(v, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			cursor = next
		}
	}
}
