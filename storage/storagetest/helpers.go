package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// t0 is "now" in every test. Whole seconds, mid-month and mid-day, so that
// backends with microsecond timestamps round-trip it exactly and day and
// month windows around it are unambiguous.
var t0 = time.Date(2030, time.March, 15, 12, 0, 0, 0, time.UTC)

// lease is how long a run holds its key in these tests, the gateway default.
const lease = time.Minute

// anyPage is a listing limit above anything a test stores. A store is
// given complete parameters, as the gateway gives them: a limit is always
// set, so a test that means "all" says how many that is.
const anyPage = 100

// pruneAll is the most rows of each kind one Prune of these tests deletes,
// the gateway's batch: more than any test stores.
const pruneAll = 1000

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// harness bundles what almost every test needs.
type harness struct {
	t   *testing.T
	s   storage.Store
	ctx context.Context
}

func newHarness(t *testing.T, newStore newStoreFunc) *harness {
	t.Helper()
	return &harness{t: t, s: newStore(t), ctx: t.Context()}
}

// newQuote builds an open quote for principal on toolID worth total,
// issued at and valid for five minutes.
func newQuote(principal, toolID, total string, at time.Time) storage.Quote {
	return storage.Quote{
		ID:             uuid.New(),
		Principal:      principal,
		ToolID:         toolID,
		ToolSlug:       "slug-" + toolID,
		ToolVersion:    1,
		ManifestDigest: "sha256:" + toolID,
		PriceUSD:       dec(total),
		FeeUSD:         decimal.Zero,
		TotalUSD:       dec(total),
		CreatedAt:      at,
		ExpiresAt:      at.Add(5 * time.Minute),
		State:          storage.QuoteOpen,
	}
}

// quote stores a new open quote.
func (h *harness) quote(principal, toolID, total string, at time.Time) storage.Quote {
	h.t.Helper()
	q := newQuote(principal, toolID, total, at)
	require.NoError(h.t, h.s.CreateQuote(h.ctx, q))
	return q
}

// beginFor is the BeginExecution input a gateway would build for quote q
// under key at time at.
func beginFor(q storage.Quote, key string, at time.Time, limits ...storage.Limit) storage.Begin {
	return storage.Begin{
		Principal:   q.Principal,
		Key:         key,
		Fingerprint: "fp:" + key,
		QuoteID:     q.ID,
		ExecutionID: uuid.New(),
		ToolID:      q.ToolID,
		AmountUSD:   q.TotalUSD,
		Limits:      limits,
		LeaseToken:  uuid.New(),
		LeaseUntil:  at.Add(lease),
		Now:         at,

		ToolSlug:       q.ToolSlug,
		ManifestDigest: q.ManifestDigest,
		PriceUSD:       q.PriceUSD,
		FeeUSD:         q.FeeUSD,
		Approval:       toolgatetype.ApprovalKindDigest,
	}
}

// begin admits b and requires success.
func (h *harness) begin(b storage.Begin) storage.BeginResult {
	h.t.Helper()
	res, err := h.s.BeginExecution(h.ctx, b)
	require.NoError(h.t, err)
	return res
}

// admit quotes and begins one call, returning the Begin that admitted it.
func (h *harness) admit(principal, toolID, total, key string, at time.Time) storage.Begin {
	h.t.Helper()
	b := beginFor(h.quote(principal, toolID, total, at), key, at)
	h.begin(b)
	return b
}

// finishFor is the FinishExecution input for the run that began with b.
// Completed calls are charged, failed ones released, as the gateway does.
func finishFor(b storage.Begin, status storage.ExecutionStatus, resp string, at time.Time) storage.Finish {
	return storage.Finish{
		Principal:   b.Principal,
		Key:         b.Key,
		ExecutionID: b.ExecutionID,
		LeaseToken:  b.LeaseToken,
		Status:      status,
		Charged:     status == storage.ExecutionCompleted,
		Response:    []byte(resp),
		Now:         at,
	}
}

// finish finishes the run that began with b and requires success.
func (h *harness) finish(b storage.Begin, status storage.ExecutionStatus, resp string, at time.Time) {
	h.t.Helper()
	require.NoError(h.t, h.s.FinishExecution(h.ctx, finishFor(b, status, resp, at)))
}

// call admits and finishes one call.
func (h *harness) call(principal, toolID, total, key string, status storage.ExecutionStatus, at time.Time) storage.Begin {
	h.t.Helper()
	b := h.admit(principal, toolID, total, key, at)
	h.finish(b, status, `{"status":"`+string(status)+`"}`, at.Add(time.Second))
	return b
}

func spendLimit(toolID string, since time.Time, max string) storage.Limit {
	return storage.Limit{ToolID: toolID, Measure: storage.MeasureSpend, Since: since, Max: dec(max)}
}

func callsLimit(toolID string, since time.Time, max string) storage.Limit {
	return storage.Limit{ToolID: toolID, Measure: storage.MeasureCalls, Since: since, Max: dec(max)}
}

// used measures one limit for principal.
func (h *harness) used(principal string, l storage.Limit) decimal.Decimal {
	h.t.Helper()
	got, err := h.s.MeasureLimits(h.ctx, principal, []storage.Limit{l})
	require.NoError(h.t, err)
	require.Len(h.t, got, 1)
	return got[0]
}

// assertUsed checks what principal has used of all-time spend and calls,
// the totals every "nothing was written" check is about.
func (h *harness) assertUsed(principal, spend, calls string) {
	h.t.Helper()
	assertDecimal(h.t, spend, h.used(principal, spendLimit("", time.Time{}, "0")), "spend of %s", principal)
	assertDecimal(h.t, calls, h.used(principal, callsLimit("", time.Time{}, "0")), "calls of %s", principal)
}

// assertKeyFree checks that (principal, key) was never claimed.
func (h *harness) assertKeyFree(principal, key string) {
	h.t.Helper()
	_, err := h.s.GetIdempotency(h.ctx, principal, key)
	assert.ErrorIs(h.t, err, storage.ErrNotFound, "key %q of %s must not be claimed", key, principal)
}

// assertQuoteOpen checks that quote id is still open.
func (h *harness) assertQuoteOpen(id uuid.UUID) {
	h.t.Helper()
	q, err := h.s.GetQuote(h.ctx, id)
	require.NoError(h.t, err)
	assert.Equal(h.t, storage.QuoteOpen, q.State, "quote must still be open")
	assert.Empty(h.t, q.UsedByKey)
}

// assertDecimal compares by value, so "0.11" equals a backend's "0.1100".
func assertDecimal(t *testing.T, want string, got decimal.Decimal, msgAndArgs ...any) {
	t.Helper()
	assert.Truef(t, dec(want).Equal(got), "want %s, got %s %v", want, got, msgAndArgs)
}

// assertTime compares instants, so a backend may return another location.
func assertTime(t *testing.T, want, got time.Time, msgAndArgs ...any) {
	t.Helper()
	assert.Truef(t, want.Equal(got), "want %s, got %s %v", want, got, msgAndArgs)
}
