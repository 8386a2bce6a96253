package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/sqlite"
	"github.com/toolgate/toolgate/toolgatetype"
)

// t0 is "now" in these tests: mid-month, mid-day, with nanoseconds, which
// the store keeps.
var t0 = time.Date(2030, time.March, 15, 12, 0, 0, 123456789, time.UTC)

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// quoteFor is an open quote of principal on toolID worth total, issued at.
func quoteFor(principal, toolID, total string, at time.Time) storage.Quote {
	return storage.Quote{
		ID: uuid.New(), Principal: principal, ToolID: toolID, ToolSlug: "slug-" + toolID, ToolVersion: 2,
		ManifestDigest: "sha256:" + toolID, PriceUSD: dec(total), FeeUSD: dec("0.0000"), TotalUSD: dec(total),
		CreatedAt: at, ExpiresAt: at.Add(5 * time.Minute), State: storage.QuoteOpen,
	}
}

// beginFor is the Begin a gateway would build for q under key at.
func beginFor(q storage.Quote, key string, at time.Time, limits ...storage.Limit) storage.Begin {
	return storage.Begin{
		Principal: q.Principal, Key: key, Fingerprint: "fp:" + key, QuoteID: q.ID, ExecutionID: uuid.New(),
		ToolID: q.ToolID, AmountUSD: q.TotalUSD, Limits: limits, LeaseToken: uuid.New(),
		LeaseUntil: at.Add(time.Minute), Now: at,
	}
}

// finishFor finishes the run begun with b: completed is charged, failed released.
func finishFor(b storage.Begin, status storage.ExecutionStatus, resp string, at time.Time) storage.Finish {
	return storage.Finish{
		Principal: b.Principal, Key: b.Key, ExecutionID: b.ExecutionID, LeaseToken: b.LeaseToken,
		Status: status, Charged: status == storage.ExecutionCompleted, Response: []byte(resp), Now: at,
	}
}

// call quotes, begins and finishes one call on s.
func call(t *testing.T, s storage.Store, principal, toolID, total, key string, status storage.ExecutionStatus, resp string, at time.Time) storage.Begin {
	t.Helper()
	q := quoteFor(principal, toolID, total, at)
	require.NoError(t, s.CreateQuote(t.Context(), q))
	b := beginFor(q, key, at)
	_, err := s.BeginExecution(t.Context(), b)
	require.NoError(t, err)
	require.NoError(t, s.FinishExecution(t.Context(), finishFor(b, status, resp, at.Add(time.Second))))
	return b
}

// TestReopenFindsEveryRecord closes the file and opens it again, as a
// restarted gateway does, and finds everything it had stored: quotes,
// records with their exact responses, executions, spend and call windows,
// usage, approvals and spend controls, and a running call that can still be
// taken over.
func TestReopenFindsEveryRecord(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "toolgate.db")
	ctx := t.Context()
	first, err := sqlite.Open(ctx, path, nil)
	require.NoError(t, err)

	// Bytes a JSON round trip would change, stored verbatim.
	resp := "{\"b\": 2,  \"a\":1.10, \"s\":\"caf\u00e9 \\u00e9\"}\n"
	done := call(t, first, "alice", "tool-a", "0.1100", "done", storage.ExecutionCompleted, resp, t0.Add(-2*time.Hour))
	failed := call(t, first, "alice", "tool-b", "2.0000", "failed", storage.ExecutionFailed, `{"status":"failed"}`, t0.Add(-time.Hour))
	call(t, first, "bob", "tool-a", "0.0001", "bob-1", storage.ExecutionCompleted, `{}`, t0.Add(-40*24*time.Hour))
	open := quoteFor("alice", "tool-a", "0.1100", t0)
	require.NoError(t, first.CreateQuote(ctx, open))
	runningQuote := quoteFor("alice", "tool-a", "0.5000", t0.Add(-10*time.Minute))
	require.NoError(t, first.CreateQuote(ctx, runningQuote))
	running := beginFor(runningQuote, "running", runningQuote.CreatedAt)
	_, err = first.BeginExecution(ctx, running)
	require.NoError(t, err)
	approval := storage.Approval{Principal: "alice", ToolID: "tool-a", ManifestDigest: "sha256:tool-a",
		Mode: toolgatetype.ApprovalNeverAsk, UpdatedAt: t0}
	require.NoError(t, first.PutApproval(ctx, approval))
	daily, perMinute, allowed := dec("25.5000"), 7, false
	controls := toolgatetype.SpendControls{DailyLimitUSD: &daily, RateLimitPerMinute: &perMinute,
		Tools: map[string]toolgatetype.ToolSpendControls{"goal-data": {Allowed: &allowed, MonthlyLimitUSD: &daily}}}
	require.NoError(t, first.PutSpendControls(ctx, "alice", controls))

	day := t0.Truncate(24 * time.Hour)
	limits := []storage.Limit{
		{Measure: storage.MeasureSpend, Since: day},
		{Measure: storage.MeasureSpend, Since: time.Time{}},
		{Measure: storage.MeasureCalls, Since: t0.Add(-90 * time.Minute)},
		{Measure: storage.MeasureCalls, ToolID: "tool-b", Since: day},
	}
	usedBefore, err := first.MeasureLimits(ctx, "alice", limits)
	require.NoError(t, err)
	usageBefore, err := first.UsageAll(ctx)
	require.NoError(t, err)
	recordBefore, err := first.GetIdempotency(ctx, "alice", "done")
	require.NoError(t, err)
	execBefore, err := first.GetExecution(ctx, done.ExecutionID)
	require.NoError(t, err)
	require.NoError(t, first.Close())

	second := openStore(t, path)

	rec, err := second.GetIdempotency(ctx, "alice", "done")
	require.NoError(t, err)
	assert.Equal(t, recordBefore, rec)
	assert.Equal(t, []byte(resp), rec.Response, "the response, byte for byte")
	e, err := second.GetExecution(ctx, done.ExecutionID)
	require.NoError(t, err)
	assert.Equal(t, execBefore, e)
	assert.True(t, e.Charged)
	assert.True(t, dec("0.11").Equal(e.AmountUSD))

	f, err := second.GetExecution(ctx, failed.ExecutionID)
	require.NoError(t, err)
	assert.Equal(t, storage.ExecutionFailed, f.Status)
	assert.False(t, f.Charged)

	q, err := second.GetQuote(ctx, open.ID)
	require.NoError(t, err)
	assert.Equal(t, open, q, "an open quote is still usable, to the nanosecond")
	used, err := second.GetQuote(ctx, done.QuoteID)
	require.NoError(t, err)
	assert.Equal(t, storage.QuoteUsed, used.State)
	assert.Equal(t, "done", used.UsedByKey)

	usedAfter, err := second.MeasureLimits(ctx, "alice", limits)
	require.NoError(t, err)
	for i := range limits {
		assert.Truef(t, usedBefore[i].Equal(usedAfter[i]), "limit %d: %s before, %s after", i, usedBefore[i], usedAfter[i])
	}
	assert.True(t, dec("0.61").Equal(usedAfter[1]), "all-time spend: the charged call and the reservation, %s", usedAfter[1])
	usageAfter, err := second.UsageAll(ctx)
	require.NoError(t, err)
	assert.Equal(t, usageBefore, usageAfter)
	assert.Equal(t, storage.Usage{Count: 2, UniqueUsers: 2}, usageAfter["tool-a"])

	a, err := second.GetApproval(ctx, "alice", "tool-a")
	require.NoError(t, err)
	assert.Equal(t, approval, a)
	c, err := second.GetSpendControls(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, controls, c)

	// The call that was running when the file was closed is taken over
	// once its lease has ended, and charged once.
	_, err = second.BeginExecution(ctx, beginFor(runningQuote, "running", running.LeaseUntil.Add(-time.Second)))
	require.ErrorIs(t, err, storage.ErrIdempotencyConflict, "the lease is still live")
	retry := beginFor(runningQuote, "running", running.LeaseUntil.Add(time.Second))
	res, err := second.BeginExecution(ctx, retry)
	require.NoError(t, err)
	assert.True(t, res.TookOver)
	assert.Equal(t, running.ExecutionID, res.Execution.ID)
	require.ErrorIs(t, second.FinishExecution(ctx, finishFor(running, storage.ExecutionCompleted, "old", t0)), storage.ErrLeaseLost)
	taker := finishFor(running, storage.ExecutionCompleted, "new", t0)
	taker.LeaseToken = retry.LeaseToken
	require.NoError(t, second.FinishExecution(ctx, taker))
	total, err := second.MeasureLimits(ctx, "alice", limits[1:2])
	require.NoError(t, err)
	assert.True(t, dec("0.61").Equal(total[0]), "charged once: %s", total[0])
}
