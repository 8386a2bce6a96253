package postgres_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// fleetCall is one logical call of the fleet test: one principal's call
// under one Idempotency-Key, sent to every instance at once as a client
// retrying on each of them would, with the same quote and the same input.
type fleetCall struct {
	principal, key string
	v              string // the input's "v", which names the call to the provider

	// The first copy to start quotes, on its instance; the others wait for
	// it and reuse the quote, as a client quotes once and retries the call.
	quoteOnce sync.Once
	quote     *toolgatetype.QuoteResult
	quoteErr  error

	// What copy j, sent to instance j, got.
	results []*toolgatetype.CallResult
	errs    []error
}

func (f *fleetCall) request() toolgatetype.CallRequest {
	return toolgatetype.CallRequest{
		Tool:           f.quote.Tool.Slug,
		QuoteID:        f.quote.Quote.ID,
		Input:          json.RawMessage(fmt.Sprintf(`{"v":%q}`, f.v)),
		IdempotencyKey: f.key,
	}
}

// TestFleetOfGatewaysDuplicatesAndBudget runs a fleet of four gateways, each
// with a Store on a pool of its own over one schema, as four processes
// behind a load balancer would be. Eight goroutines per gateway send 120
// logical calls of four principals, every one of them four times at once,
// one copy to each gateway: the duplicates of a retrying client, which
// nothing in Go can tell apart, only the database. Three principals have a
// daily limit that fits 10 of their 30 calls; the fourth keeps the default
// limits, which fit all of its calls.
//
// It shows that no logical call reaches the provider twice and that every
// copy of it gets the one execution, byte for byte, or is told the key is
// busy while that execution runs; that a budget is never overspent, nor
// underused by an admission lost to a race: each budgeted principal gets
// exactly its 10 calls, every copy of every other call is refused for the
// daily limit, and such a refusal leaves nothing behind; and that what the
// store keeps (the ledger, the audit trail, the spend summary, the keys)
// is exactly what the callers were told.
func TestFleetOfGatewaysDuplicatesAndBudget(t *testing.T) {
	t.Parallel()
	const (
		instances    = 4
		workers      = 8  // goroutines per instance
		perPrincipal = 30 // logical calls of each principal
		fits         = 10 // calls of $0.1100 within a budgeted principal's limit
	)
	price := decimal.RequireFromString("0.1100") // echoTool's $0.1000 and the default fee
	budget := decimal.RequireFromString("1.1000")
	require.True(t, price.Mul(decimal.NewFromInt(fits)).Equal(budget))
	budgeted := map[string]bool{"alice": true, "bob": true, "carol": true, "dave": false}
	principals := []string{"alice", "bob", "carol", "dave"}
	controls := toolgatetype.StaticSpendControls{}
	for _, p := range principals {
		if budgeted[p] {
			controls[p] = toolgatetype.SpendControls{DailyLimitUSD: &budget}
		}
	}
	// dave's defaults: $100 a day and 60 calls a minute fit his 30 calls,
	// and the budgeted principals' refused calls count against no window.

	schema := newSchema(t)
	stores := make([]storage.Store, instances)
	for i := range stores {
		stores[i] = openInstance(t, schema)
	}
	// Hold the provider a moment so that copies overlap a running call and
	// refusals meet reservations still in flight, not only charged calls.
	p := holdingProvider(func(int64) { time.Sleep(20 * time.Millisecond) })
	c := newCluster(t, stores, p, &toolgate.Config{SpendControls: controls})
	ctx := t.Context()

	// The principals' calls are interleaved, so that all four budgets are
	// contended at once; keys repeat across principals, whose keys are
	// their own.
	calls := make([]*fleetCall, 0, len(principals)*perPrincipal)
	for n := range perPrincipal {
		for _, pr := range principals {
			calls = append(calls, &fleetCall{
				principal: pr,
				key:       fmt.Sprintf("call-%d", n),
				v:         fmt.Sprintf("%s-%d", pr, n),
				results:   make([]*toolgatetype.CallResult, instances),
				errs:      make([]error, instances),
			})
		}
	}

	// Every instance's goroutines take the calls in the same order, so the
	// four copies of a call are sent at about the same moment.
	queues := make([]chan *fleetCall, instances)
	for j := range queues {
		queues[j] = make(chan *fleetCall, len(calls))
		for _, f := range calls {
			queues[j] <- f
		}
		close(queues[j])
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for j := range instances {
		for range workers {
			wg.Go(func() {
				<-start
				for f := range queues[j] {
					f.quoteOnce.Do(func() { f.quote, f.quoteErr = c.gws[j].Quote(ctx, f.principal, "echo") })
					if f.quoteErr != nil {
						continue
					}
					f.results[j], f.errs[j] = c.gws[j].Call(ctx, f.principal, f.request())
				}
			})
		}
	}
	began := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began)

	// How many times each logical call reached the provider, told apart by
	// its input (the echo tool sends "v" as a query parameter).
	reached := make(map[string]int)
	for _, r := range p.Requests() {
		reached[r.URL.Query().Get("v")]++
	}

	executed := make(map[string][]string) // principal: execution ids the callers saw
	var ran, replayed, busy, refused int
	for k, f := range calls {
		require.NoError(t, f.quoteErr, "quote of %s", f.v)
		require.Equal(t, toolgatetype.RequirementCoveredByUserPolicy, f.quote.Policy.Approval.Requirement)
		require.Equal(t, "0.1100", f.quote.Quote.TotalUSD)

		var first *toolgatetype.CallResult
		fRan, fBusy, fRefused := 0, 0, 0
		for j := range instances {
			if err := f.errs[j]; err != nil {
				var te *toolgatetype.Error
				require.ErrorAs(t, err, &te, "%s, copy %d", f.v, j)
				switch te.Code {
				case toolgatetype.CodeIdempotencyKeyInUse: // the call is still running
					fBusy++
				case toolgatetype.CodeSpendLimitExceeded:
					assert.Equal(t, []string{"Call would exceed global daily limit of $1.1000"}, te.Violations)
					fRefused++
				default:
					t.Errorf("%s, copy %d: unexpected error %v", f.v, j, err)
				}
				continue
			}
			res := f.results[j]
			if first == nil {
				first = res
			} else {
				assert.Equal(t, first.Execution.ID, res.Execution.ID, "%s, copy %d: one execution", f.v, j)
				assert.Equal(t, string(first.Body), string(res.Body), "%s, copy %d: the same bytes", f.v, j)
			}
			if !res.Replayed {
				fRan++
			}
		}
		ran, busy, refused = ran+fRan, busy+fBusy, refused+fRefused
		replayed += instances - fRan - fBusy - fRefused

		if first == nil {
			// A call refused for the limit wrote nothing, so no copy can
			// have found its key busy: every copy is refused the same way,
			// and only a budgeted principal is refused at all.
			assert.True(t, budgeted[f.principal], "%s was refused", f.v)
			assert.Equal(t, instances, fRefused, "%s: every copy refused for the limit", f.v)
			assert.Zero(t, reached[f.v], "%s was refused yet reached the provider", f.v)
			_, err := c.stores[k%instances].GetIdempotency(ctx, f.principal, f.key)
			assert.ErrorIs(t, err, storage.ErrNotFound, "%s: a refusal leaves its key unused", f.v)
			continue
		}
		assert.Equal(t, 1, reached[f.v], "%s reaches the provider exactly once", f.v)
		assert.Equal(t, 1, fRan, "%s runs on exactly one instance", f.v)
		assert.Zero(t, fRefused, "%s: a copy of an admitted call was refused", f.v)
		assert.Equal(t, toolgatetype.StatusCompleted, first.Execution.Status, f.v)
		assert.Equal(t, "0.1100", first.Execution.Cost.TotalUSD, f.v)
		assert.JSONEq(t, fmt.Sprintf(`{"value":%q}`, f.v), string(first.Execution.Output), f.v)
		rec, err := c.stores[k%instances].GetIdempotency(ctx, f.principal, f.key)
		if assert.NoError(t, err, f.v) {
			assert.True(t, rec.Finished, f.v)
			assert.Equal(t, first.Execution.ID, rec.ExecutionID.String(), f.v)
			assert.Equal(t, string(first.Body), string(rec.Response), "%s: the key keeps what the callers got", f.v)
		}
		executed[f.principal] = append(executed[f.principal], first.Execution.ID)
	}
	for v, n := range reached {
		assert.Equal(t, 1, n, "provider request %q", v)
	}
	t.Logf("%d copies in %s: %d ran, %d replayed, %d busy, %d refused for the limit",
		len(calls)*instances, elapsed.Round(time.Millisecond), ran, replayed, busy, refused)

	// Every principal's spend, by what the callers saw and by each of the
	// store's accounts of it, read through instances that ran none of it
	// in particular.
	day := t0.Truncate(24 * time.Hour)
	for i, pr := range principals {
		ids := executed[pr]
		spent := price.Mul(decimal.NewFromInt(int64(len(ids))))
		if budgeted[pr] {
			assert.True(t, spent.LessThanOrEqual(budget), "%s overspent: %s of %s", pr, spent, budget)
			assert.Len(t, ids, fits, "%s: the limit's worth of calls, no more and no fewer", pr)
		} else {
			assert.Len(t, ids, perPrincipal, "%s: every call", pr)
		}
		gw, store := c.gws[i%instances], c.stores[(i+1)%instances]

		// The ledger: reserved and charged amounts, and calls begun.
		assertUsed(t, store, pr, spent.String(), fmt.Sprint(len(ids)))

		// The spend summary (completed, charged executions only).
		sum, err := gw.Spend(ctx, pr, toolgatetype.SpendFilter{Since: day, Until: t0.Add(time.Minute)})
		require.NoError(t, err)
		assert.Equal(t, spent.StringFixed(4), sum.TotalUSD, "%s: spend summary", pr)
		if assert.Len(t, sum.Groups, 1, pr) {
			assert.Equal(t, "echo", sum.Groups[0].Key)
			assert.EqualValues(t, len(ids), sum.Groups[0].Count, "%s: charged executions", pr)
		}

		// The audit trail: exactly the executions the callers were given.
		page, err := gw.ListExecutions(ctx, pr, toolgatetype.ExecutionFilter{Limit: toolgatetype.MaxListLimit})
		require.NoError(t, err)
		assert.Nil(t, page.NextCursor)
		var listed []string
		for _, e := range page.Executions {
			listed = append(listed, e.ID)
			assert.Equal(t, toolgatetype.StatusCompleted, e.Status, e.ID)
			assert.Equal(t, "0.1100", e.Cost.TotalUSD, e.ID)
		}
		assert.ElementsMatch(t, ids, listed, "%s: listed executions", pr)
	}

	// A late retry of every call, on another instance than its first copy's,
	// gets the same answer: the stored result, without reaching the
	// provider, or the same refusal, since the budget is still spent.
	calls0 := p.Calls()
	late := make([]*toolgatetype.CallResult, len(calls))
	lateErrs := make([]error, len(calls))
	goAll(len(calls), func(k int) {
		late[k], lateErrs[k] = c.gws[(k+1)%instances].Call(ctx, calls[k].principal, calls[k].request())
	})
	for k, f := range calls {
		var first *toolgatetype.CallResult
		for _, res := range f.results {
			if res != nil {
				first = res
				break
			}
		}
		if first == nil {
			requireCode(t, lateErrs[k], toolgatetype.CodeSpendLimitExceeded)
			continue
		}
		require.NoError(t, lateErrs[k], f.v)
		assert.True(t, late[k].Replayed, f.v)
		assert.Equal(t, string(first.Body), string(late[k].Body), "%s: replayed byte for byte", f.v)
	}
	assert.Equal(t, calls0, p.Calls(), "no retry reaches the provider")
}
