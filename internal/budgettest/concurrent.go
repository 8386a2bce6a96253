package budgettest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// 50 calls at once, of ten members of two teams under one organization,
// never take a budget over its limit: the organization's $10 admits
// exactly ten of them, and neither team passes its $6.
func testConcurrent(t *testing.T, newStore func(*testing.T) storage.Store) {
	var a, b []string
	for i := range 5 {
		a = append(a, fmt.Sprintf("a%d", i))
		b = append(b, fmt.Sprintf("b%d", i))
	}
	h := setup(t, newStore, at("2026-03-14T12:00:00Z"), []toolgatetype.BudgetDefinition{
		{ID: "acme", Name: "Acme", DailyLimitUSD: usd("10")},
		{ID: "team-a", Name: "Team A", Parent: "acme", Members: a, DailyLimitUSD: usd("6")},
		{ID: "team-b", Name: "Team B", Parent: "acme", Members: b, DailyLimitUSD: usd("6")},
	})
	ctx := context.Background()
	members := append(append([]string(nil), a...), b...)
	quotes := make([]*toolgatetype.QuoteResult, 50)
	for i := range quotes {
		quotes[i] = h.quote(ctx, members[i%len(members)], "paid")
	}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		completed int
		byTeam    = map[byte]int{}
		refusals  []error
	)
	start := make(chan struct{})
	for i, q := range quotes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			principal := members[i%len(members)]
			req := toolgatetype.CallRequest{Tool: "paid", QuoteID: q.Quote.ID, Input: []byte(`{"v":"x"}`),
				ApprovalDigest: *q.Quote.ManifestDigest, IdempotencyKey: fmt.Sprintf("concurrent-%d", i)}
			res, err := h.gw.Call(ctx, principal, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refusals = append(refusals, err)
				return
			}
			if res.Execution.Status == toolgatetype.StatusCompleted {
				completed++
				byTeam[principal[0]]++
			}
		}()
	}
	close(start)
	wg.Wait()

	assert.Equal(t, 10, completed, "the organization's limit admits exactly ten")
	assert.LessOrEqual(t, byTeam['a'], 6)
	assert.LessOrEqual(t, byTeam['b'], 6)
	for _, err := range refusals {
		var e *toolgatetype.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, toolgatetype.CodeSpendLimitExceeded, e.Code, "%v", err)
		require.NotNil(t, e.Budget)
	}
	limit := map[string]decimal.Decimal{"acme": decimal.NewFromInt(10), "team-a": decimal.NewFromInt(6), "team-b": decimal.NewFromInt(6)}
	for id, max := range limit {
		used := decimal.RequireFromString(h.used(id, toolgatetype.BudgetDaily))
		assert.True(t, used.LessThanOrEqual(max), "%s holds %s, over its limit %s", id, used, max)
	}
	assert.Equal(t, "10.0000", h.used("acme", toolgatetype.BudgetDaily))
	assert.Equal(t, fmt.Sprintf("%d.0000", byTeam['a']), h.used("team-a", toolgatetype.BudgetDaily))
}
