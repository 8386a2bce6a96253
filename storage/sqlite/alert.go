package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/toolgate/toolgate/storage"
)

// ClaimAlert implements storage.AlertLedger: it inserts id into
// alerts_sent (0012_budgets.sql) unless it is there. It is one write, so
// the file's write lock orders every claim of an id, from this process or
// another on the file, and the key lets exactly the first one insert.
func (s *Store) ClaimAlert(ctx context.Context, id string, now time.Time) (bool, error) {
	switch {
	case id == "":
		return false, fmt.Errorf("sqlite: an alert id is empty")
	case len(id) > storage.MaxAlertIDLength:
		return false, fmt.Errorf("sqlite: an alert id is %d bytes, more than %d", len(id), storage.MaxAlertIDLength)
	}
	var claimed bool
	err := s.write(ctx, func(tx *writeTx) error {
		n, err := tx.exec(`INSERT INTO alerts_sent (id, claimed_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, id, nanos(now))
		claimed = n == 1
		return err
	})
	if err != nil {
		return false, err
	}
	return claimed, nil
}
