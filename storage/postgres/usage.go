package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/toolgate/toolgate/storage"
)

// Usage returns one tool's usage counters, zero when it has none. It reads
// one counter row that FinishExecution maintains, never the executions.
func (s *Store) Usage(ctx context.Context, toolID string) (storage.Usage, error) {
	var u storage.Usage
	err := s.pool.QueryRow(ctx, s.sql(`SELECT count, unique_users FROM {schema}.tool_usage WHERE tool_id = $1`),
		toolID).Scan(&u.Count, &u.UniqueUsers)
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Usage{}, nil
	}
	if err != nil {
		return storage.Usage{}, translate(err)
	}
	return u, nil
}

// UsageAll returns the usage counters of every tool that has any.
func (s *Store) UsageAll(ctx context.Context) (map[string]storage.Usage, error) {
	rows, err := s.pool.Query(ctx, s.sql(`SELECT tool_id, count, unique_users FROM {schema}.tool_usage`))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := make(map[string]storage.Usage)
	for rows.Next() {
		var (
			id string
			u  storage.Usage
		)
		if err := rows.Scan(&id, &u.Count, &u.UniqueUsers); err != nil {
			return nil, translate(err)
		}
		out[id] = u
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}
