package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/storage"
)

// The outbox (migration 0020): an event is a row of events, written by the
// transaction of its cause, and delivered from there by whichever Store
// claims it. See doc.go for how the events ride with their causes.

// eventColumns is the select list scanEvent reads.
const eventColumns = `id, type, payload, created_at, status, attempts, next_attempt_at, retrying_since,
	lease_token, lease_until, last_error, finished_at`

func scanEvent(row pgx.Row) (storage.Event, error) {
	var (
		e                      storage.Event
		status                 string
		token                  *[16]byte
		leaseUntil, finishedAt *time.Time
	)
	err := row.Scan(&e.ID, &e.Type, &e.Payload, &e.CreatedAt, &status, &e.Attempts, &e.NextAttemptAt, &e.RetryingSince,
		&token, &leaseUntil, &e.LastError, &finishedAt)
	if err != nil {
		return storage.Event{}, translate(err)
	}
	e.Status = storage.EventStatus(status)
	e.CreatedAt, e.NextAttemptAt, e.RetryingSince = utc(e.CreatedAt), utc(e.NextAttemptAt), utc(e.RetryingSince)
	e.LeaseUntil, e.FinishedAt = nullTime(leaseUntil), nullTime(finishedAt)
	if token != nil {
		e.LeaseToken = *token
	}
	return e, nil
}

func collectEvents(rows pgx.Rows, err error) ([]storage.Event, error) {
	if err != nil {
		return nil, translate(err)
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
	if err := rows.Err(); err != nil {
		return nil, translate(err)
	}
	return out, nil
}

// checkEvent is e.Check, and what the database would refuse besides: an
// id or a type (text) that is not UTF-8 or holds a NUL. The payload is
// kept as bytes (bytea), so any JSON e.Check accepts goes in.
func checkEvent(e storage.NewEvent) error {
	if err := e.Check(); err != nil {
		return err
	}
	for _, s := range []string{e.ID, e.Type} {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("postgres: an event's id and type must be UTF-8 without NUL (event %q)", e.ID)
		}
	}
	return nil
}

// checkEvents checks, before anything is sent, the events a cause writes
// and its alerts, whose payloads must take a used amount and whose days
// must be days.
func checkEvents(events []storage.NewEvent, alerts []storage.BudgetAlert) error {
	for _, e := range events {
		if err := checkEvent(e); err != nil {
			return err
		}
	}
	for _, a := range alerts {
		if err := checkEvent(a.Event); err != nil {
			return err
		}
		if _, _, err := usedSlot(a.Event.Payload); err != nil {
			return err
		}
		if a.Budget == "" {
			return fmt.Errorf("postgres: budget alert %q names no budget", a.Event.ID)
		}
		for _, day := range []string{a.FromDay, a.UntilDay} {
			if day == "" {
				continue
			}
			if err := checkDay(day); err != nil {
				return fmt.Errorf("postgres: budget alert %q: %w", a.Event.ID, err)
			}
		}
	}
	return nil
}

// usedSlot splits an alert's payload, as storage.WithUsed writes it, around
// its used amount: the payload with the amount u is prefix, u formatted
// with four decimals, suffix. The statement that sums the budget's spend
// then writes the payload in SQL, byte for byte the one WithUsed gives,
// with no jsonb on the way (which would respell it). Two amounts that
// differ in their first and last characters (0.0000 and 1.0001) find the
// slot: everything else of the two payloads is the same.
func usedSlot(payload []byte) (prefix, suffix []byte, err error) {
	a, err := storage.WithUsed(payload, decimal.Zero)
	if err != nil {
		return nil, nil, err
	}
	b, err := storage.WithUsed(payload, decimal.New(10001, -4))
	if err != nil {
		return nil, nil, err
	}
	const width = len("0.0000")
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	if len(a) != len(b) || p+width+s != len(a) {
		return nil, nil, fmt.Errorf("postgres: cannot place the used amount in a budget alert's payload")
	}
	return bytes.Clone(a[:p]), bytes.Clone(a[len(a)-s:]), nil
}

// outboxWrites are the events causes write with them, each tied to the
// execution its cause finished or resolved (and, for a finish, the lease
// it held): a statement after the cause's writes the ones whose cause
// changed that execution in the same transaction, so a finish that wrote
// nothing (its lease lost) writes none of them.
type outboxWrites struct {
	events eventRows
	alerts alertRows
}

// eventRows are the events to write, as parallel arrays of parameters.
type eventRows struct {
	causes, tokens [][16]byte
	ids, types     []string
	payloads       [][]byte
	created        []time.Time
}

// alertRows are the budget alerts to weigh, as parallel arrays of
// parameters.
type alertRows struct {
	causes, tokens                           [][16]byte
	ids, types                               []string
	prefixes, suffixes                       [][]byte
	created                                  []time.Time
	budgets, fromDays, untilDays, thresholds []string
}

// add adds the events and, when charged, the alerts of a cause, the
// execution exec finished under token (uuid.Nil: resolved, under no
// lease). They were checked (checkEvents).
func (w *outboxWrites) add(exec, token uuid.UUID, events []storage.NewEvent, alerts []storage.BudgetAlert, charged bool) {
	for _, e := range events {
		r := &w.events
		r.causes, r.tokens = append(r.causes, exec), append(r.tokens, token)
		r.ids, r.types = append(r.ids, e.ID), append(r.types, e.Type)
		r.payloads, r.created = append(r.payloads, e.Payload), append(r.created, e.CreatedAt)
	}
	if !charged {
		return
	}
	for _, a := range alerts {
		prefix, suffix, err := usedSlot(a.Event.Payload)
		if err != nil {
			continue // checked before: cannot happen
		}
		from, until := "-infinity", "infinity" // an empty bound is open, as in SpendSummary
		if a.FromDay != "" {
			from = a.FromDay
		}
		if a.UntilDay != "" {
			until = a.UntilDay
		}
		r := &w.alerts
		r.causes, r.tokens = append(r.causes, exec), append(r.tokens, token)
		r.ids, r.types = append(r.ids, a.Event.ID), append(r.types, a.Event.Type)
		r.prefixes, r.suffixes = append(r.prefixes, prefix), append(r.suffixes, suffix)
		r.created = append(r.created, a.Event.CreatedAt)
		r.budgets, r.fromDays, r.untilDays = append(r.budgets, a.Budget), append(r.fromDays, from), append(r.untilDays, until)
		r.thresholds = append(r.thresholds, a.Threshold.String())
	}
}

// merge adds o's writes to w's.
func (w *outboxWrites) merge(o outboxWrites) {
	e, oe := &w.events, o.events
	e.causes, e.tokens = append(e.causes, oe.causes...), append(e.tokens, oe.tokens...)
	e.ids, e.types = append(e.ids, oe.ids...), append(e.types, oe.types...)
	e.payloads, e.created = append(e.payloads, oe.payloads...), append(e.created, oe.created...)
	a, oa := &w.alerts, o.alerts
	a.causes, a.tokens = append(a.causes, oa.causes...), append(a.tokens, oa.tokens...)
	a.ids, a.types = append(a.ids, oa.ids...), append(a.types, oa.types...)
	a.prefixes, a.suffixes = append(a.prefixes, oa.prefixes...), append(a.suffixes, oa.suffixes...)
	a.created = append(a.created, oa.created...)
	a.budgets, a.fromDays = append(a.budgets, oa.budgets...), append(a.fromDays, oa.fromDays...)
	a.untilDays, a.thresholds = append(a.untilDays, oa.untilDays...), append(a.thresholds, oa.thresholds...)
}

func (w *outboxWrites) empty() bool { return len(w.events.ids) == 0 && len(w.alerts.ids) == 0 }

// causedHere is the condition, on a row c of unnest with columns cause and
// token, that its cause was written by this transaction: the execution
// cause has a version this transaction made (its xmin is the
// transaction's id; none of these transactions use subtransactions), and,
// for a finish, still under the lease it finished under. A finish that
// matched nothing, its lease lost or its execution gone, changed no row.
const causedHere = `EXISTS (SELECT FROM {schema}.executions x
		WHERE x.id = c.cause AND x.xmin = pg_current_xact_id()::xid
			AND (c.token = '00000000-0000-0000-0000-000000000000'::uuid OR x.lease_token = c.token))`

// addEventsSQL writes the events of the causes written, each unless its id
// exists.
const addEventsSQL = `
	INSERT INTO {schema}.events (id, type, payload, created_at, status, next_attempt_at, retrying_since)
	SELECT c.id, c.type, c.payload, c.created_at, 'pending', c.created_at, c.created_at
	FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::bytea[], $6::timestamptz[])
		AS c(cause, token, id, type, payload, created_at)
	WHERE ` + causedHere + `
	ON CONFLICT (id) DO NOTHING`

// alertLockClass is the first key of the advisory lock a transaction takes
// on each budget it weighs alerts of; the second is a hash of the schema
// and the budget.
const alertLockClass = 0x616c7274 // "alrt"

// lockAlertBudgetsSQL takes the alert lock of each budget the written
// causes weigh alerts of, in the order of the keys, until the transaction
// ends. Charges of one budget commit in any order and each transaction
// sees only what committed before its statement began, so two charges
// made at once, on any instances, would each sum the budget without the
// other's and both miss a threshold they reach together. Under the lock
// the sum, a later statement, sees every charge of the budget whose
// transaction weighed its alerts before: the last to commit sees them
// all. Only these statements take the lock, and after every row lock of
// their transaction, so it closes no cycle with the rows' locks.
const lockAlertBudgetsSQL = `
	SELECT pg_advisory_xact_lock($1::int4, k) FROM (
		SELECT DISTINCT hashtext($2::text || c.budget) AS k
		FROM unnest($3::uuid[], $4::uuid[], $5::text[]) AS c(cause, token, budget)
		WHERE ` + causedHere + `
		ORDER BY k
	) AS keys`

// addAlertsSQL writes the event of each alert of the causes written whose
// budget's charged spend over its days, as SpendSummary sums it, has
// reached its threshold, unless its id exists; the payload's usedUsd is
// that sum, with four decimals, between the payload's prefix and suffix
// (see usedSlot).
const addAlertsSQL = `
	INSERT INTO {schema}.events (id, type, payload, created_at, status, next_attempt_at, retrying_since)
	SELECT c.id, c.type, c.prefix || convert_to(round(u.used, 4)::text, 'UTF8') || c.suffix, c.created_at,
		'pending', c.created_at, c.created_at
	FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::bytea[], $6::bytea[], $7::timestamptz[],
		$8::text[], $9::text[], $10::text[], $11::text[])
		AS c(cause, token, id, type, prefix, suffix, created_at, budget, from_day, until_day, threshold)
	CROSS JOIN LATERAL (
		SELECT COALESCE(sum(s.spend_usd), 0) AS used FROM {schema}.budget_spend s
		WHERE s.budget = c.budget AND s.day >= c.from_day::date AND s.day < c.until_day::date
	) u
	WHERE ` + causedHere + ` AND u.used >= c.threshold::numeric
	ON CONFLICT (id) DO NOTHING`

// queueOutbox queues w's statements in batch, after its cause's, and
// returns how many: none when w is empty.
func (s *Store) queueOutbox(batch *pgx.Batch, w *outboxWrites) int {
	n := 0
	if e := w.events; len(e.ids) > 0 {
		batch.Queue(s.sql(addEventsSQL), e.causes, e.tokens, e.ids, e.types, e.payloads, e.created)
		n++
	}
	if a := w.alerts; len(a.ids) > 0 {
		batch.Queue(s.sql(lockAlertBudgetsSQL), int32(alertLockClass), s.schema+"\x1f", a.causes, a.tokens, a.budgets)
		batch.Queue(s.sql(addAlertsSQL), a.causes, a.tokens, a.ids, a.types, a.prefixes, a.suffixes, a.created,
			a.budgets, a.fromDays, a.untilDays, a.thresholds)
		n += 2
	}
	return n
}

// sendWithOutbox runs query, whose one row scan reads, and w's statements
// after it, in one round trip and one transaction: q's, or the batch's
// own implicit one. With nothing in w it is query alone, as before the
// outbox. A failure of any statement undoes all of them.
//
// answer is what scan returned, as it returned it: a failure of query
// itself, or its "no row" (storage.ErrNotFound, or pgx.ErrNoRows), which
// is an answer like any other (w's statements then write nothing). err is
// a failure of w's statements or of the commit after query succeeded, as
// the driver gave it.
func (s *Store) sendWithOutbox(ctx context.Context, q querier, query string, args []any, w *outboxWrites,
	scan func(pgx.Row) error) (answer, err error) {
	if w.empty() {
		return scan(q.QueryRow(ctx, query, args...)), nil
	}
	batch := &pgx.Batch{}
	batch.Queue(query, args...)
	n := s.queueOutbox(batch, w)
	br := q.SendBatch(ctx, batch)
	answer = scan(br.QueryRow())
	if answer != nil && !errors.Is(answer, storage.ErrNotFound) && !errors.Is(answer, pgx.ErrNoRows) {
		_ = br.Close() // the same failure, or the rollback it caused
		return answer, nil
	}
	for range n {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return answer, err
}

// newEventParams are the four parameters of an event written with an
// approval request: all NULL without one.
func newEventParams(e *storage.NewEvent) []any {
	if e == nil {
		return []any{nil, nil, nil, nil}
	}
	return []any{e.ID, e.Type, e.Payload, e.CreatedAt}
}

// addEventCTE is the WITH item that writes the event of parameters $p to
// $p+3 (newEventParams) when source, a relation, has a row and there is
// an event, unless its id exists.
func addEventCTE(source string, p int) string {
	n := func(k int) string { return fmt.Sprintf("$%d", p+k) }
	return `event AS (
			INSERT INTO {schema}.events (id, type, payload, created_at, status, next_attempt_at, retrying_since)
			SELECT ` + n(0) + `::text, ` + n(1) + `::text, ` + n(2) + `::bytea, ` + n(3) + `::timestamptz, 'pending', ` +
		n(3) + `::timestamptz, ` + n(3) + `::timestamptz
			FROM ` + source + ` WHERE ` + n(0) + `::text IS NOT NULL
			ON CONFLICT (id) DO NOTHING
		)`
}

// AddEvent writes e unless its id exists, in one statement.
func (s *Store) AddEvent(ctx context.Context, e storage.NewEvent) (bool, error) {
	if err := checkEvent(e); err != nil {
		return false, err
	}
	tag, err := s.pool.Exec(ctx, s.sql(`
		INSERT INTO {schema}.events (id, type, payload, created_at, status, next_attempt_at, retrying_since)
		VALUES ($1, $2, $3, $4, 'pending', $4, $4)
		ON CONFLICT (id) DO NOTHING`), e.ID, e.Type, e.Payload, e.CreatedAt)
	if err != nil {
		return false, translate(err)
	}
	return tag.RowsAffected() == 1, nil
}

// ClaimEvents leases the due events in one statement. The due events are
// locked FOR UPDATE SKIP LOCKED: a concurrent claim passes over the ones
// another holds until it commits, and one that reads an event whose lease
// a claim has just committed re-checks it on that newest version (READ
// COMMITTED) and finds it leased. So no two claims, on any instances, get
// one event while its lease runs.
func (s *Store) ClaimEvents(ctx context.Context, c storage.ClaimEvents) ([]storage.Event, error) {
	if c.Limit < 1 {
		return []storage.Event{}, nil
	}
	got, err := collectEvents(s.pool.Query(ctx, s.sql(`
		WITH due AS (
			SELECT id FROM {schema}.events
			WHERE status = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
			ORDER BY next_attempt_at, created_at, id
			LIMIT $3
			FOR UPDATE SKIP LOCKED
		)
		UPDATE {schema}.events e SET lease_token = gen_random_uuid(), lease_until = $2, attempts = e.attempts + 1
		FROM due WHERE e.id = due.id
		RETURNING `+prefixed("e.", eventColumns)), c.Now, c.Now.Add(c.Lease), c.Limit))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(got, func(a, b storage.Event) int {
		if n := a.NextAttemptAt.Compare(b.NextAttemptAt); n != 0 {
			return n
		}
		if n := a.CreatedAt.Compare(b.CreatedAt); n != 0 {
			return n
		}
		return strings.Compare(a.ID, b.ID)
	})
	return got, nil
}

// prefixed qualifies each column of a select list with prefix.
func prefixed(prefix, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// EventAttempted records an attempt in one statement: the event's update,
// only while it is pending under this lease, and, for a delivery or a
// failure for good, its type's count in event_counts, bumped by the same
// statement and so in the same transaction. A concurrent claim that took
// the lease over, or another record of it, changed the row first (this
// one waits for its lock and re-checks the lease) or finds it changed.
func (s *Store) EventAttempted(ctx context.Context, a storage.EventAttempt) error {
	status := storage.EventPending
	if a.Status == storage.EventDelivered || a.Status == storage.EventFailed {
		status = a.Status
	}
	var (
		n      int
		exists bool
	)
	err := s.pool.QueryRow(ctx, s.sql(`
		WITH attempted AS (
			UPDATE {schema}.events SET status = $3,
				next_attempt_at = CASE WHEN $3 = 'pending' THEN $5 ELSE next_attempt_at END,
				finished_at = CASE WHEN $3 = 'pending' THEN NULL ELSE $4::timestamptz END,
				last_error = CASE WHEN $6 = '' THEN last_error ELSE $6 END,
				lease_token = NULL, lease_until = NULL
			WHERE id = $1 AND status = 'pending' AND lease_token = $2
			RETURNING type
		), counted AS (
			INSERT INTO {schema}.event_counts AS c (type, status, n)
			SELECT type, $3, 1 FROM attempted WHERE $3 <> 'pending'
			ON CONFLICT (type, status) DO UPDATE SET n = c.n + 1
		)
		SELECT (SELECT count(*) FROM attempted), EXISTS (SELECT FROM {schema}.events WHERE id = $1)`),
		a.ID, bytesOf(a.LeaseToken), string(status), a.Now, a.RetryAt, lastError(a.LastError)).Scan(&n, &exists)
	switch {
	case err != nil:
		return translate(err)
	case n == 1:
		return nil
	case !exists:
		return storage.ErrNotFound
	}
	return storage.ErrLeaseLost
}

// lastError is how an attempt's error is kept: text the database takes
// (UTF-8, no NUL, whatever a receiver answered), at most
// storage.MaxEventErrorLength bytes, cut on a character's boundary.
func lastError(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	n := storage.MaxEventErrorLength
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ListEvents lists events newest first, from the index on (created_at, id)
// or, for one status, on (status, created_at, id). The cursor compares
// (created_at, id) as a row; ids compare byte by byte (COLLATE "C").
func (s *Store) ListEvents(ctx context.Context, f storage.EventFilter) ([]storage.Event, error) {
	if f.Limit < 1 {
		return []storage.Event{}, nil
	}
	var before *time.Time
	var beforeID *string
	if f.Before != nil {
		before, beforeID = &f.Before.CreatedAt, &f.Before.ID
	}
	args := []any{before, beforeID, f.Limit}
	status := ""
	if f.Status != "" {
		args = append(args, string(f.Status))
		status = " AND status = $4"
	}
	return collectEvents(s.pool.Query(ctx, s.sql(`
		SELECT `+eventColumns+` FROM {schema}.events
		WHERE ($1::timestamptz IS NULL OR (created_at, id) < ($1, $2::text))`+status+`
		ORDER BY created_at DESC, id DESC
		LIMIT $3`), args...))
}

// RetryEvents makes failed events pending again in one statement.
func (s *Store) RetryEvents(ctx context.Context, r storage.RetryEvents) (int, error) {
	const retry = `UPDATE {schema}.events SET status = 'pending', finished_at = NULL,
				next_attempt_at = $1, retrying_since = $1`
	if r.ID == "" {
		tag, err := s.pool.Exec(ctx, s.sql(retry+` WHERE status = 'failed'`), r.Now)
		if err != nil {
			return 0, translate(err)
		}
		return int(tag.RowsAffected()), nil
	}
	var (
		n      int
		exists bool
	)
	err := s.pool.QueryRow(ctx, s.sql(`
		WITH retried AS (`+retry+` WHERE id = $2 AND status = 'failed' RETURNING 1)
		SELECT (SELECT count(*) FROM retried), EXISTS (SELECT FROM {schema}.events WHERE id = $2)`),
		r.Now, r.ID).Scan(&n, &exists)
	switch {
	case err != nil:
		return 0, translate(err)
	case !exists:
		return 0, storage.ErrNotFound
	}
	return n, nil
}

// EventStats reads what is pending and the counts in one round trip.
func (s *Store) EventStats(ctx context.Context) (storage.EventStats, error) {
	st := storage.EventStats{Delivered: map[string]int64{}, Failed: map[string]int64{}}
	var oldest *time.Time
	batch := &pgx.Batch{}
	batch.Queue(s.sql(`SELECT count(*), min(created_at) FROM {schema}.events WHERE status = 'pending'`)).
		QueryRow(func(row pgx.Row) error { return row.Scan(&st.Pending, &oldest) })
	batch.Queue(s.sql(`SELECT type, status, n FROM {schema}.event_counts`)).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var (
				typ, status string
				n           int64
			)
			if err := rows.Scan(&typ, &status, &n); err != nil {
				return err
			}
			switch storage.EventStatus(status) {
			case storage.EventDelivered:
				st.Delivered[typ] = n
			case storage.EventFailed:
				st.Failed[typ] = n
			}
		}
		return rows.Err()
	})
	if err := s.pool.SendBatch(ctx, batch).Close(); err != nil {
		return storage.EventStats{}, translate(err)
	}
	st.OldestPending = nullTime(oldest)
	return st, nil
}

// pruneEventsSQL deletes at most $2 events delivered before $1, off the
// partial index of delivered events; one a deliverer holds is skipped.
const pruneEventsSQL = `
	WITH gone AS (
		DELETE FROM {schema}.events WHERE id IN (
			SELECT id FROM {schema}.events WHERE status = 'delivered' AND finished_at < $1
			LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING 1
	)
	SELECT count(*) FROM gone`
