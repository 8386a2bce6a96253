package toolgate_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

func TestQuoteAmountsAndFee(t *testing.T) {
	t.Parallel()
	tests := []struct {
		price, rate        string
		wantFee, wantTotal string
	}{
		{"", "0.10", "0.0000", "0.0000"},
		{"0.1000", "0.10", "0.0100", "0.1100"},
		{"0.0010", "0.10", "0.0001", "0.0011"},
		{"0.0005", "0.10", "0.0001", "0.0006"}, // 0.00005 rounds half away from zero
		{"0.0004", "0.10", "0.0000", "0.0004"},
		{"2.5000", "0.25", "0.6250", "3.1250"},
		{"1.0000", "0", "0.0000", "1.0000"},
	}
	for _, tt := range tests {
		t.Run(tt.price+"@"+tt.rate, func(t *testing.T) {
			spec := paidCallable
			spec.price = tt.price
			rate := decimal.RequireFromString(tt.rate)
			e := newEnv(t, []toolSpec{spec}, func(c *toolgate.Config) { c.FeeRate = &rate })
			q := e.quote("alice", "paid")
			wantPrice := "0.0000"
			if tt.price != "" {
				wantPrice = tt.price
			}
			assert.Equal(t, wantPrice, q.Quote.PriceUSD)
			assert.Equal(t, tt.wantFee, q.Quote.FeeUSD)
			assert.Equal(t, tt.wantTotal, q.Quote.TotalUSD)
		})
	}
}

func TestQuoteIsBoundAndExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{callable}, func(c *toolgate.Config) { c.QuoteTTL = 2 * time.Minute })
	q := e.quote("alice", "echo")

	assert.Equal(t, t0.Add(2*time.Minute), q.Quote.ExpiresAt)
	assert.Equal(t, "echo", q.Tool.Slug)
	require.NotNil(t, q.Quote.ManifestDigest)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, *q.Quote.ManifestDigest)

	stored, err := e.store.GetQuote(context.Background(), uuid.MustParse(q.Quote.ID))
	require.NoError(t, err)
	assert.Equal(t, "alice", stored.Principal)
	assert.Equal(t, *q.Quote.ManifestDigest, stored.ManifestDigest)
	assert.Equal(t, storage.QuoteOpen, stored.State)

	// One second before expiry the quote is usable; at expiry it is not.
	e.clock.Advance(2*time.Minute - time.Second)
	_, err = e.gw.Call(context.Background(), "alice", approvedCall(q, "k1", "hi"))
	require.NoError(t, err)

	q2 := e.quote("alice", "echo")
	e.clock.Advance(2 * time.Minute)
	_, err = e.gw.Call(context.Background(), "alice", approvedCall(q2, "k2", "hi"))
	requireCode(t, err, toolgatetype.CodeQuoteExpired)
}

func TestQuoteOfBlockedToolExplainsWhy(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{{slug: "weather", price: "0.0010"}})
	q := e.quote("alice", "weather")
	assert.False(t, q.Policy.Callable)
	assert.Equal(t, toolgatetype.RequirementBlocked, q.Policy.Approval.Requirement)
	assert.Nil(t, q.Quote.ManifestDigest)
	assert.Len(t, q.Policy.Reasons, 5)
	assert.Equal(t, "0.0011", q.Quote.TotalUSD)
}

func TestQuoteUnknownTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, err := e.gw.Quote(context.Background(), "alice", "nope")
	requireCode(t, err, toolgatetype.CodeToolNotFound)
}

func TestQuoteByID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{callable})
	bySlug := e.quote("alice", "echo")
	byID := e.quote("alice", bySlug.Tool.ID)
	assert.Equal(t, bySlug.Tool, byID.Tool)
}

func TestQuoteControlsPreview(t *testing.T) {
	t.Parallel()
	controls := toolgatetype.StaticSpendControls{
		"alice": {
			MaxPerCallUSD: dec("0.0500"),
			DailyLimitUSD: dec("10"),
			Tools:         map[string]toolgatetype.ToolSpendControls{"paid": {Allowed: ptr(false), DailyLimitUSD: dec("0.0500")}},
		},
	}
	e := newEnv(t, []toolSpec{paidCallable}, func(c *toolgate.Config) { c.SpendControls = controls })
	q := e.quote("alice", "paid")
	assert.False(t, q.Controls.Approved)
	assert.Equal(t, []string{
		"Call cost exceeds global per-call limit of $0.0500",
		"This tool is blocked by its spend control",
		"Call would exceed this tool's daily limit of $0.0500",
	}, q.Controls.Violations)
	assert.Equal(t, "0.1100", q.Controls.RequestedUSD)
	assert.Equal(t, "10.0000", q.Controls.Global.DailyLimitUSD)
	assert.Equal(t, "1000.0000", q.Controls.Global.MonthlyLimitUSD, "unset limits keep the defaults")
	require.NotNil(t, q.Controls.Tool)
	assert.False(t, q.Controls.Tool.Allowed)

	// Another principal has the defaults: approved, no tool controls.
	q = e.quote("bob", "paid")
	assert.True(t, q.Controls.Approved)
	assert.Empty(t, q.Controls.Violations)
	assert.Nil(t, q.Controls.Tool)
	assert.Equal(t, "25.0000", q.Controls.Global.MaxPerCallUSD)
	assert.Equal(t, "100.0000", q.Controls.Global.DailyRemainingUSD)
}

func TestQuotePreviewCountsSpend(t *testing.T) {
	t.Parallel()
	controls := toolgatetype.StaticSpendControls{"alice": {DailyLimitUSD: dec("0.2000")}}
	e := newEnv(t, []toolSpec{paidCallable}, func(c *toolgate.Config) { c.SpendControls = controls })
	ctx := context.Background()
	q := e.quote("alice", "paid")
	_, err := e.gw.Call(ctx, "alice", approvedCall(q, "k1", "a"))
	require.NoError(t, err)

	q = e.quote("alice", "paid")
	assert.Equal(t, "0.1100", q.Controls.Global.DailyUsedUSD)
	assert.Equal(t, "0.0900", q.Controls.Global.DailyRemainingUSD)
	assert.False(t, q.Controls.Approved)
	assert.Equal(t, []string{"Call would exceed global daily limit of $0.2000"}, q.Controls.Violations)
}

// A tool's controls show what was spent on it even where only some of its
// limits are set: used amounts are facts, limits are settings.
func TestQuotePreviewShowsToolSpendWithoutToolLimit(t *testing.T) {
	t.Parallel()
	controls := toolgatetype.StaticSpendControls{
		"alice": {Tools: map[string]toolgatetype.ToolSpendControls{"paid": {MonthlyLimitUSD: dec("5")}}},
	}
	e := newEnv(t, []toolSpec{paidCallable}, func(c *toolgate.Config) { c.SpendControls = controls })
	q := e.quote("alice", "paid")
	_, err := e.gw.Call(context.Background(), "alice", approvedCall(q, "k1", "a"))
	require.NoError(t, err)

	q = e.quote("alice", "paid")
	require.NotNil(t, q.Controls.Tool)
	assert.Nil(t, q.Controls.Tool.DailyLimitUSD)
	assert.Equal(t, "0.1100", q.Controls.Tool.DailyUsedUSD, "spent today on the tool, with no daily tool limit")
	assert.Nil(t, q.Controls.Tool.DailyRemainingUSD)
	assert.Equal(t, "0.1100", q.Controls.Tool.MonthlyUsedUSD)
	assert.Equal(t, "4.8900", *q.Controls.Tool.MonthlyRemainingUSD)
}
