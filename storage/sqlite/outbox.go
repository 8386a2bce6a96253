package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/storage"
)

// The outbox (storage.Outbox) is the events table (0015_events.sql). An
// event is inserted in the write of its cause, by the same writer, so
// the two commit together or not at all; every change of an event after
// that is one write too, whose check and change hold the file's write lock,
// so two claims, from this process or another on the file, never lease one
// event at once.

// eventColumns is the select list scanEvent reads.
const eventColumns = `id, type, payload, created_at, status, attempts, next_attempt_at, retrying_since,
	lease_token, lease_until, last_error, finished_at`

func scanEvent(row scanner) (storage.Event, error) {
	var (
		e                                storage.Event
		status                           string
		created, next, since, until, end int64
		token                            []byte
	)
	err := translate(row.Scan(&e.ID, &e.Type, &e.Payload, &created, &status, &e.Attempts, &next, &since,
		&token, &until, &e.LastError, &end))
	if err != nil {
		return storage.Event{}, err
	}
	if token != nil {
		if e.LeaseToken, err = parseID(token); err != nil {
			return storage.Event{}, err
		}
	}
	e.Status = storage.EventStatus(status)
	e.CreatedAt, e.NextAttemptAt, e.RetryingSince = fromNanos(created), fromNanos(next), fromNanos(since)
	e.LeaseUntil, e.FinishedAt = fromNanos(until), fromNanos(end)
	if e.Payload == nil {
		e.Payload = []byte{}
	}
	return e, nil
}

// addEvent inserts e, pending and due at its creation, unless its id is
// taken, and reports whether it did. The caller has checked e.
func addEvent(tx *writeTx, e storage.NewEvent) (bool, error) {
	at := nanos(e.CreatedAt)
	n, err := tx.exec(`
		INSERT INTO events (`+eventColumns+`)
		VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, NULL, ?, '', ?)
		ON CONFLICT (id) DO NOTHING`,
		e.ID, e.Type, e.Payload, at, at, at, nanos(time.Time{}), nanos(time.Time{}))
	return n == 1, err
}

// addEvents inserts each of events whose id is not taken.
func addEvents(tx *writeTx, events []storage.NewEvent) error {
	for _, e := range events {
		if _, err := addEvent(tx, e); err != nil {
			return err
		}
	}
	return nil
}

// budgetChargedSQL sums a budget's charged spend on days in [?2, ?3), as
// SpendSummary does (budgetSpendWhere), in units.
const budgetChargedSQL = `SELECT coalesce(sum(charged), 0) FROM budget_spend` + budgetSpendWhere

// addAlerts writes the event of each alert whose threshold its budget's
// charged spend has reached, this write's charge included (the trigger
// executions_budgets_charge has added it to budget_spend), unless its id
// is taken. The caller has checked the alerts.
func addAlerts(tx *writeTx, alerts []storage.BudgetAlert) error {
	for _, a := range alerts {
		var taken bool
		if err := translate(tx.queryRow(`SELECT EXISTS (SELECT 1 FROM events WHERE id = ?)`, a.Event.ID).Scan(&taken)); err != nil {
			return err
		}
		if taken {
			continue
		}
		var charged int64
		if err := translate(tx.queryRow(budgetChargedSQL, a.Budget, a.FromDay, a.UntilDay).Scan(&charged)); err != nil {
			return err
		}
		used := fromUnits(charged)
		if used.LessThan(a.Threshold) {
			continue
		}
		e := a.Event
		payload, err := storage.WithUsed(e.Payload, used)
		if err != nil {
			return err // checked by checkEvents
		}
		e.Payload = payload
		if _, err := addEvent(tx, e); err != nil {
			return err
		}
	}
	return nil
}

// AddEvent implements storage.Outbox: one insert that keeps an id already
// written, from any process, as it is.
func (s *Store) AddEvent(ctx context.Context, e storage.NewEvent) (bool, error) {
	if err := e.Check(); err != nil {
		return false, err
	}
	var added bool
	err := s.write(ctx, func(tx *writeTx) error {
		var err error
		added, err = addEvent(tx, e)
		return err
	})
	if err != nil {
		return false, err
	}
	return added, nil
}

// claimDueSQL finds the ids of up to ?2 pending events due at ?1 whose
// lease, if any, ended by then, oldest due first. It walks events_due,
// named, since the planner would otherwise take events_listed's equality
// on status, and read and sort every pending event for each claim.
const claimDueSQL = `
	SELECT id FROM events INDEXED BY events_due
	WHERE status = 'pending' AND next_attempt_at <= ?1 AND lease_until <= ?1
	ORDER BY next_attempt_at, created_at, id
	LIMIT ?2`

// ClaimEvents implements storage.Outbox. The look for due events and their
// leases are one write: no other claim, in this process or another on the
// file, runs between them.
func (s *Store) ClaimEvents(ctx context.Context, c storage.ClaimEvents) ([]storage.Event, error) {
	if c.Limit < 1 {
		return nil, fmt.Errorf("sqlite: a claim of events needs a limit of 1 or more, not %d", c.Limit)
	}
	var out []storage.Event
	err := s.write(ctx, func(tx *writeTx) error {
		out = out[:0] // a write is run once, but keep it whole if not
		ids, err := dueEvents(tx, nanos(c.Now), c.Limit)
		if err != nil {
			return err
		}
		until := nanos(c.Now.Add(c.Lease))
		for _, id := range ids {
			e, err := scanEvent(tx.queryRow(`
				UPDATE events SET lease_token = ?, lease_until = ?, attempts = attempts + 1
				WHERE id = ? RETURNING `+eventColumns,
				idBytes(uuid.New()), until, id))
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// dueEvents reads the ids claimDueSQL finds. The rows are read to the end
// before the caller writes on the same connection.
func dueEvents(tx *writeTx, now int64, limit int) ([]string, error) {
	rows, err := tx.query(claimDueSQL, now, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, translate(err)
		}
		ids = append(ids, id)
	}
	return ids, translate(rows.Err())
}

// EventAttempted implements storage.Outbox: the lease's check, the
// event's change and, for a delivery or a failure for good, its count are
// one write, so an event counts once however many answers come for it.
func (s *Store) EventAttempted(ctx context.Context, a storage.EventAttempt) error {
	switch a.Status {
	case storage.EventDelivered, storage.EventFailed, storage.EventPending:
	default:
		return fmt.Errorf("sqlite: an event's attempt cannot leave it %q", a.Status)
	}
	lastError := truncate(a.LastError, storage.MaxEventErrorLength)
	return s.write(ctx, func(tx *writeTx) error {
		var (
			typ, status string
			token       []byte
		)
		err := translate(tx.queryRow(`SELECT type, status, lease_token FROM events WHERE id = ?`, a.ID).Scan(&typ, &status, &token))
		switch {
		case err != nil:
			return err // ErrNotFound when there is no such event
		case status != string(storage.EventPending) || token == nil || string(token) != string(idBytes(a.LeaseToken)):
			return storage.ErrLeaseLost
		}
		next, end := nanos(a.RetryAt), nanos(time.Time{})
		if a.Status != storage.EventPending {
			end = nanos(a.Now)
		}
		if _, err := tx.exec(`
			UPDATE events SET status = ?1, lease_token = NULL, lease_until = ?2, finished_at = ?3,
				next_attempt_at = iif(?1 = 'pending', ?4, next_attempt_at),
				last_error = iif(?5 = '', last_error, ?5)
			WHERE id = ?6`,
			string(a.Status), nanos(time.Time{}), end, next, lastError, a.ID); err != nil {
			return err
		}
		if a.Status == storage.EventPending {
			return nil
		}
		_, err = tx.exec(`
			INSERT INTO event_counts (type, status, n) VALUES (?, ?, 1)
			ON CONFLICT (type, status) DO UPDATE SET n = n + 1`, typ, string(a.Status))
		return err
	})
}

// listEventsSQL lists one state's events (?1) newest first, before the
// cursor (?2, ?3) when there is one, at most ?4: a walk of events_listed.
const listEventsSQL = `SELECT ` + eventColumns + ` FROM events
	WHERE status = ?1 AND (?2 IS NULL OR (created_at, id) < (?2, ?3))
	ORDER BY created_at DESC, id DESC LIMIT ?4`

// listAllEventsSQL lists every state's events the same way: each state's
// walk gives at most ?4, and the newest ?4 of those are the listing's.
var listAllEventsSQL = `SELECT * FROM (SELECT * FROM (` + listAllOf("pending") + `)
	UNION ALL SELECT * FROM (` + listAllOf("delivered") + `)
	UNION ALL SELECT * FROM (` + listAllOf("failed") + `))
	ORDER BY created_at DESC, id DESC LIMIT ?4`

func listAllOf(status string) string {
	return `SELECT ` + eventColumns + ` FROM events
		WHERE status = '` + status + `' AND (?2 IS NULL OR (created_at, id) < (?2, ?3))
		ORDER BY created_at DESC, id DESC LIMIT ?4`
}

// ListEvents implements storage.Outbox.
func (s *Store) ListEvents(ctx context.Context, f storage.EventFilter) ([]storage.Event, error) {
	var beforeAt, beforeID any
	if f.Before != nil {
		beforeAt, beforeID = nanos(f.Before.CreatedAt), f.Before.ID
	}
	query, args := listAllEventsSQL, []any{nil, beforeAt, beforeID, f.Limit}
	if f.Status != "" {
		query, args[0] = listEventsSQL, string(f.Status)
	}
	rows, err := s.pool(ctx).query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []storage.Event{}
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, translate(rows.Err())
}

// RetryEvents implements storage.Outbox, in one write: an event delivered
// meanwhile, by any process, is not made pending again.
func (s *Store) RetryEvents(ctx context.Context, r storage.RetryEvents) (int, error) {
	const retry = `UPDATE events SET status = 'pending', finished_at = ?1, next_attempt_at = ?2, retrying_since = ?2
		WHERE status = 'failed'`
	var n int64
	err := s.write(ctx, func(tx *writeTx) error {
		if r.ID == "" {
			var err error
			n, err = tx.exec(retry, nanos(time.Time{}), nanos(r.Now))
			return err
		}
		var exists bool
		if err := translate(tx.queryRow(`SELECT EXISTS (SELECT 1 FROM events WHERE id = ?)`, r.ID).Scan(&exists)); err != nil {
			return err
		}
		if !exists {
			return storage.ErrNotFound
		}
		var err error
		n, err = tx.exec(retry+` AND id = ?3`, nanos(time.Time{}), nanos(r.Now), r.ID)
		return err
	})
	if err != nil {
		return 0, err
	}
	return int(n), nil
}

// eventStatsSQL reads EventStats in one statement, so from one snapshot:
// the pending events, counted from events_listed, then the delivered and
// failed ones, read off event_counts.
const eventStatsSQL = `
	SELECT 'pending', '', count(*), min(created_at) FROM events WHERE status = 'pending'
	UNION ALL
	SELECT status, type, n, NULL FROM event_counts`

// EventStats implements storage.Outbox.
func (s *Store) EventStats(ctx context.Context) (storage.EventStats, error) {
	rows, err := s.pool(ctx).query(eventStatsSQL)
	if err != nil {
		return storage.EventStats{}, err
	}
	defer rows.Close()
	st := storage.EventStats{Delivered: map[string]int64{}, Failed: map[string]int64{}}
	for rows.Next() {
		var (
			status, typ string
			n           int64
			oldest      *int64
		)
		if err := rows.Scan(&status, &typ, &n, &oldest); err != nil {
			return storage.EventStats{}, translate(err)
		}
		switch storage.EventStatus(status) {
		case storage.EventPending:
			st.Pending, st.OldestPending = n, nullNanos(oldest)
		case storage.EventDelivered:
			st.Delivered[typ] = n
		default:
			st.Failed[typ] = n
		}
	}
	if err := rows.Err(); err != nil {
		return storage.EventStats{}, translate(err)
	}
	return st, nil
}

// pruneEvents deletes up to n events delivered before the cutoff, walking
// the delivered ones from the oldest created (events_listed): an event is
// delivered after it is created, so each of them was created before the
// cutoff too. Their counts stay in event_counts.
func pruneEvents(tx *writeTx, before int64, n int) (int, error) {
	deleted, err := tx.exec(pruneEventsSQL, before, n)
	return int(deleted), err
}

// pruneEventsSQL deletes up to ?2 events delivered before ?1.
const pruneEventsSQL = `
	DELETE FROM events WHERE rowid IN (
		SELECT rowid FROM events
		WHERE status = 'delivered' AND created_at < ?1 AND finished_at < ?1
		ORDER BY created_at LIMIT ?2)`

// truncate cuts s to at most n bytes, on a character's boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
