package toolgate_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// paidNeedsApproval is a paid tool, verified, whose capabilities are not
// declared: its calls need an approval.
var paidNeedsApproval = toolSpec{slug: "paid", price: "0.1000", immutable: true, endpointVerified: true, paymentVerified: true}

// A person approves twenty minutes after the quote was made, long past the
// quote's own five minutes: the call runs, once, at the quoted price.
func TestApprovalTwentyMinutesAfterTheQuote(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newApproverEnv(t, []toolSpec{paidNeedsApproval})
	q, r := e.ask("agent", "paid", "hi")
	require.Equal(t, "0.1100", q.Quote.TotalUSD)
	assert.Equal(t, e.clock.Now().Add(toolgate.DefaultApprovalTTL), r.ExpiresAt)

	// Without a request, a quote of the same age has expired.
	bare := e.quote("agent", "paid")
	e.clock.Advance(20 * time.Minute)
	_, err := e.gw.RequestApproval(ctx, "agent", toolgatetype.ApprovalInput{QuoteID: bare.Quote.ID, Input: json.RawMessage(`{"v":"hi"}`)})
	requireCode(t, err, toolgatetype.CodeQuoteExpired)

	e.approve(r.ID, "")
	res, err := e.gw.Call(ctx, "agent", grantedCall(q, "k1", "hi", r.ID))
	toolgatetest.RequireCompleted(t, res, err, "0.1100")
	assert.Equal(t, "0.1000", res.Execution.Cost.PriceUSD)

	// Once: the same key replays, another key finds the quote used.
	again, err := e.gw.Call(ctx, "agent", grantedCall(q, "k1", "hi", r.ID))
	require.NoError(t, err)
	assert.True(t, again.Replayed)
	_, err = e.gw.Call(ctx, "agent", grantedCall(q, "k2", "hi", r.ID))
	requireCode(t, err, toolgatetype.CodeQuoteUsed)
	e.upstream.RequireCalls(t, 1)
	e.clock.Advance(time.Second) // Spend's window ends now, exclusive
	spend, err := e.gw.Spend(ctx, "agent", toolgatetype.SpendFilter{})
	require.NoError(t, err)
	assert.Equal(t, "0.1100", spend.TotalUSD, "charged once, at the quoted price")
}

// The request's life bounds the quote's: an approval given in time, used
// after the request expired, runs nothing.
func TestApprovedRequestExpiresWithItsQuote(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newApproverEnv(t, []toolSpec{paidNeedsApproval}, func(c *toolgate.Config) { c.ApprovalTTL = 10 * time.Minute })
	q, r := e.ask("agent", "paid", "hi")
	assert.Equal(t, e.clock.Now().Add(10*time.Minute), r.ExpiresAt)
	e.approve(r.ID, "")
	e.clock.Advance(10 * time.Minute)
	_, err := e.gw.Call(ctx, "agent", grantedCall(q, "k1", "hi", r.ID))
	requireCode(t, err, toolgatetype.CodeQuoteExpired)
	e.requireNoTrace("agent", "k1", q.Quote.ID)
	e.upstream.RequireCalls(t, 0)
}

func TestApprovalTTLIsChecked(t *testing.T) {
	t.Parallel()
	_, err := toolgate.New(toolgatetest.New(t, nil).Store, &toolgate.Config{ApprovalTTL: -time.Minute})
	assert.ErrorContains(t, err, "ApprovalTTL must be positive")
}
