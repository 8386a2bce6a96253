package postgres_test

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// TestRememberedReadsOutOfDateAreDecidedAgain changes, on a second
// instance, what the first instance remembers from a quote it issued, and
// then calls under that quote on the first instance, where the call's
// reads are answered from memory. The admission finds what changed and
// admits nothing, and the call is decided again on fresh reads: each
// caller is refused exactly as a call quoted after the change would be,
// the provider is never reached, and once the change is undone the same
// key runs, since the refusal stored nothing.
func TestRememberedReadsOutOfDateAreDecidedAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := twoGateways(t, toolgatetest.NewUpstream(), nil)
	quoter, other := c.gws[0], c.gws[1]

	t.Run("spend controls tightened", func(t *testing.T) {
		q := c.quote(t, 0, "alice")
		tight := decimal.RequireFromString("0.1000") // under the call's 0.1100
		require.NoError(t, other.SetSpendControls(ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: &tight}))
		_, err := quoter.Call(ctx, "alice", echoCall(q, "k1"))
		requireCode(t, err, toolgatetype.CodeSpendLimitExceeded)
		assert.EqualValues(t, 0, c.provider.Calls(), "the provider is not reached")

		loose := decimal.RequireFromString("1.0000")
		require.NoError(t, other.SetSpendControls(ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: &loose}))
		res, err := quoter.Call(ctx, "alice", echoCall(q, "k1"))
		require.NoError(t, err)
		assert.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	})

	t.Run("approval asked for every call", func(t *testing.T) {
		q := c.quote(t, 0, "bob")
		require.NotNil(t, q.Quote.ManifestDigest)
		_, err := other.SetApproval(ctx, "bob", "echo", toolgatetype.ApprovalAskEveryCall, *q.Quote.ManifestDigest)
		require.NoError(t, err)
		_, err = quoter.Call(ctx, "bob", echoCall(q, "k1"))
		requireCode(t, err, toolgatetype.CodeApprovalRequired)

		approved := echoCall(q, "k1")
		approved.ApprovalDigest = *q.Quote.ManifestDigest
		res, err := quoter.Call(ctx, "bob", approved)
		require.NoError(t, err)
		assert.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
	})

	t.Run("quote used on the other instance", func(t *testing.T) {
		q := c.quote(t, 0, "carol")
		res, err := other.Call(ctx, "carol", echoCall(q, "theirs"))
		require.NoError(t, err)
		require.Equal(t, toolgatetype.StatusCompleted, res.Execution.Status)
		_, err = quoter.Call(ctx, "carol", echoCall(q, "mine"))
		requireCode(t, err, toolgatetype.CodeQuoteUsed)
	})

	assert.EqualValues(t, 3, c.provider.Calls(), "one run per call admitted")
	assertUsed(t, c.stores[0], "alice", "0.1100", "1")
}
