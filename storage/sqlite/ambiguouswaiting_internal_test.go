package sqlite

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAmbiguousWaitingReadsOnlyTheWaiting: the count a metrics scrape
// reads walks the partial index of ambiguous executions, never the table,
// so its cost does not grow with the day of executions kept.
func TestAmbiguousWaitingReadsOnlyTheWaiting(t *testing.T) {
	t.Parallel()
	s := openInternal(t)
	db := rawDB(t, s.Path())
	rows, err := db.Query(`EXPLAIN QUERY PLAN ` + ambiguousWaitingSQL)
	require.NoError(t, err)
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var (
			id, parent, unused int
			detail             string
		)
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		steps = append(steps, detail)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"SCAN executions USING COVERING INDEX executions_ambiguous"}, steps)
}
