package client

import (
	"context"
	"iter"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/toolgatetype"
)

// Executions lists this principal's finished executions or, for a client
// holding an approver key, those of every principal the approver approves
// for, newest first, as toolgate.Gateway.ListExecutions and
// ListApproverExecutions do: each without its output, which GetExecution
// returns. f filters as in process; f.Limit is how many are fetched at a
// time (0 means Options.PageSize), and f.Cursor, when set, starts after
// the page that gave it. The listing follows the gateway's cursor, so
// executions finished meanwhile neither repeat nor shift entries across
// pages; breaking out of the loop fetches no more.
//
// A filter the gateway refuses (a limit out of range, until not after
// since, a cursor another listing gave) ends the sequence with the same
// invalid_request as in process, its Parameter naming the filter.
//
//	for e, err := range c.Executions(ctx, toolgatetype.ExecutionFilter{Tool: "paid", Status: toolgatetype.StatusCompleted}) {
//		if err != nil { ... }
//		fmt.Println(e.ID, e.Tool.Slug, e.Cost.TotalUSD, e.CreatedAt)
//	}
func (c *Client) Executions(ctx context.Context, f toolgatetype.ExecutionFilter) iter.Seq2[*toolgatetype.ExecutionSummary, error] {
	q := url.Values{}
	if f.Tool != "" {
		q.Set("tool", f.Tool)
	}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	setTime(q, "since", f.Since)
	setTime(q, "until", f.Until)
	limit := f.Limit
	if limit == 0 {
		limit = c.opts.PageSize
	}
	q.Set("limit", strconv.Itoa(limit))
	return pages(ctx, func(ctx context.Context, cursor string) (page[*toolgatetype.ExecutionSummary], error) {
		if cursor == "" {
			cursor = f.Cursor
		}
		pq := maps.Clone(q)
		if cursor != "" {
			pq.Set("cursor", cursor)
		}
		list, err := doJSON[toolgatetype.ExecutionPage](ctx, c, request{method: http.MethodGet, path: "/v1/executions", query: pq})
		if err != nil {
			return page[*toolgatetype.ExecutionSummary]{}, err
		}
		p := page[*toolgatetype.ExecutionSummary]{items: make([]*toolgatetype.ExecutionSummary, len(list.Executions))}
		for i := range list.Executions {
			p.items[i] = &list.Executions[i]
		}
		// An empty page ends the listing whatever it says, so a cursor
		// that does not advance cannot loop forever.
		if list.NextCursor != nil && len(list.Executions) > 0 {
			p.next = *list.NextCursor
		}
		return p, nil
	})
}

// Spend sums what this principal was charged over a window, by tool or by
// UTC day, or, for a client holding an approver key, what every principal
// the approver approves for was charged together, as
// toolgate.Gateway.Spend and ApproverSpend do: completed executions only.
// f's zero fields take the gateway's defaults (since the start of the
// current UTC month, until now, by tool); a filter it refuses is
// invalid_request with Parameter naming it.
func (c *Client) Spend(ctx context.Context, f toolgatetype.SpendFilter) (*toolgatetype.SpendSummary, error) {
	q := url.Values{}
	setTime(q, "since", f.Since)
	setTime(q, "until", f.Until)
	if f.GroupBy != "" {
		q.Set("groupBy", string(f.GroupBy))
	}
	return doJSON[toolgatetype.SpendSummary](ctx, c, request{method: http.MethodGet, path: "/v1/spend", query: q})
}

// setTime sets a time parameter to t to the nanosecond, or leaves it out
// when t is zero, which the gateway reads as not given.
func setTime(q url.Values, name string, t time.Time) {
	if !t.IsZero() {
		q.Set(name, t.Format(time.RFC3339Nano))
	}
}
