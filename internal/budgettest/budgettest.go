// Package budgettest is the gateway-level suite of budgets every store
// runs: a real gateway over the store under test, calling tools with a
// fake clock, asserting what callers and approvers see. A store's tests
// call Run with a constructor of fresh stores:
//
//	func TestBudgets(t *testing.T) {
//		budgettest.Run(t, func(t *testing.T) storage.Store { return memory.New() })
//	}
//
// storagetest checks a store's budget methods one by one; this suite
// checks that, behind the gateway, no budget is taken over its limit,
// windows follow each budget's calendar, and amounts held and given back
// reach every budget of a call.
package budgettest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Run runs every case on stores newStore makes, a fresh one per case.
func Run(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Run("Members", func(t *testing.T) { testMembers(t, newStore) })
	t.Run("Everyone", func(t *testing.T) { testEveryone(t, newStore) })
	t.Run("Nested", func(t *testing.T) { testNested(t, newStore) })
	t.Run("Windows", func(t *testing.T) { testWindows(t, newStore) })
	t.Run("Settle", func(t *testing.T) { testSettle(t, newStore) })
	t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, newStore) })
	t.Run("Tools", func(t *testing.T) { testTools(t, newStore) })
	t.Run("Rate", func(t *testing.T) { testRate(t, newStore) })
	t.Run("Seeing", func(t *testing.T) { testSeeing(t, newStore) })
}

// Every tool of the suite costs $1.0000 a call (no gateway fee), so a
// limit of $N admits exactly N calls.
const price = "1.0000"

// harness is a gateway with budgets over a store under test.
type harness struct {
	t     *testing.T
	tg    *toolgatetest.Gateway
	gw    *toolgate.Gateway
	clock *toolgatetest.FakeClock
	keys  atomic.Int64
}

// setup makes the harness's gateway, its clock at start (zero: the
// default), with budgets and the tools "paid", "other" and "flaky" (whose
// input "fail" fails without reaching a provider, and "lost" ends
// ambiguous). Every principal's own limits are far above what the cases
// spend, so only budgets refuse.
func setup(t *testing.T, newStore func(*testing.T) storage.Store, start time.Time, defs []toolgatetype.BudgetDefinition, more ...func(*toolgate.Config)) *harness {
	t.Helper()
	zero := decimal.Zero
	cfg := &toolgate.Config{
		Budgets:       defs,
		FeeRate:       &zero,
		SpendControls: generous{},
	}
	for _, f := range more {
		f(cfg)
	}
	tg := toolgatetest.New(t, &toolgatetest.Options{
		Store:  newStore(t),
		Tools:  []*registry.Tool{paidTool("paid"), paidTool("other"), flakyTool()},
		Start:  start,
		Config: cfg,
	})
	return &harness{t: t, tg: tg, gw: tg.Gateway, clock: tg.Clock}
}

// generous are spend controls far above anything the suite spends.
type generous struct{}

func (generous) SpendControls(context.Context, string) (toolgatetype.SpendControls, error) {
	big := decimal.NewFromInt(1_000_000)
	rate := 100_000
	return toolgatetype.SpendControls{MaxPerCallUSD: &big, DailyLimitUSD: &big, MonthlyLimitUSD: &big,
		RateLimitPerMinute: &rate, RateLimitPerHour: &rate}, nil
}

// paidTool is the echo tool at the suite's price, its provider and
// endpoint verified, as a paid tool must be to be called.
func paidTool(slug string) *registry.Tool {
	t := toolgatetest.Priced(toolgatetest.EchoTool(), price)
	t.Slug, t.Name = slug, "Echo "+slug
	return t
}

// flakyTool is a tool that is not retry-safe (it writes), run in process:
// input "fail" fails before reaching its provider, "lost" loses the
// answer after the request went out (ambiguous), anything else succeeds.
func flakyTool() *registry.Tool {
	t := paidTool("flaky")
	caps := toolgatetest.LowRiskCapabilities()
	caps.ReadOnly, caps.Idempotent = registry.Bool(false), registry.Bool(false)
	t.Capabilities = caps
	t.BuildRequest, t.Normalize = nil, nil
	t.Invoke = func(_ context.Context, input json.RawMessage) (any, error) {
		var in struct{ V string }
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		switch in.V {
		case "fail":
			return nil, registry.Upstreamf(registry.CodeUpstreamUnavailable, "the provider refused the connection")
		case "lost":
			e := registry.Upstreamf(registry.CodeUpstreamUnavailable, "the connection broke after the request went out")
			e.Sent = true
			return nil, e
		}
		return map[string]any{"value": in.V}, nil
	}
	return t
}

// claims is the context of a caller signed in with an access token
// carrying a groups claim.
func claims(groups ...string) context.Context {
	return toolgate.WithTokenClaims(context.Background(), map[string][]string{"groups": groups})
}

// quote quotes tool for principal in ctx.
func (h *harness) quote(ctx context.Context, principal, tool string) *toolgatetype.QuoteResult {
	h.t.Helper()
	q, err := h.gw.Quote(ctx, principal, tool)
	require.NoError(h.t, err)
	return q
}

// call quotes and calls tool with input v for principal in ctx, and
// returns the call's outcome.
func (h *harness) call(ctx context.Context, principal, tool, v string) (*toolgatetype.CallResult, error) {
	h.t.Helper()
	q, err := h.gw.Quote(ctx, principal, tool)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("budgettest-%d", h.keys.Add(1))
	return h.gw.Call(ctx, principal, toolgatetest.ApprovedRequest(q, fmt.Sprintf(`{"v":%q}`, v), key))
}

// mustCall is call, failing the test unless the call completed.
func (h *harness) mustCall(ctx context.Context, principal, tool string) {
	h.t.Helper()
	res, err := h.call(ctx, principal, tool, "ok")
	require.NoError(h.t, err, "%s calling %s", principal, tool)
	require.Equal(h.t, toolgatetype.StatusCompleted, res.Execution.Status, "%s calling %s: %s", principal, tool, res.Body)
}

// refused is call, failing the test unless a budget refused it as
// spend_limit_exceeded; it returns the refusal.
func (h *harness) refused(ctx context.Context, principal, tool string) *toolgatetype.Error {
	h.t.Helper()
	res, err := h.call(ctx, principal, tool, "ok")
	require.Error(h.t, err, "%s calling %s must be refused, got %+v", principal, tool, res)
	return toolgatetest.RequireCode(h.t, err, toolgatetype.CodeSpendLimitExceeded)
}

// state is the budget's state as Gateway.Budgets gives it.
func (h *harness) state(id string) toolgatetype.Budget {
	h.t.Helper()
	all, err := h.gw.Budgets(context.Background())
	require.NoError(h.t, err)
	for _, b := range all {
		if b.ID == id {
			return b
		}
	}
	h.t.Fatalf("no budget %q among %+v", id, all)
	return toolgatetype.Budget{}
}

// used is what the budget's window holds.
func (h *harness) used(id string, w toolgatetype.BudgetWindowKind) string {
	h.t.Helper()
	win, ok := h.state(id).Windows[w]
	require.True(h.t, ok, "budget %s has no %s window", id, w)
	return win.UsedUSD
}

func usd(s string) *decimal.Decimal {
	d := decimal.RequireFromString(s)
	return &d
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}
