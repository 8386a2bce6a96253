package sqlite

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEventQueriesUseTheirIndexes: a claim, a listing, the stats and a
// prune each read what they need of the outbox through an index, never a
// walk of every event, so delivering costs the same however many events
// are kept (a day of delivered ones, every failed one). A claim and a
// listing of one state read their events in order, sorting none; the
// listing of every state sorts at most its limit from each state.
func TestEventQueriesUseTheirIndexes(t *testing.T) {
	t.Parallel()
	s := openInternal(t)
	db := rawDB(t, s.Path())
	cases := []struct {
		name     string
		query    string
		mayOrder bool // may sort a bounded set of rows
	}{
		{"claim", claimDueSQL, false},
		{"list one state", listEventsSQL, false},
		{"list every state", listAllEventsSQL, true},
		{"stats", eventStatsSQL, false},
		{"prune", pruneEventsSQL, false},
		{"alert's window", budgetChargedSQL, false},
	}
	for _, tc := range cases {
		args := make([]any, paramCount(tc.query))
		for i := range args {
			args[i] = 1
		}
		rows, err := db.Query("EXPLAIN QUERY PLAN "+tc.query, args...)
		require.NoError(t, err, tc.name)
		var plan []string
		for rows.Next() {
			var (
				id, parent, unused int
				detail             string
			)
			require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
			plan = append(plan, detail)
		}
		require.NoError(t, rows.Err())
		require.NoError(t, rows.Close())
		for _, step := range plan {
			assert.False(t, strings.HasPrefix(step, "SCAN events") || strings.HasPrefix(step, "SCAN budget_"),
				"%s walks a whole table:\n%s", tc.name, strings.Join(plan, "\n"))
			if !tc.mayOrder {
				assert.NotContains(t, step, "TEMP B-TREE", "%s sorts what it reads:\n%s", tc.name, strings.Join(plan, "\n"))
			}
		}
	}
}
