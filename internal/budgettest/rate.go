package budgettest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A budget's rate limit is shared by its members: past it, any member is
// told to wait (429 rate_limited with when to retry), until a minute has
// passed since the oldest call counted.
func testRate(t *testing.T, newStore func(*testing.T) storage.Store) {
	h := setup(t, newStore, at("2026-03-14T12:00:00Z"), []toolgatetype.BudgetDefinition{{
		ID: "search", Name: "Search team", Members: []string{"alice", "bob"}, RateLimitPerMinute: ptr(2),
	}})
	ctx := context.Background()
	h.mustCall(ctx, "alice", "paid")
	h.clock.Advance(10 * time.Second)
	h.mustCall(ctx, "bob", "paid")

	_, err := h.call(ctx, "alice", "paid", "ok")
	e := toolgatetest.RequireCode(t, err, toolgatetype.CodeRateLimited)
	assert.Equal(t, 51*time.Second, e.RetryAfter, "the first call leaves the window a minute after it was made")
	h.mustCall(ctx, "carol", "paid") // not a member

	h.clock.Advance(50 * time.Second)
	_, err = h.call(ctx, "bob", "paid", "ok")
	toolgatetest.RequireCode(t, err, toolgatetype.CodeRateLimited)
	h.clock.Advance(time.Second)
	h.mustCall(ctx, "bob", "paid")
}

func ptr[T any](v T) *T { return &v }
