package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/storage"
)

var _ storage.AlertLedger = (*Store)(nil)

// ClaimAlert records id as sent, once across every Store on the schema:
// of any number of concurrent claims, the one whose insert commits first
// gets true; an insert that meets it, committed or in flight, waits for
// its commit and then inserts nothing (ON CONFLICT DO NOTHING). Prune
// forgets claims made before Prune.LedgerBefore.
func (s *Store) ClaimAlert(ctx context.Context, id string, now time.Time) (bool, error) {
	if id == "" || len(id) > storage.MaxAlertIDLength {
		return false, fmt.Errorf("postgres: an alert id must be 1 to %d bytes, not %d", storage.MaxAlertIDLength, len(id))
	}
	tag, err := s.pool.Exec(ctx, s.sql(`
		INSERT INTO {schema}.alerts_sent (id, claimed_at) VALUES ($1, $2)
		ON CONFLICT (id) DO NOTHING`), id, now)
	if err != nil {
		return false, translate(err)
	}
	return tag.RowsAffected() == 1, nil
}
