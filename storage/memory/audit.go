package memory

import (
	"context"
	"slices"
	"sort"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage"
)

// history is one principal's executions oldest first by position (see
// cursor.go).
type history []*storage.Execution

// add puts e at its place.
func (h history) add(e *storage.Execution) history { return insert(h, e, execPos) }

// remove takes e out. Pruning removes the oldest first, so e is usually at
// the front, where slicing costs nothing.
func (h history) remove(e *storage.Execution) history {
	at := execPos(e)
	i := sort.Search(len(h), func(i int) bool { return !execPos(h[i]).before(at) })
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
// the cursor (when given) and until (when not zero).
func (h history) end(after *storage.ExecutionPosition, q storage.ExecutionQuery) int {
	n := cut(h, executionCursor(after), execPos)
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
	return newestFirst(out, q.Limit, execPos), nil
}

// SpendSummary implements storage.Store.
func (s *Store) SpendSummary(ctx context.Context, q storage.SpendQuery) ([]storage.SpendGroup, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	if q.Budget != "" {
		s.mu.Lock()
		groups := s.budgetSummary(q)
		s.mu.Unlock()
		return sortedGroups(groups), nil
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
	return sortedGroups(groups), nil
}

// sortedGroups lists groups in ascending order of their keys.
func sortedGroups(groups map[string]*storage.SpendGroup) []storage.SpendGroup {
	out := make([]storage.SpendGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b storage.SpendGroup) int { return strings.Compare(a.Key, b.Key) })
	return out
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
