package memory

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage"
)

// history is one principal's executions in ListExecutions' order reversed,
// oldest first, so that a new execution is appended and a page is read
// walking back from a binary search.
type history []*storage.Execution

// before reports whether a comes before b: created earlier, or at the same
// instant with the smaller id.
func before(a, b *storage.Execution) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return bytes.Compare(a.ID[:], b.ID[:]) < 0
}

// beforePosition reports whether e comes before position p.
func beforePosition(e *storage.Execution, p storage.ExecutionPosition) bool {
	if !e.CreatedAt.Equal(p.CreatedAt) {
		return e.CreatedAt.Before(p.CreatedAt)
	}
	return bytes.Compare(e.ID[:], p.ID[:]) < 0
}

// add puts e at its place. Executions arrive in roughly increasing time, so
// the place is almost always the end.
func (h history) add(e *storage.Execution) history {
	if n := len(h); n == 0 || before(h[n-1], e) {
		return append(h, e)
	}
	i := sort.Search(len(h), func(i int) bool { return before(e, h[i]) })
	return slices.Insert(h, i, e)
}

// remove takes e out. Pruning removes the oldest first, so e is usually at
// the front, where slicing costs nothing.
func (h history) remove(e *storage.Execution) history {
	i := sort.Search(len(h), func(i int) bool { return !before(h[i], e) })
	switch {
	case i >= len(h) || h[i] != e:
		return h
	case i == 0:
		h[0] = nil // let the execution go before the array does
		return h[1:]
	}
	return slices.Delete(h, i, i+1)
}

// end is the index after the last execution that comes before both
// position (when given) and until (when not zero).
func (h history) end(after *storage.ExecutionPosition, q storage.ExecutionQuery) int {
	n := len(h)
	if after != nil {
		n = sort.Search(n, func(i int) bool { return !beforePosition(h[i], *after) })
	}
	if !q.Until.IsZero() {
		n = min(n, sort.Search(n, func(i int) bool { return !h[i].CreatedAt.Before(q.Until) }))
	}
	return n
}

// ListExecutions implements storage.Store.
func (s *Store) ListExecutions(ctx context.Context, q storage.ExecutionQuery) ([]storage.Execution, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []storage.Execution
	for _, p := range uniq(q.Principals) {
		h := s.histories[p]
		// Each principal's newest matches, at most a page of them; the
		// merge below keeps the page's worth of the newest overall.
		taken := 0
		for i := h.end(q.After, q) - 1; i >= 0 && taken < q.Limit; i-- {
			e := h[i]
			if !q.Since.IsZero() && e.CreatedAt.Before(q.Since) {
				break
			}
			if e.Status == storage.ExecutionRunning ||
				(q.Status != "" && e.Status != q.Status) ||
				(q.ToolSlug != "" && e.ToolSlug != q.ToolSlug) {
				continue
			}
			c := copyExecution(e)
			c.Response = nil
			out = append(out, c)
			taken++
		}
	}
	slices.SortFunc(out, func(a, b storage.Execution) int {
		switch {
		case before(&b, &a):
			return -1
		case before(&a, &b):
			return 1
		}
		return 0
	})
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// SpendSummary implements storage.Store.
func (s *Store) SpendSummary(ctx context.Context, q storage.SpendQuery) ([]storage.SpendGroup, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	groups := map[string]*storage.SpendGroup{}
	s.mu.Lock()
	for _, p := range uniq(q.Principals) {
		h := s.histories[p]
		for i := h.end(nil, storage.ExecutionQuery{Until: q.Until}) - 1; i >= 0; i-- {
			e := h[i]
			if !q.Since.IsZero() && e.CreatedAt.Before(q.Since) {
				break
			}
			if e.Status != storage.ExecutionCompleted || !e.Charged {
				continue
			}
			key := q.GroupBy.Key(e.ToolSlug, e.CreatedAt)
			g := groups[key]
			if g == nil {
				g = &storage.SpendGroup{Key: key, TotalUSD: decimal.Zero}
				groups[key] = g
			}
			g.TotalUSD = g.TotalUSD.Add(e.AmountUSD)
			g.Count++
		}
	}
	s.mu.Unlock()
	out := make([]storage.SpendGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b storage.SpendGroup) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// uniq returns the principals without repeats, so that none is listed twice.
func uniq(principals []string) []string {
	if len(principals) == 1 {
		return principals
	}
	out := slices.Clone(principals)
	slices.Sort(out)
	return slices.Compact(out)
}
