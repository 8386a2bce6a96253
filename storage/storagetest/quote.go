package storagetest

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
)

func testQuote(t *testing.T, newStore newStoreFunc) {
	t.Run("CreateThenGetRoundTrips", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		want := storage.Quote{
			ID:             uuid.New(),
			Principal:      "alice",
			ToolID:         "tool-goal-data",
			ToolSlug:       "goal-data",
			ToolVersion:    3,
			ManifestDigest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			PriceUSD:       dec("0.1000"),
			FeeUSD:         dec("0.0100"),
			TotalUSD:       dec("0.1100"),
			CreatedAt:      t0,
			ExpiresAt:      t0.Add(5 * time.Minute),
			State:          storage.QuoteOpen,
		}
		require.NoError(t, h.s.CreateQuote(h.ctx, want))

		got, err := h.s.GetQuote(h.ctx, want.ID)
		require.NoError(t, err)
		assertQuote(t, want, got)
	})

	t.Run("WithoutDigestRoundTrips", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		want := newQuote("alice", "tool-weather", "0", t0)
		want.ManifestDigest = ""
		want.PriceUSD, want.FeeUSD, want.TotalUSD = decimal.Zero, decimal.Zero, decimal.Zero
		require.NoError(t, h.s.CreateQuote(h.ctx, want))

		got, err := h.s.GetQuote(h.ctx, want.ID)
		require.NoError(t, err)
		assertQuote(t, want, got)
	})

	t.Run("DuplicateIDIsAlreadyExists", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		first := h.quote("alice", "tool-a", "1.00", t0)
		second := newQuote("mallory", "tool-b", "0.01", t0)
		second.ID = first.ID

		err := h.s.CreateQuote(h.ctx, second)
		require.ErrorIs(t, err, storage.ErrAlreadyExists)

		got, err := h.s.GetQuote(h.ctx, first.ID)
		require.NoError(t, err)
		assertQuote(t, first, got)
	})

	t.Run("MissingIsNotFound", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		_, err := h.s.GetQuote(h.ctx, uuid.New())
		require.ErrorIs(t, err, storage.ErrNotFound)
	})
}

func assertQuote(t *testing.T, want, got storage.Quote) {
	t.Helper()
	assert.Equal(t, want.ID, got.ID)
	assert.Equal(t, want.Principal, got.Principal)
	assert.Equal(t, want.ToolID, got.ToolID)
	assert.Equal(t, want.ToolSlug, got.ToolSlug)
	assert.Equal(t, want.ToolVersion, got.ToolVersion)
	assert.Equal(t, want.ManifestDigest, got.ManifestDigest)
	assertDecimal(t, want.PriceUSD.String(), got.PriceUSD, "PriceUSD")
	assertDecimal(t, want.FeeUSD.String(), got.FeeUSD, "FeeUSD")
	assertDecimal(t, want.TotalUSD.String(), got.TotalUSD, "TotalUSD")
	assertTime(t, want.CreatedAt, got.CreatedAt, "CreatedAt")
	assertTime(t, want.ExpiresAt, got.ExpiresAt, "ExpiresAt")
	assert.Equal(t, want.State, got.State)
	assert.Equal(t, want.UsedByKey, got.UsedByKey)
}
