package toolgate_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// t0 is the fake clock's starting time: mid-month, mid-day, so day and
// month windows are not crossed by accident.
var t0 = toolgatetest.DefaultStart

// toolSpec varies the trust facts of the test tool.
type toolSpec struct {
	slug             string
	price            string // "" is free
	immutable        bool
	endpointVerified bool
	paymentVerified  bool
	capabilities     *registry.Capabilities
	noOutputSchema   bool
}

// readOnly is toolgatetest's low-risk capabilities, for a spec to change.
func readOnly() *registry.Capabilities { return toolgatetest.LowRiskCapabilities() }

// echoTool is toolgatetest's echo tool with the trust facts of s.
func echoTool(s toolSpec) *registry.Tool {
	t := toolgatetest.EchoTool()
	if s.slug != "" {
		t.Slug = s.slug
	}
	t.Name = "Echo " + t.Slug
	if s.price != "" {
		toolgatetest.Priced(t, s.price)
	}
	t.Immutable = s.immutable
	t.Endpoint.Verified = s.endpointVerified
	t.Provider.PaymentVerified = s.paymentVerified
	t.Capabilities = s.capabilities
	if s.noOutputSchema {
		t.OutputSchema = nil
	}
	return t
}

// callable is the spec of a free tool callable with an explicit approval.
var callable = toolSpec{immutable: true, capabilities: readOnly()}

// paidCallable is a paid tool whose provider and endpoint are verified and
// whose capabilities are low risk: covered by user policy.
var paidCallable = toolSpec{slug: "paid", price: "0.1000", immutable: true, endpointVerified: true, paymentVerified: true, capabilities: readOnly()}

// env is a toolgatetest gateway made from specs, with its parts at hand.
type env struct {
	t        *testing.T
	tg       *toolgatetest.Gateway
	gw       *toolgate.Gateway
	store    storage.Store
	reg      *registry.Registry
	clock    *toolgatetest.FakeClock
	upstream *toolgatetest.Upstream
}

type envOption func(*toolgate.Config)

func newEnv(t *testing.T, specs []toolSpec, opts ...envOption) *env {
	t.Helper()
	return newEnvWithStore(t, memory.New(), specs, opts...)
}

func newEnvWithStore(t *testing.T, store storage.Store, specs []toolSpec, opts ...envOption) *env {
	t.Helper()
	tools := make([]*registry.Tool, 0, len(specs))
	for _, s := range specs {
		tools = append(tools, echoTool(s))
	}
	cfg := &toolgate.Config{}
	for _, o := range opts {
		o(cfg)
	}
	gw := toolgatetest.New(t, &toolgatetest.Options{Store: store, Tools: tools, Config: cfg})
	return &env{t: t, tg: gw, gw: gw.Gateway, store: store, reg: gw.Registry, clock: gw.Clock, upstream: gw.Upstream}
}

func (e *env) quote(principal, tool string) *toolgatetype.QuoteResult {
	e.t.Helper()
	return e.tg.MustQuote(e.t, principal, tool)
}

// approvedCall is a valid call under q with the approval of its digest.
func approvedCall(q *toolgatetype.QuoteResult, key, v string) toolgatetype.CallRequest {
	return toolgatetest.ApprovedRequest(q, fmt.Sprintf(`{"v":%q}`, v), key)
}

// requireCode asserts err is a *toolgatetype.Error with the code.
func requireCode(t *testing.T, err error, code toolgatetype.Code) *toolgatetype.Error {
	t.Helper()
	return toolgatetest.RequireCode(t, err, code)
}

// requireNoTrace asserts a rejected call left nothing behind: its key is
// unclaimed, its quote is still open and nothing was spent or counted.
func (e *env) requireNoTrace(principal, key, quoteID string) {
	e.t.Helper()
	ctx := context.Background()
	_, err := e.store.GetIdempotency(ctx, principal, key)
	require.ErrorIs(e.t, err, storage.ErrNotFound, "the key must not be claimed")
	if id, perr := uuid.Parse(quoteID); perr == nil {
		if q, err := e.store.GetQuote(ctx, id); err == nil {
			require.Equal(e.t, storage.QuoteOpen, q.State, "the quote must stay open")
		}
	}
	used, err := e.store.MeasureLimits(ctx, principal, []storage.Limit{
		{Measure: storage.MeasureCalls, Since: time.Time{}, Max: decimal.NewFromInt(1000)},
		{Measure: storage.MeasureSpend, Since: time.Time{}, Max: decimal.NewFromInt(1000)},
	})
	require.NoError(e.t, err)
	require.True(e.t, used[0].IsZero(), "no execution may be recorded")
	require.True(e.t, used[1].IsZero(), "nothing may be reserved")
	e.upstream.RequireCalls(e.t, 0)
}

func ptr[T any](v T) *T { return &v }

func dec(s string) *decimal.Decimal {
	d := decimal.RequireFromString(s)
	return &d
}
