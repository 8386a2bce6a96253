package memory

import (
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/toolgate/toolgate/internal/windowcount"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Interface guards.
var _ storage.Store = (*Store)(nil)

// Store is an in-memory storage.Store. The zero value is not usable; create
// one with New.
type Store struct {
	// mu guards everything below. One lock keeps BeginExecution's
	// all-or-nothing check-then-write trivially atomic; every critical
	// section is short (no I/O, no copying of caller-sized data).
	mu sync.Mutex

	quotes     map[uuid.UUID]*storage.Quote
	quoteQueue timeQueue[uuid.UUID] // by ExpiresAt
	// openQuotes holds each principal's quotes not yet used, expired ones
	// until a sweep or Prune drops them (see CreateQuoteCapped).
	openQuotes map[string]map[uuid.UUID]struct{}

	records     map[idemKey]*storage.IdempotencyRecord
	recordQueue timeQueue[idemKey] // by CreatedAt
	executions  map[uuid.UUID]*storage.Execution
	// receiptOf is each finished execution's latest signed receipt, the
	// same bytes its chain holds: its stored Response is kept without it,
	// and reads join the two (storage.WithReceipt), so a receipt is held
	// once however often the call is replayed.
	receiptOf map[uuid.UUID][]byte
	histories map[string]history // executions by principal, for listings
	// waiting holds the executions finished ambiguous and not yet
	// resolved, with their creation time, so that AmbiguousWaiting costs
	// what waits rather than every execution kept.
	waiting map[uuid.UUID]time.Time

	// The ledger is indexed three ways: per principal for limits, which
	// must not scan anyone else's history; in one queue for Prune, which
	// must not visit every principal; by execution for FinishExecution.
	ledger       map[string]*principalLedger
	ledgerQueue  timeQueue[*ledgerRow] // all rows by creation time
	ledgerByExec map[uuid.UUID]*ledgerRow

	// Each budget's history, shared by its members (budget.go), and the
	// rows of each execution still to be settled, for FinishExecution and
	// ResolveExecution.
	budgets      map[string]*budgetLedger
	budgetByExec map[uuid.UUID][]*budgetRow

	usage map[string]*toolUsage // by tool id

	approvals map[string]map[string]storage.Approval // by principal, then tool id
	controls  map[string]toolgatetype.SpendControls  // by principal

	requests     map[uuid.UUID]*storage.ApprovalRequest
	requestQueue timeQueue[uuid.UUID]             // by ExpiresAt
	requestsBy   map[string]*timeQueue[uuid.UUID] // by principal, by position (see cursor.go)
	requestsFor  map[string]*timeQueue[uuid.UUID] // by each approver a request names, by position
	requestsIn   map[string]*timeQueue[uuid.UUID] // by each budget a request counted in, by position
	// pending names the live pending request of each (principal, quote,
	// input), so that the same request is asked once.
	pending map[pendingKey]uuid.UUID

	// side guards sessions and secrets (session.go).
	side     sync.Mutex
	sessions map[string]storage.Session
	secrets  map[string][]byte

	// chains are the principals' receipts (receipt.go); chainsMu guards
	// the map, each chain its own receipts.
	chainsMu sync.Mutex
	chains   map[string]*chain

	// The windows of storage.WindowCounter, under their own lock.
	windowcount.Memory

	// outbox is the events to deliver (outbox.go), under mu.
	outbox outbox
}

// New returns an empty Store.
func New() *Store {
	return &Store{
		quotes:       make(map[uuid.UUID]*storage.Quote),
		openQuotes:   make(map[string]map[uuid.UUID]struct{}),
		records:      make(map[idemKey]*storage.IdempotencyRecord),
		executions:   make(map[uuid.UUID]*storage.Execution),
		receiptOf:    make(map[uuid.UUID][]byte),
		histories:    make(map[string]history),
		waiting:      make(map[uuid.UUID]time.Time),
		ledger:       make(map[string]*principalLedger),
		ledgerByExec: make(map[uuid.UUID]*ledgerRow),
		budgets:      make(map[string]*budgetLedger),
		budgetByExec: make(map[uuid.UUID][]*budgetRow),
		usage:        make(map[string]*toolUsage),
		approvals:    make(map[string]map[string]storage.Approval),
		controls:     make(map[string]toolgatetype.SpendControls),
		requests:     make(map[uuid.UUID]*storage.ApprovalRequest),
		chains:       make(map[string]*chain),
		requestsBy:   make(map[string]*timeQueue[uuid.UUID]),
		requestsFor:  make(map[string]*timeQueue[uuid.UUID]),
		requestsIn:   make(map[string]*timeQueue[uuid.UUID]),
		pending:      make(map[pendingKey]uuid.UUID),
		outbox:       newOutbox(),
	}
}

// idemKey is the scope of an Idempotency-Key: the same key sent by two
// principals names two unrelated calls.
type idemKey struct {
	principal string
	key       string
}
