package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// The outbox. Every event the gateway sends (a webhook, section 28) is a
// row of the store, written in the same atomic step as the change that
// caused it (a request created or decided, a charge that reaches a budget
// alert, an execution finished ambiguous) and delivered from there by any
// process on the store: nothing stands between a cause and its delivery
// that could drop the event. A deliverer leases the events that are due
// (ClaimEvents), sends each, and records the attempt (EventAttempted): a
// delivery, a failure to retry at a later time, or a failure for good.
// Two deliverers never hold one event at once; a lease that lapses (its
// deliverer died) is taken over by the next claim.
//
// Outbox is part of Store: every backend keeps one.
type Outbox interface {
	// AddEvent writes e, pending and due at once, unless an event with its
	// id exists (whatever its state): it reports whether it wrote it. The
	// causes that change nothing else (a refusal that reached a budget's
	// limit) write their events this way; the others go with their cause
	// (ApprovalRequest.Event, ApprovalDecision.Event, Finish.Events,
	// Finish.Alerts, Resolve.Alerts), written in the cause's step or not
	// at all, with the same rule: an id already written is kept as it is.
	AddEvent(ctx context.Context, e NewEvent) (bool, error)

	// ClaimEvents leases up to c.Limit pending events that are due (next
	// attempt at or before c.Now) and not leased (no lease, or one that
	// ended at or before c.Now), oldest due first, until c.Now + c.Lease.
	// Each event claimed gets a new LeaseToken and one more Attempts. Of
	// concurrent claims, from any number of processes, no two get the same
	// event while its lease runs.
	ClaimEvents(ctx context.Context, c ClaimEvents) ([]Event, error)

	// EventAttempted records how a leased event's attempt went, in one
	// atomic step: delivered, failed for good, or pending again from
	// a.RetryAt; the lease ends either way. ErrLeaseLost when a.LeaseToken
	// no longer holds the event's lease (another claim took it over, or
	// the event is no longer pending); ErrNotFound when there is no such
	// event. A delivery or a failure for good counts once in EventStats.
	EventAttempted(ctx context.Context, a EventAttempt) error

	// ListEvents returns the events f selects, newest first (CreatedAt
	// descending, then ID descending), at most f.Limit, each with its
	// Payload.
	ListEvents(ctx context.Context, f EventFilter) ([]Event, error)

	// RetryEvents makes failed events pending again, due at r.Now, with a
	// new retry period starting at r.Now (RetryingSince): the one named by
	// r.ID, or every failed event when r.ID is empty. It returns how many
	// it made pending. ErrNotFound when r.ID names no event; an event named
	// that is pending or delivered is left as it is and counts 0.
	RetryEvents(ctx context.Context, r RetryEvents) (int, error)

	// EventStats counts the outbox, across every process on the store:
	// what is pending, since when the oldest pending event waits, and
	// how many events of each type were ever delivered or failed for
	// good (counts that pruning does not lower).
	EventStats(ctx context.Context) (EventStats, error)
}

// MaxEventIDLength is the longest event id a store must keep; MaxEventTypeLength
// the longest type.
const (
	MaxEventIDLength   = 300
	MaxEventTypeLength = 64
)

// EventStatus is where an event is in its delivery.
type EventStatus string

// Event states.
const (
	// EventPending: not yet delivered, due at NextAttemptAt.
	EventPending EventStatus = "pending"
	// EventDelivered: a receiver took it (a 2xx answer).
	EventDelivered EventStatus = "delivered"
	// EventFailed: its retry period ended without a delivery, or the
	// receiver refused it for good; kept, and pending again on RetryEvents.
	EventFailed EventStatus = "failed"
)

// NewEvent is an event as its cause writes it.
type NewEvent struct {
	// ID is the event's stable id, its webhook-id: the same for every
	// attempt and from whichever process writes it ("approval_request.
	// created:<request id>", "budget.threshold:<budget>:<window>:<fraction>:
	// <first day>"). At most MaxEventIDLength bytes.
	ID string
	// Type is the event's type ("approval_request.created").
	Type string
	// Payload is the body delivered, JSON, kept byte for byte (but for the
	// used amount a BudgetAlert sets).
	Payload []byte
	// CreatedAt is when its cause happened: it is due then, and its
	// retry period starts then.
	CreatedAt time.Time
}

// Check reports what makes e unstorable: an empty or over-long id or type,
// one that is not UTF-8 or holds a NUL (which no text column keeps), or a
// payload that is not a JSON object. Backends call it first.
func (e NewEvent) Check() error {
	switch {
	case e.ID == "" || len(e.ID) > MaxEventIDLength:
		return fmt.Errorf("storage: an event id must have 1 to %d bytes", MaxEventIDLength)
	case e.Type == "" || len(e.Type) > MaxEventTypeLength:
		return fmt.Errorf("storage: an event type must have 1 to %d bytes", MaxEventTypeLength)
	case !utf8.ValidString(e.ID) || !utf8.ValidString(e.Type) || strings.IndexByte(e.ID, 0) >= 0 || strings.IndexByte(e.Type, 0) >= 0:
		return fmt.Errorf("storage: an event's id and type must be UTF-8 without NUL (event %q)", e.ID)
	case len(e.Payload) == 0 || e.Payload[0] != '{' || !json.Valid(e.Payload):
		return errors.New("storage: an event's payload must be a JSON object")
	case e.CreatedAt.IsZero():
		return errors.New("storage: an event needs its CreatedAt")
	}
	return nil
}

// Event is an event of the outbox, as a deliverer and a listing see it.
type Event struct {
	ID        string
	Type      string
	Payload   []byte
	CreatedAt time.Time
	Status    EventStatus
	// Attempts counts the claims of it: the attempts begun.
	Attempts int
	// NextAttemptAt is when a pending event is due.
	NextAttemptAt time.Time
	// RetryingSince starts its retry period: CreatedAt, or the time of the
	// RetryEvents that made it pending again.
	RetryingSince time.Time
	// LeaseToken and LeaseUntil are its current lease, if any (uuid.Nil
	// and zero otherwise, and once it is delivered or failed).
	LeaseToken uuid.UUID
	LeaseUntil time.Time
	// LastError says how the last failed attempt failed ("503", "connect:
	// connection refused"); empty when none failed.
	LastError string
	// FinishedAt is when it was delivered or failed for good; zero while
	// pending.
	FinishedAt time.Time
}

// ClaimEvents is the input of Outbox.ClaimEvents.
type ClaimEvents struct {
	Now   time.Time
	Lease time.Duration
	Limit int // 1 or more
}

// EventAttempt is the input of Outbox.EventAttempted.
type EventAttempt struct {
	ID         string
	LeaseToken uuid.UUID
	Now        time.Time
	// Status is EventDelivered, EventFailed (for good), or EventPending
	// to be tried again at RetryAt.
	Status    EventStatus
	RetryAt   time.Time
	LastError string // at most 500 bytes are kept
}

// MaxEventErrorLength is the most of EventAttempt.LastError a store keeps.
const MaxEventErrorLength = 500

// EventFilter selects events for ListEvents.
type EventFilter struct {
	// Status selects one state; empty selects all.
	Status EventStatus
	Limit  int // 1 or more
	// Before continues a listing: only events strictly older than it, in
	// the listing's order (CreatedAt, then ID, descending). Nil starts at
	// the newest.
	Before *EventCursor
}

// EventCursor is a position in a listing of events.
type EventCursor struct {
	CreatedAt time.Time
	ID        string
}

// RetryEvents is the input of Outbox.RetryEvents.
type RetryEvents struct {
	ID  string // one event; empty for every failed one
	Now time.Time
}

// EventStats is Outbox.EventStats's answer.
type EventStats struct {
	Pending int64
	// OldestPending is the CreatedAt of the oldest pending event; zero
	// when none is pending.
	OldestPending time.Time
	// Delivered and Failed count the events ever delivered and failed
	// for good, by type; types with none are absent.
	Delivered map[string]int64
	Failed    map[string]int64
}

// BudgetAlert asks FinishExecution (and ResolveExecution, when it charges)
// for an event when the charge it commits makes a budget's charged spend
// over a window reach a threshold: after the charge, in the same atomic
// step, the store sums what SpendQuery{Budget, FromDay, UntilDay} would
// (the window's charged calls, this one included) and, when the sum is at
// or above Threshold, writes Event with its payload's "data.usedUsd" set to
// that sum as a string with four decimals ("19.8000"; see WithUsed), unless
// an event of Event.ID exists. A finish that is not charged writes none.
type BudgetAlert struct {
	Budget    string
	FromDay   string // YYYY-MM-DD, the window's first day in the budget's zone
	UntilDay  string // YYYY-MM-DD, the day after the last one counted
	Threshold decimal.Decimal
	Event     NewEvent
}

// Check reports what makes a unstorable: its event's (NewEvent.Check), a
// payload without a data object to take the used amount, no budget, or a
// day that is not YYYY-MM-DD (stores compare days as text).
func (a BudgetAlert) Check() error {
	if err := a.Event.Check(); err != nil {
		return err
	}
	if _, err := WithUsed(a.Event.Payload, decimal.Zero); err != nil {
		return err
	}
	if a.Budget == "" {
		return fmt.Errorf("storage: budget alert %q names no budget", a.Event.ID)
	}
	for _, day := range []string{a.FromDay, a.UntilDay} {
		if t, err := time.Parse(time.DateOnly, day); day != "" && (err != nil || t.Format(time.DateOnly) != day) {
			return fmt.Errorf("storage: budget alert %q: day %q is not a date as YYYY-MM-DD", a.Event.ID, day)
		}
	}
	if a.FromDay == "" {
		return fmt.Errorf("storage: budget alert %q has no first day", a.Event.ID)
	}
	return nil
}

// CheckEvents checks, before anything is written, the events and alerts a
// step would write: backends call it first, so that a bad one refuses the
// step rather than failing it halfway.
func CheckEvents(events []NewEvent, alerts []BudgetAlert) error {
	for _, e := range events {
		if err := e.Check(); err != nil {
			return err
		}
	}
	for _, a := range alerts {
		if err := a.Check(); err != nil {
			return err
		}
	}
	return nil
}

// WithUsed returns payload with "data.usedUsd" set to used, four decimals,
// as a BudgetAlert's event is written: the same JSON value but for that
// member, though members may come in another order. Backends that build
// the payload in Go call it; one that builds it in SQL gives the same value.
func WithUsed(payload []byte, used decimal.Decimal) ([]byte, error) {
	var body map[string]json.RawMessage
	if err := json.Unmarshal(payload, &body); err != nil {
		return nil, fmt.Errorf("storage: a budget alert's payload: %w", err)
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(body["data"], &data); err != nil {
		return nil, fmt.Errorf("storage: a budget alert's payload has no data object: %w", err)
	}
	data["usedUsd"], _ = json.Marshal(used.StringFixed(4))
	body["data"], _ = json.Marshal(data)
	return json.Marshal(body)
}
