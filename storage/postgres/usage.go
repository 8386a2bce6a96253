package postgres

import (
	"context"

	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/storage/internal/sqlstore"
)

// usageRows is every counter row: the shards FinishExecution adds to, and
// tool_usage, which holds the counts written before migration 0002 and by
// processes of an older version (see 0002_usage_shards.sql).
const usageRows = `(
	SELECT tool_id, count, unique_users FROM {schema}.tool_usage_shards
	UNION ALL
	SELECT tool_id, count, unique_users FROM {schema}.tool_usage
)`

// Usage returns one tool's usage counters, zero when it has none. It sums
// the tool's counter rows, never the executions.
func (s *Store) Usage(ctx context.Context, toolID string) (storage.Usage, error) {
	var u storage.Usage
	err := s.pool.QueryRow(ctx, s.sql(`
		SELECT COALESCE(sum(count), 0)::bigint, COALESCE(sum(unique_users), 0)::bigint FROM `+usageRows+` u
		WHERE tool_id = $1`),
		toolID).Scan(&u.Count, &u.UniqueUsers)
	if err != nil {
		return storage.Usage{}, translate(err)
	}
	return u, nil
}

// UsageAll returns the usage counters of every tool that has any.
func (s *Store) UsageAll(ctx context.Context) (map[string]storage.Usage, error) {
	rows, err := s.pool.Query(ctx, s.sql(`
		SELECT tool_id, sum(count)::bigint, sum(unique_users)::bigint FROM `+usageRows+` u GROUP BY tool_id`))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := make(map[string]storage.Usage)
	if err := sqlstore.CollectUsage(rows, out, false); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// UsageOf implements storage.UsageLister: the counters of one page of a
// registry listing, read in one statement.
func (s *Store) UsageOf(ctx context.Context, toolIDs []string) (map[string]storage.Usage, error) {
	out := make(map[string]storage.Usage, len(toolIDs))
	if len(toolIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, s.sql(`
		SELECT tool_id, sum(count)::bigint, sum(unique_users)::bigint FROM `+usageRows+` u
		WHERE tool_id = ANY($1) GROUP BY tool_id`), toolIDs)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	if err := sqlstore.CollectUsage(rows, out, true); err != nil {
		return nil, translate(err)
	}
	return out, nil
}
