package storagetest

import (
	"errors"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

func decPtr(s string) *decimal.Decimal { d := dec(s); return &d }
func intPtr(n int) *int                { return &n }
func boolPtr(b bool) *bool             { return &b }

func testSpendControls(t *testing.T, newStore newStoreFunc) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name string
			c    toolgatetype.SpendControls
		}{
			{"nothing set", toolgatetype.SpendControls{}},
			{"everything set", toolgatetype.SpendControls{
				MaxPerCallUSD:      decPtr("25.0000"),
				DailyLimitUSD:      decPtr("100"),
				MonthlyLimitUSD:    decPtr("1000.5"),
				RateLimitPerMinute: intPtr(60),
				RateLimitPerHour:   intPtr(1000),
				Tools: map[string]toolgatetype.ToolSpendControls{
					"goal-data": {
						Allowed:            boolPtr(true),
						MaxPerCallUSD:      decPtr("0.11"),
						DailyLimitUSD:      decPtr("1"),
						MonthlyLimitUSD:    decPtr("10"),
						RateLimitPerMinute: intPtr(5),
						RateLimitPerHour:   intPtr(50),
					},
				},
			}},
			{"zeros are set, not absent", toolgatetype.SpendControls{
				DailyLimitUSD:    decPtr("0"),
				RateLimitPerHour: intPtr(0),
				Tools: map[string]toolgatetype.ToolSpendControls{
					"weather": {Allowed: boolPtr(false), RateLimitPerMinute: intPtr(0)},
				},
			}},
			{"only some tools, only some fields", toolgatetype.SpendControls{
				MonthlyLimitUSD: decPtr("50"),
				Tools: map[string]toolgatetype.ToolSpendControls{
					"goal-data": {DailyLimitUSD: decPtr("2.5")},
					"weather":   {},
				},
			}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, newStore)
				require.NoError(t, h.s.PutSpendControls(h.ctx, "alice", tc.c))
				got, err := h.s.GetSpendControls(h.ctx, "alice")
				require.NoError(t, err)
				assertControls(t, tc.c, got)
			})
		}
	})

	t.Run("PutReplacesEverything", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		require.NoError(t, h.s.PutSpendControls(h.ctx, "alice", toolgatetype.SpendControls{
			DailyLimitUSD: decPtr("5"),
			Tools:         map[string]toolgatetype.ToolSpendControls{"goal-data": {Allowed: boolPtr(false)}},
		}))
		second := toolgatetype.SpendControls{MonthlyLimitUSD: decPtr("20")}
		require.NoError(t, h.s.PutSpendControls(h.ctx, "alice", second))

		got, err := h.s.GetSpendControls(h.ctx, "alice")
		require.NoError(t, err)
		assertControls(t, second, got)
	})

	t.Run("UpdateStartsFromNothing", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		var seen toolgatetype.SpendControls
		got, err := h.s.UpdateSpendControls(h.ctx, "alice", func(c *toolgatetype.SpendControls) error {
			seen = *c
			c.DailyLimitUSD = decPtr("5")
			c.Tools = map[string]toolgatetype.ToolSpendControls{"goal-data": {Allowed: boolPtr(false)}}
			return nil
		})
		require.NoError(t, err)
		assertControls(t, toolgatetype.SpendControls{}, seen)
		want := toolgatetype.SpendControls{
			DailyLimitUSD: decPtr("5"),
			Tools:         map[string]toolgatetype.ToolSpendControls{"goal-data": {Allowed: boolPtr(false)}},
		}
		assertControls(t, want, got)
		stored, err := h.s.GetSpendControls(h.ctx, "alice")
		require.NoError(t, err)
		assertControls(t, want, stored)
	})

	t.Run("UpdateKeepsWhatItDoesNotChange", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		require.NoError(t, h.s.PutSpendControls(h.ctx, "alice", toolgatetype.SpendControls{
			MonthlyLimitUSD: decPtr("20"),
			Tools:           map[string]toolgatetype.ToolSpendControls{"goal-data": {DailyLimitUSD: decPtr("1")}},
		}))
		_, err := h.s.UpdateSpendControls(h.ctx, "alice", func(c *toolgatetype.SpendControls) error {
			c.Tools["weather"] = toolgatetype.ToolSpendControls{RateLimitPerHour: intPtr(3)}
			return nil
		})
		require.NoError(t, err)
		got, err := h.s.GetSpendControls(h.ctx, "alice")
		require.NoError(t, err)
		assertControls(t, toolgatetype.SpendControls{
			MonthlyLimitUSD: decPtr("20"),
			Tools: map[string]toolgatetype.ToolSpendControls{
				"goal-data": {DailyLimitUSD: decPtr("1")},
				"weather":   {RateLimitPerHour: intPtr(3)},
			},
		}, got)
	})

	t.Run("UpdateErrorWritesNothing", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		refused := errors.New("refused by the caller")
		_, err := h.s.UpdateSpendControls(h.ctx, "alice", func(c *toolgatetype.SpendControls) error {
			c.DailyLimitUSD = decPtr("5")
			return refused
		})
		require.ErrorIs(t, err, refused, "update's own error comes back as it is")
		_, err = h.s.GetSpendControls(h.ctx, "alice")
		require.ErrorIs(t, err, storage.ErrNotFound, "a refused first update leaves no controls behind")

		require.NoError(t, h.s.PutSpendControls(h.ctx, "bob", toolgatetype.SpendControls{DailyLimitUSD: decPtr("7")}))
		_, err = h.s.UpdateSpendControls(h.ctx, "bob", func(c *toolgatetype.SpendControls) error {
			c.DailyLimitUSD = decPtr("1")
			return refused
		})
		require.ErrorIs(t, err, refused)
		got, err := h.s.GetSpendControls(h.ctx, "bob")
		require.NoError(t, err)
		assertControls(t, toolgatetype.SpendControls{DailyLimitUSD: decPtr("7")}, got)
	})

	t.Run("MissingIsNotFound", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, newStore)
		require.NoError(t, h.s.PutSpendControls(h.ctx, "alice", toolgatetype.SpendControls{DailyLimitUSD: decPtr("5")}))
		_, err := h.s.GetSpendControls(h.ctx, "bob")
		require.ErrorIs(t, err, storage.ErrNotFound)
	})
}

// assertControls compares field by field: decimals by value, and an absent
// Tools map equal to an empty one, since backends may store either.
func assertControls(t *testing.T, want, got toolgatetype.SpendControls) {
	t.Helper()
	assertDecPtr(t, want.MaxPerCallUSD, got.MaxPerCallUSD, "MaxPerCallUSD")
	assertDecPtr(t, want.DailyLimitUSD, got.DailyLimitUSD, "DailyLimitUSD")
	assertDecPtr(t, want.MonthlyLimitUSD, got.MonthlyLimitUSD, "MonthlyLimitUSD")
	assert.Equal(t, want.RateLimitPerMinute, got.RateLimitPerMinute, "RateLimitPerMinute")
	assert.Equal(t, want.RateLimitPerHour, got.RateLimitPerHour, "RateLimitPerHour")
	require.Len(t, got.Tools, len(want.Tools), "Tools")
	for slug, w := range want.Tools {
		g, ok := got.Tools[slug]
		if !assert.True(t, ok, "Tools[%q] missing", slug) {
			continue
		}
		assert.Equal(t, w.Allowed, g.Allowed, "Tools[%q].Allowed", slug)
		assertDecPtr(t, w.MaxPerCallUSD, g.MaxPerCallUSD, "Tools["+slug+"].MaxPerCallUSD")
		assertDecPtr(t, w.DailyLimitUSD, g.DailyLimitUSD, "Tools["+slug+"].DailyLimitUSD")
		assertDecPtr(t, w.MonthlyLimitUSD, g.MonthlyLimitUSD, "Tools["+slug+"].MonthlyLimitUSD")
		assert.Equal(t, w.RateLimitPerMinute, g.RateLimitPerMinute, "Tools[%q].RateLimitPerMinute", slug)
		assert.Equal(t, w.RateLimitPerHour, g.RateLimitPerHour, "Tools[%q].RateLimitPerHour", slug)
	}
}

func assertDecPtr(t *testing.T, want, got *decimal.Decimal, field string) {
	t.Helper()
	if want == nil {
		assert.Nil(t, got, "%s must stay unset", field)
		return
	}
	if assert.NotNil(t, got, "%s must stay set", field) {
		assertDecimal(t, want.String(), *got, field)
	}
}
