package client

import (
	"context"
	"iter"
)

// page is one page of a listing: its items and the token of the next
// page, empty on the last.
type page[T any] struct {
	items []T
	next  string
}

// pages yields the items of a paged listing in order, fetching a page only
// when the one before is used up: the first with token "", then each with
// the token its predecessor named (an offset or a cursor). Breaking out of
// the loop fetches no more. An error is yielded once and ends the sequence.
func pages[T any](ctx context.Context, fetch func(ctx context.Context, token string) (page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		token := ""
		for {
			p, err := fetch(ctx, token)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, item := range p.items {
				if !yield(item, nil) {
					return
				}
			}
			if p.next == "" {
				return
			}
			token = p.next
		}
	}
}
