package usagelabel

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUsageLabels(t *testing.T) {
	t.Parallel()
	invocations := map[int64]string{
		0: "Under 1K invokes", 999: "Under 1K invokes", 1000: "1K invokes", 1250: "1.2K invokes",
		1300: "1.3K invokes", 1999: "1.9K invokes", 25_000: "25K invokes", 2_000_000: "2M invokes",
		2_350_000: "2.3M invokes", 3_000_000_000: "3B invokes",
	}
	for n, want := range invocations {
		assert.Equal(t, want, invocationsLabel(n), "count %d", n)
	}
	users := map[int64]string{
		0: "Under 100 users", 99: "Under 100 users", 100: "100 users", 125: "125 users",
		999: "999 users", 1200: "1.2K users", 15_000: "15K users",
	}
	for n, want := range users {
		assert.Equal(t, want, usersLabel(n), "users %d", n)
	}
}
