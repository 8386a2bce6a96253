package client

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// history makes executions a minute apart, in process: alice calls "paid"
// and "echo" in turn, one of her echo calls fails (its output breaks the
// schema), and agent makes one call under pat's grant. It returns the
// time before the first.
func (e *env) history(calls int) time.Time {
	e.t.Helper()
	start := e.gw.Clock.Now()
	for i := range calls {
		e.gw.Clock.Advance(time.Minute)
		tool, input := "paid", fmt.Sprintf(`{"v":"%d"}`, i)
		if i%2 == 1 {
			tool = "echo"
		}
		if i == 3 {
			input = `{"v":"far more than twenty characters"}`
		}
		res, err := e.gw.CallApproved(e.t, "alice", tool, input)
		require.NoError(e.t, err)
		require.NotNil(e.t, res)
	}
	e.gw.Clock.Advance(time.Minute)
	ar, req := e.askApproval("echo", "granted")
	e.decide(ar.ID, true)
	_, err := e.gw.For("agent").Call(context.Background(), req)
	require.NoError(e.t, err)
	e.gw.Clock.Advance(time.Minute)
	return start
}

// collect runs a listing to its end, failing t on an error.
func collect(t *testing.T, list func(yield func(*toolgatetype.ExecutionSummary, error) bool)) []toolgatetype.ExecutionSummary {
	t.Helper()
	var out []toolgatetype.ExecutionSummary
	for item, err := range list {
		require.NoError(t, err)
		out = append(out, *item)
	}
	return out
}

// The client's listing is the gateway's, page after page: the same items,
// in the same order (newest first), with the same filters, for a caller
// key and for an approver key, one request per page.
func TestExecutions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	start := e.history(9)
	ctx := context.Background()

	for _, tc := range []struct {
		name  string
		as    string
		f     toolgatetype.ExecutionFilter
		count int
	}{
		{name: "all of alice's", as: "alice", count: 9},
		{name: "one tool", as: "alice", f: toolgatetype.ExecutionFilter{Tool: "echo"}, count: 4},
		{name: "failed only", as: "alice", f: toolgatetype.ExecutionFilter{Status: toolgatetype.StatusFailed}, count: 1},
		{name: "completed of one tool", as: "alice", f: toolgatetype.ExecutionFilter{Tool: "echo", Status: toolgatetype.StatusCompleted}, count: 3},
		{name: "a window", as: "alice", f: toolgatetype.ExecutionFilter{Since: start.Add(2 * time.Minute), Until: start.Add(7 * time.Minute)}, count: 5},
		{name: "an approver's principals", as: "pat", count: 10},
		{name: "an approver's principals, one tool", as: "pat", f: toolgatetype.ExecutionFilter{Tool: "echo"}, count: 5},
		{name: "an approver of no one here", as: "sam", count: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := e.clientAs(tc.as, &Options{PageSize: 2})
			before := len(e.proxy.requests())
			got := collect(t, c.Executions(ctx, tc.f))
			require.Len(t, got, tc.count)
			assert.Len(t, e.proxy.requests(), before+max(1, (tc.count+1)/2), "one request per page of 2")

			local := tc.f
			local.Limit = 2
			assert.Equal(t, collect(t, e.embeddedAs(tc.as).Executions(ctx, local)), got)
			for i := 1; i < len(got); i++ {
				assert.False(t, got[i].CreatedAt.After(got[i-1].CreatedAt), "newest first")
			}
			for _, item := range got {
				if tc.f.Tool != "" {
					assert.Equal(t, tc.f.Tool, item.Tool.Slug)
				}
				if tc.as == "alice" {
					assert.Equal(t, "alice", item.Principal)
				}
			}
		})
	}

	t.Run("the approver sees both principals", func(t *testing.T) {
		principals := map[string]int{}
		for item, err := range e.clientAs("pat", nil).Executions(ctx, toolgatetype.ExecutionFilter{}) {
			require.NoError(t, err)
			principals[item.Principal]++
		}
		assert.Equal(t, map[string]int{"alice": 9, "agent": 1}, principals)
	})

	t.Run("a loop that breaks fetches no more", func(t *testing.T) {
		c := e.client(&Options{PageSize: 2})
		before := len(e.proxy.requests())
		seen := 0
		for _, err := range c.Executions(ctx, toolgatetype.ExecutionFilter{}) {
			require.NoError(t, err)
			if seen++; seen == 3 {
				break
			}
		}
		assert.Len(t, e.proxy.requests(), before+2, "the second page held the third item")
	})

	t.Run("a cursor from the gateway starts after its page", func(t *testing.T) {
		first, err := e.gw.ListExecutions(ctx, "alice", toolgatetype.ExecutionFilter{Limit: 4})
		require.NoError(t, err)
		require.NotNil(t, first.NextCursor)
		all := collect(t, e.client(nil).Executions(ctx, toolgatetype.ExecutionFilter{}))
		rest := collect(t, e.client(nil).Executions(ctx, toolgatetype.ExecutionFilter{Limit: 3, Cursor: *first.NextCursor}))
		assert.Equal(t, all[4:], rest)
	})

	t.Run("Limit sets the page size", func(t *testing.T) {
		before := len(e.proxy.requests())
		assert.Len(t, collect(t, e.client(nil).Executions(ctx, toolgatetype.ExecutionFilter{Limit: 4})), 9)
		assert.Len(t, e.proxy.requests(), before+3)
	})
}

// Executions that finish while a loop runs neither repeat nor shift what
// it lists: the loop lists what was there when it started.
func TestExecutionsStableWhileCallsFinish(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.history(5)
	ctx := context.Background()
	want := collect(t, e.client(nil).Executions(ctx, toolgatetype.ExecutionFilter{}))

	var got []toolgatetype.ExecutionSummary
	for item, err := range e.client(&Options{PageSize: 2}).Executions(ctx, toolgatetype.ExecutionFilter{}) {
		require.NoError(t, err)
		got = append(got, *item)
		e.gw.Clock.Advance(time.Second)
		_, err := e.gw.CallApproved(t, "alice", "paid", `{"v":"meanwhile"}`)
		require.NoError(t, err)
	}
	assert.Equal(t, want, got)
}

// The spend summary is the gateway's: by tool and by day, over a window or
// the default one, for a caller key and for an approver key.
func TestSpend(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	start := e.gw.Clock.Now()
	e.history(3) // paid, echo, paid: $0.22 today
	e.gw.Clock.Advance(24 * time.Hour)
	e.history(4) // paid, echo, paid, failed echo: another $0.22 tomorrow
	ctx := context.Background()
	window := toolgatetype.SpendFilter{Since: start, Until: e.gw.Clock.Now()}

	for _, tc := range []struct {
		name   string
		as     string
		f      toolgatetype.SpendFilter
		total  string
		groups int
	}{
		{name: "by tool by default", as: "alice", total: "0.4400", groups: 2},
		{name: "by tool", as: "alice", f: toolgatetype.SpendFilter{Since: window.Since, Until: window.Until, GroupBy: toolgatetype.SpendByTool}, total: "0.4400", groups: 2},
		{name: "by day", as: "alice", f: toolgatetype.SpendFilter{Since: window.Since, Until: window.Until, GroupBy: toolgatetype.SpendByDay}, total: "0.4400", groups: 2},
		{name: "the first day only", as: "alice", f: toolgatetype.SpendFilter{Since: start, Until: start.Add(time.Hour), GroupBy: toolgatetype.SpendByDay}, total: "0.2200", groups: 1},
		{name: "an approver's principals by tool", as: "pat", f: window, total: "0.4400", groups: 2},
		{name: "an approver's principals by day", as: "pat", f: toolgatetype.SpendFilter{Since: window.Since, Until: window.Until, GroupBy: toolgatetype.SpendByDay}, total: "0.4400", groups: 2},
		{name: "an approver of no one here", as: "sam", f: window, total: "0.0000", groups: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.clientAs(tc.as, nil).Spend(ctx, tc.f)
			require.NoError(t, err)
			want, err := e.embeddedAs(tc.as).Spend(ctx, tc.f)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.Equal(t, tc.total, got.TotalUSD)
			assert.Len(t, got.Groups, tc.groups)
		})
	}

	byDay, err := e.client(nil).Spend(ctx, toolgatetype.SpendFilter{Since: window.Since, Until: window.Until, GroupBy: toolgatetype.SpendByDay})
	require.NoError(t, err)
	assert.Equal(t, []toolgatetype.SpendGroup{
		{Key: "2026-03-14", TotalUSD: "0.2200", Count: 3},
		{Key: "2026-03-15", TotalUSD: "0.2200", Count: 3},
	}, byDay.Groups, "completed calls only; the free ones count, the failed one does not")
}

// The filters are the caller's to refuse: the client sends them as given
// and the gateway names the one at fault, as in process.
func TestAuditFiltersRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	var errs []error
	for item, err := range e.client(nil).Executions(ctx, toolgatetype.ExecutionFilter{Status: "nope"}) {
		assert.Nil(t, item)
		errs = append(errs, err)
	}
	require.Len(t, errs, 1, "an error ends the sequence")
	assert.Equal(t, "status", toolgatetest.RequireCode(t, errs[0], toolgatetype.CodeInvalidRequest).Parameter)

	_, err := e.client(nil).Spend(ctx, toolgatetype.SpendFilter{GroupBy: "week"})
	assert.Equal(t, "groupBy", toolgatetest.RequireCode(t, err, toolgatetype.CodeInvalidRequest).Parameter)
}
