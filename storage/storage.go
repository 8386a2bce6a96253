// Package storage defines the contract between the gateway and the place its
// state lives: quotes, idempotency records with leases, executions, the spend
// ledger, usage counters, standing approvals, approval requests and caller
// spend controls.
//
// The gateway keeps no state of its own. Every rule that must hold across
// concurrent calls (a quote is used once, a key runs once, a budget is never
// overspent) is enforced by one atomic Store method, so a backend that honours
// the guarantees documented here makes the gateway correct on any number of
// processes. storagetest.Run checks those guarantees; every backend, and every
// user-written fake, should pass it.
//
// The gateway hands every method complete parameters: it has defaulted and
// checked them once, as its callers' options say, before the store sees
// them. A backend may assume a limit is in the range its method documents
// (a page of receipts, of approval requests or of executions, a batch of
// pruning), and never defaults one; a caller of a Store of its own, such
// as a test, passes them complete too.
//
// The audit trail reads executions back: ListExecutions pages through a set
// of principals' finished executions, newest first, by a keyset position
// that concurrent inserts cannot shift, and SpendSummary sums what they were
// charged, by tool or by UTC day (audit.go has their query types).
//
// Store is one interface, whole: every backend implements every method,
// as River's drivers each implement riverdriver's one interface. Its
// methods are grouped by concern, each group in a file of its own and
// embedded here: the outbox (event.go); the reads of one gateway step
// together (ReadBatch, batch.go) and the sizes of the batches a store
// sends (ObserveBatches, batchsizes.go); the usage of one page of tools
// (UsageOf, usage.go); the count of ambiguous executions waiting
// (AmbiguousWaiting, ambiguouswaiting.go); and what the processes sharing
// a store must agree on beyond calls: the approval pages' sign-in
// sessions (SessionStore), counts of events in time windows, such as
// failed sign-ins and approval requests (WindowCounter), and secrets
// generated once, such as the key state is sealed with (SecretStore).
// No caller looks for a method by type assertion. What a backend cannot
// do it states in its own documentation, on the method: a store that
// sends no batches never calls ObserveBatches' observer, and a method a
// store cannot carry out at all returns ErrUnsupported. storagetest.Run
// checks every method of every store.
//
// A call's reads, the gateway's decision on them and the call's admission
// are one method, AdmitCall, so that a store may answer the reads however
// it likes (the PostgreSQL store answers from what it remembers) and see
// by itself that nothing is admitted on an answer out of date: a cache
// is the store's own business, and all the contract says of one is that
// decide may be called more than once.
package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Sentinel errors returned by every Store implementation. Backends translate
// their driver's errors into these in one place; callers match with errors.Is.
var (
	// ErrNotFound: the requested record does not exist (or was pruned).
	ErrNotFound = errors.New("storage: not found")
	// ErrAlreadyExists: a create collided with an existing primary key.
	ErrAlreadyExists = errors.New("storage: already exists")
	// ErrIdempotencyConflict: BeginExecution found a record for (principal,
	// key) that it may not take over: finished, running under a live lease, or
	// with another fingerprint. The caller reads it with GetIdempotency to
	// decide between replay, 409 and 422.
	ErrIdempotencyConflict = errors.New("storage: idempotency key already claimed")
	// ErrQuoteNotFound: BeginExecution's or CreateApprovalRequest's quote
	// does not exist for the principal.
	ErrQuoteNotFound = errors.New("storage: quote not found")
	// ErrQuoteUsed: BeginExecution's quote was already used by another key,
	// or CreateApprovalRequest's quote was used at all.
	ErrQuoteUsed = errors.New("storage: quote already used")
	// ErrQuoteExpired: CreateApprovalRequest's quote expired at or before
	// the request's CreatedAt.
	ErrQuoteExpired = errors.New("storage: quote expired")
	// ErrTooManyOpenQuotes: CreateQuoteCapped's principal already holds as
	// many open quotes as it may. The error is an *OpenQuotesError, which
	// says when the first of them expires.
	ErrTooManyOpenQuotes = errors.New("storage: too many open quotes")
	// ErrLeaseLost: FinishExecution was called by a run whose lease was taken
	// over by another run; its result must be discarded.
	ErrLeaseLost = errors.New("storage: lease lost to another run")
	// ErrUnsupported: the store cannot carry out the method at all, and
	// says so rather than pretending (see Store). It is
	// errors.ErrUnsupported, so that either matches.
	ErrUnsupported = errors.ErrUnsupported
	// ErrNotAmbiguous: ResolveExecution's execution is not ambiguous: it is
	// running, or it finished completed or failed and was never resolved.
	ErrNotAmbiguous = errors.New("storage: execution is not ambiguous")
	// ErrAlreadyResolved: ResolveExecution's execution was resolved before,
	// by this call's competitor or an earlier one.
	ErrAlreadyResolved = errors.New("storage: execution already resolved")
)

// Store is everything the gateway persists. Implementations must be safe for
// concurrent use by many goroutines and, for shared backends, by many
// processes.
//
// Users write fakes of Store, and a method added to it breaks them until
// they add it too: embedding Store in the fake's struct keeps such a fake
// compiling, and storagetest.Run says which guarantees it still misses. A
// fake whose reads cost nothing does its ReadBatch with ReadEach and its
// AdmitCall with AdmitEach; so does a fake that embeds a real store and
// changes one of the methods they use, or the real store's own ReadBatch
// and AdmitCall answer around the change.
type Store interface {
	// CreateQuote stores a new open quote. ErrAlreadyExists if the id is taken.
	CreateQuote(ctx context.Context, q Quote) error
	// CreateQuoteCapped stores a new open quote as CreateQuote does, unless
	// q.Principal already holds max open quotes: quotes neither used nor
	// expired at q.CreatedAt, those kept alive by an approval request
	// included. Then nothing is written and the error is an
	// *OpenQuotesError (matching ErrTooManyOpenQuotes). The count and the
	// insert are one atomic step: of any number of concurrent creations
	// for one principal, from any number of processes, none is stored
	// while max others are open. max <= 0 means no cap.
	CreateQuoteCapped(ctx context.Context, q Quote, max int) error
	// GetQuote returns the quote with this id. ErrNotFound if absent.
	GetQuote(ctx context.Context, id uuid.UUID) (Quote, error)

	// GetIdempotency returns the record for (principal, key) together with
	// the stored response when it is finished. ErrNotFound if absent.
	GetIdempotency(ctx context.Context, principal, key string) (IdempotencyRecord, error)

	// BeginExecution is the single atomic step that admits a call. In one
	// indivisible operation it:
	//
	//   - claims (principal, key) with the given fingerprint and lease, or,
	//     when a record with the same fingerprint is still running but its
	//     lease ended before b.Now, takes it over (Result.TookOver, the
	//     original execution and reservation are kept, limits are not
	//     re-checked and nothing is reserved twice); any other existing
	//     record fails with ErrIdempotencyConflict;
	//   - marks the quote used by this key (ErrQuoteNotFound when it does not
	//     exist for b.Principal, ErrQuoteUsed when another key used it);
	//   - when b.GrantID is set, marks that approval request used by
	//     b.ExecutionID; it must be approved and unused, for b.Principal,
	//     b.QuoteID and b.ToolID (ErrGrantUnusable otherwise). A takeover
	//     does not look at the grant: the run it takes over used it;
	//   - counts each of b.Limits over the ledger, including in-flight
	//     reservations, and fails with *LimitError listing every limit the
	//     call would break;
	//   - records the execution as running and reserves its amount.
	//
	// On any error nothing is written.
	BeginExecution(ctx context.Context, b Begin) (BeginResult, error)

	// AdmitCall is a new call's reads and its admission: it does r, as
	// ReadBatch does, hands the answer to decide, and begins the execution
	// decide returns, as BeginExecution does. When decide refuses, its
	// error is returned as it is and nothing is written.
	//
	// Nothing may be admitted or refused on an answer older than
	// ReadBatch's would be. A store that answers r from anything older
	// (from what it remembers, say) sees to that itself: it admits only
	// after checking, in the admitting step, that what the decision rested
	// on still holds, and otherwise, or when decide refused such an
	// answer, decides again on a fresh one, having written nothing of the
	// earlier decision. So decide may be called more than once, and must
	// leave nothing behind but its result; the last call's result is the
	// one admitted or returned. A store whose reads cost nothing does r,
	// decide and BeginExecution in turn (AdmitEach).
	AdmitCall(ctx context.Context, r Reads, decide func(ReadResult) (Begin, error)) (BeginResult, error)

	// FinishExecution records the outcome of a running execution in one
	// atomic step: the execution's status and response, the idempotency
	// record finished with that response, the reservation committed
	// (Charged) or released, and, for completed executions, the tool's usage
	// counters. ErrLeaseLost when f.LeaseToken no longer holds the lease
	// (a finished execution holds none, so a second finish gets it too);
	// ErrNotFound when the execution does not exist.
	//
	// An ambiguous finish (nobody knows whether the provider ran the
	// request) finishes the execution and its record with the response
	// like any other, so the key replays it and cannot be reused, but it
	// neither commits nor releases the reservation and counts no usage:
	// the amount keeps counting in MeasureLimits and in BeginExecution's
	// limits, as a running execution's does, and stays out of the charged
	// totals, until ResolveExecution settles it. f.Charged must be false.
	FinishExecution(ctx context.Context, f Finish) error

	// ResolveExecution records a person's finding about an ambiguous
	// execution, in one atomic step: its status becomes r.Outcome and it
	// carries the resolution (outcome, by, at, note); completed commits the
	// reservation to the ledger (charged, in SpendSummary, and counted in
	// the tool's usage), failed releases it; the execution's response and
	// its idempotency record's become r.Response, so a replay of the
	// original key returns the resolved execution. It returns the
	// execution as resolved.
	//
	// Of any number of concurrent resolutions of one execution exactly one
	// wins, and the reservation is charged or released exactly once; the
	// others get ErrAlreadyResolved, as does any resolution of an execution
	// resolved before. ErrNotAmbiguous when the execution is running,
	// completed or failed and was never ambiguous; ErrNotFound when it does
	// not exist. On any error nothing is written.
	ResolveExecution(ctx context.Context, r Resolve) (Execution, error)

	// ListReceipts returns up to limit of the principal's receipts with
	// seq above after, in seq order. The gateway checks both first: after
	// is 0 or more, limit from 1 to toolgatetype.MaxReceiptPage. Receipts
	// are never pruned: a chain is only checkable whole.
	ListReceipts(ctx context.Context, principal string, after int64, limit int) ([]Receipt, error)

	// GetExecution returns an execution by id. ErrNotFound if absent.
	GetExecution(ctx context.Context, id uuid.UUID) (Execution, error)

	// MeasureLimits returns, for each limit, the amount (MeasureSpend) or
	// count (MeasureCalls) already used by the principal, in-flight
	// reservations included. It is a read for previews; only BeginExecution
	// enforces.
	MeasureLimits(ctx context.Context, principal string, limits []Limit) ([]decimal.Decimal, error)

	// Usage returns the usage counters of one tool; zero values when unused.
	Usage(ctx context.Context, toolID string) (Usage, error)
	// UsageAll returns the usage counters of every tool that has any.
	UsageAll(ctx context.Context) (map[string]Usage, error)

	// PutApproval creates or replaces the principal's standing approval for a tool.
	PutApproval(ctx context.Context, a Approval) error
	// GetApproval returns the principal's standing approval for a tool. ErrNotFound if absent.
	GetApproval(ctx context.Context, principal, toolID string) (Approval, error)
	// ListApprovals returns the principal's standing approvals ordered by tool id.
	ListApprovals(ctx context.Context, principal string) ([]Approval, error)
	// DeleteApproval removes a standing approval. ErrNotFound if absent.
	DeleteApproval(ctx context.Context, principal, toolID string) error

	// PutSpendControls stores a caller's own spend controls, replacing any earlier.
	PutSpendControls(ctx context.Context, principal string, c toolgatetype.SpendControls) error
	// GetSpendControls returns a caller's stored spend controls. ErrNotFound if none.
	GetSpendControls(ctx context.Context, principal string) (toolgatetype.SpendControls, error)
	// UpdateSpendControls changes a caller's own spend controls in one atomic
	// step, so that two concurrent changes (two tools' limits set at once)
	// both survive. update is handed the stored controls (the zero value when
	// there are none) and what it leaves is stored and returned. It may be
	// called more than once, when a backend retries after a conflict, so it
	// must only change its argument, and it must not call the store. An error
	// from update aborts the change, writes nothing and is returned as it is.
	UpdateSpendControls(ctx context.Context, principal string, update func(*toolgatetype.SpendControls) error) (toolgatetype.SpendControls, error)

	// CreateApprovalRequest stores a new approval request, normally pending,
	// and in the same atomic step extends the life of its quote to the
	// request's: the quote's ExpiresAt becomes r.ExpiresAt when that is
	// later, and is never made earlier. Nothing else of the quote changes,
	// so its price, fee and digest stay bound, and it is still used by at
	// most one call. The quote must be r.QuoteID of r.Principal
	// (ErrQuoteNotFound), not used (ErrQuoteUsed) and not expired at
	// r.CreatedAt (ErrQuoteExpired); then the id must be free
	// (ErrAlreadyExists). Against a concurrent BeginExecution on the same
	// quote, either the request is created first, or it finds the quote
	// used. On any error nothing is written.
	//
	// A pending request is asked once: when a pending request of the same
	// principal, quote and input hash (SameRequest) is live at r.CreatedAt,
	// nothing is written and the error is a *PendingRequestError carrying
	// that request. Of any number of such creations at once, from any
	// number of processes, exactly one stores its request and the others
	// get it back that way.
	CreateApprovalRequest(ctx context.Context, r ApprovalRequest) error
	// GetApprovalRequest returns the approval request with this id, in its
	// stored state (expiry is the reader's to judge). ErrNotFound if absent.
	GetApprovalRequest(ctx context.Context, id uuid.UUID) (ApprovalRequest, error)
	// ListApprovalRequests returns the requests f selects, newest first
	// (CreatedAt descending, then ID descending by bytes), at most f.Limit.
	ListApprovalRequests(ctx context.Context, f ApprovalRequestFilter) ([]ApprovalRequest, error)
	// DecideApprovalRequest approves or denies a pending request in one
	// atomic step, and returns it as decided. Of any number of concurrent
	// decisions exactly one wins; the others get ErrAlreadyDecided, as does
	// any decision of a request no longer pending. A pending request whose
	// ExpiresAt is at or before d.Now gets ErrApprovalExpired and stays
	// pending. An approve whose d.Remember is a standing approval
	// (d.Standing()) also puts it (see ApprovalDecision) in the same step:
	// both are written or neither. d.Remember is stored on the request
	// either way, toolgatetype.ApprovalOnce included.
	// ErrNotFound if absent.
	DecideApprovalRequest(ctx context.Context, d ApprovalDecision) (ApprovalRequest, error)
	// ListExecutions returns the finished executions of q.Principals that
	// match q, newest first: by CreatedAt, then by ID (as bytes) descending.
	// Running executions are left out, and so is every Response (nil), so a
	// page costs what its items do, not what their outputs weigh. With
	// q.After set, only executions strictly after it in that order are
	// returned, so paging by the last item of each page neither repeats nor
	// skips an execution, whatever is inserted meanwhile.
	ListExecutions(ctx context.Context, q ExecutionQuery) ([]Execution, error)
	// SpendSummary sums the charged amounts of the completed executions of
	// q.Principals created in [q.Since, q.Until), grouped by q.GroupBy, in
	// ascending order of the group key. Groups with no execution are left out.
	SpendSummary(ctx context.Context, q SpendQuery) ([]SpendGroup, error)

	// Prune deletes records the retention policy no longer needs, at most
	// p.Limit of each kind per call so one run never holds the store long.
	// Running executions whose lease is still live are never pruned.
	// Neither are ambiguous executions not yet resolved, whatever their
	// age, nor their idempotency records nor their reservations: a person
	// has still to resolve them, and pruning one would drop its reserved
	// amount without anyone deciding whether it was spent. Its reservation
	// counts in the limits whose windows include its creation, like any
	// other, so an ambiguous execution nobody resolves holds up no later
	// day or month. Once resolved it is pruned like any finished execution.
	Prune(ctx context.Context, p Prune) (PruneResult, error)

	// Outbox keeps the events to deliver (event.go).
	Outbox
	// BatchReader does the reads of one gateway step together (batch.go).
	BatchReader
	// BatchObserver reports the batches a store sends (batchsizes.go).
	BatchObserver
	// UsageLister reads the usage of one page of tools (usage.go).
	UsageLister
	// AmbiguousCounter counts the ambiguous executions waiting
	// (ambiguouswaiting.go).
	AmbiguousCounter
	// SessionStore keeps the approval pages' sign-in sessions (session.go).
	SessionStore
	// WindowCounter counts events in time windows (window.go).
	WindowCounter
	// SecretStore keeps secrets generated once (secret.go).
	SecretStore
}

// QuoteState is the lifecycle state of a stored quote. Expiry is not a
// stored state: a quote is expired when Now is at or after ExpiresAt.
type QuoteState string

// Quote states.
const (
	QuoteOpen QuoteState = "open"
	QuoteUsed QuoteState = "used"
)

// Quote is a price and policy decision bound to one principal, one tool
// version and its amounts. Once stored, only its State (when a call uses
// it) and its ExpiresAt (later, when an approval request of it is made)
// ever change.
type Quote struct {
	ID             uuid.UUID
	Principal      string
	ToolID         string
	ToolSlug       string
	ToolVersion    int
	ManifestDigest string // empty when the tool has no immutable version
	PriceUSD       decimal.Decimal
	FeeUSD         decimal.Decimal
	TotalUSD       decimal.Decimal
	CreatedAt      time.Time
	ExpiresAt      time.Time
	State          QuoteState
	UsedByKey      string // the Idempotency-Key that used it, when State is QuoteUsed
}

// OpenQuotesError is CreateQuoteCapped's refusal: the principal holds Max
// open quotes, the earliest of which expires at FirstExpiry, when a quote
// may be created again unless one is used before. It matches
// ErrTooManyOpenQuotes.
type OpenQuotesError struct {
	Max         int
	FirstExpiry time.Time
}

func (e *OpenQuotesError) Error() string {
	return fmt.Sprintf("%s (%d; the first expires at %s)", ErrTooManyOpenQuotes, e.Max, e.FirstExpiry.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrTooManyOpenQuotes) hold.
func (e *OpenQuotesError) Is(target error) bool { return target == ErrTooManyOpenQuotes }

// ExecutionStatus is the state of an execution: the status callers see,
// toolgatetype.Status, the same type, so that what the store keeps is
// handed on as it is. The store has one value callers never see,
// ExecutionRunning.
type ExecutionStatus = toolgatetype.Status

// Execution statuses. Running is internal: callers only ever see a finished one.
const (
	ExecutionRunning   ExecutionStatus = "running"
	ExecutionCompleted                 = toolgatetype.StatusCompleted
	ExecutionFailed                    = toolgatetype.StatusFailed
	// ExecutionAmbiguous: finished, but nobody knows whether the provider
	// ran the request. Its amount stays reserved until ResolveExecution
	// makes it completed or failed.
	ExecutionAmbiguous = toolgatetype.StatusAmbiguous
)

// Execution is one admitted call.
type Execution struct {
	ID             uuid.UUID
	Principal      string
	ToolID         string
	QuoteID        uuid.UUID
	IdempotencyKey string
	Status         ExecutionStatus
	AmountUSD      decimal.Decimal // the quote total, reserved while running
	Charged        bool            // true once the amount is committed to the ledger
	Response       []byte          // the exact response body, once finished; nil in listings
	CreatedAt      time.Time
	FinishedAt     time.Time // zero while running

	// What an audit of the call shows, as given to BeginExecution.
	ToolSlug       string
	ManifestDigest string
	PriceUSD       decimal.Decimal
	FeeUSD         decimal.Decimal
	Approval       toolgatetype.ApprovalKind
	GrantID        uuid.UUID // the approver's grant that approved it; uuid.Nil when none
	// Budgets are the budgets it counts in, as Begin.Budgets gave them;
	// nil when none.
	Budgets []BudgetDay
	// Rules are the organization's rules that took part in admitting it,
	// as Begin.Rules gave them; nil when none.
	Rules []RuleUse

	// Resolution is how a person resolved the execution when it was
	// ambiguous; nil for every other, and while it is still ambiguous.
	Resolution *ExecutionResolution
}

// IdempotencyRecord is the claim of one Idempotency-Key by one principal.
type IdempotencyRecord struct {
	Principal   string
	Key         string
	Fingerprint string
	ExecutionID uuid.UUID
	// LeaseToken identifies the run that holds the lease; a takeover changes it.
	LeaseToken uuid.UUID
	LeaseUntil time.Time
	Finished   bool
	Response   []byte // the stored response body, when Finished
	CreatedAt  time.Time
}

// Measure says what a Limit counts.
type Measure string

// Measures.
const (
	// MeasureSpend sums the amounts of executions reserved or charged (released ones excluded).
	MeasureSpend Measure = "spend"
	// MeasureCalls counts executions begun, whatever their outcome.
	MeasureCalls Measure = "calls"
)

// Limit is one budget or rate limit checked when a call is admitted.
type Limit struct {
	// ToolID scopes the limit to one tool; empty means all of the principal's calls.
	ToolID  string
	Measure Measure
	// Since is the start of the window: executions created at or after it count.
	Since time.Time
	// Max is the most the window may hold including this call.
	Max decimal.Decimal

	// Budget, when set, makes this a budget's limit: it counts every call
	// admitted with Budget among its Begin.Budgets, whoever its principal
	// (the principal given with the limit is then not looked at). A
	// budget's MeasureSpend limit counts whole calendar days of the
	// budget's time zone, each call on the Day its BudgetDay gave: those
	// from FromDay on, and Since is not looked at. Its MeasureCalls limit
	// counts the calls created at or after Since, as a principal's does.
	Budget string
	// FromDay is the first day a budget's spend limit counts, as
	// YYYY-MM-DD; only with Budget and MeasureSpend.
	FromDay string
}

// BudgetDay is one budget a call counts in, and the call's calendar day in
// that budget's time zone (YYYY-MM-DD), on which its amount is counted for
// as long as it is kept.
type BudgetDay struct {
	Budget string
	Day    string
}

// LimitFailure is one limit a call would break.
type LimitFailure struct {
	Index int             // position in Begin.Limits
	Limit Limit           // the limit itself
	Used  decimal.Decimal // what the window held before this call
	// Oldest is the creation time of the oldest execution counted, so a
	// caller can tell when a rate window frees up. Zero when nothing counted.
	Oldest time.Time
}

// LimitError is returned by BeginExecution when a call would break limits.
type LimitError struct {
	Failures []LimitFailure
}

func (e *LimitError) Error() string {
	return "storage: call would exceed a spend or rate limit"
}

// Begin is the input of BeginExecution.
type Begin struct {
	Principal   string
	Key         string
	Fingerprint string
	QuoteID     uuid.UUID
	ExecutionID uuid.UUID // used when a new execution is created
	ToolID      string
	AmountUSD   decimal.Decimal
	Limits      []Limit
	// Budgets are the budgets the call counts in, each once, with its day
	// in each: recorded with the execution, so that a Limit of that Budget
	// counts it from admission on (its amount held while it runs or is
	// ambiguous, given back when it fails or is released, charged when it
	// completes) and SpendQuery.Budget sums it once charged. Empty for a
	// principal in no budget.
	Budgets    []BudgetDay
	LeaseToken uuid.UUID
	LeaseUntil time.Time
	Now        time.Time
	// GrantID is the approval request that approves this call (see
	// BeginExecution); uuid.Nil when the call carries none.
	GrantID uuid.UUID

	// Stored on a new execution for the audit trail; admission never reads
	// them. AmountUSD is PriceUSD + FeeUSD.
	ToolSlug       string
	ManifestDigest string
	PriceUSD       decimal.Decimal
	FeeUSD         decimal.Decimal
	Approval       toolgatetype.ApprovalKind
	// Rules are the organization's rules that matched the call, audit
	// mode's included, in the order they were decided; empty when none
	// did.
	Rules []RuleUse
}

// NewExecution is the execution BeginExecution creates when it admits b
// under a new key: running, reserving b.AmountUSD, created at b.Now, with
// every audit field b gives.
func (b Begin) NewExecution() Execution {
	return Execution{
		ID:             b.ExecutionID,
		Principal:      b.Principal,
		ToolID:         b.ToolID,
		QuoteID:        b.QuoteID,
		IdempotencyKey: b.Key,
		Status:         ExecutionRunning,
		AmountUSD:      b.AmountUSD,
		CreatedAt:      b.Now,
		ToolSlug:       b.ToolSlug,
		ManifestDigest: b.ManifestDigest,
		PriceUSD:       b.PriceUSD,
		FeeUSD:         b.FeeUSD,
		Approval:       b.Approval,
		GrantID:        b.GrantID,
		Budgets:        b.Budgets,
		Rules:          b.Rules,
	}
}

// BeginResult is the outcome of a successful BeginExecution.
type BeginResult struct {
	Execution Execution
	// TookOver is true when an abandoned run's lease was taken over; the
	// execution is the original one.
	TookOver bool
}

// Finish is the input of FinishExecution.
type Finish struct {
	Principal   string
	Key         string
	ExecutionID uuid.UUID
	LeaseToken  uuid.UUID
	Status      ExecutionStatus // completed, failed or ambiguous
	// Charged commits the reservation; false releases it, except for an
	// ambiguous finish, which keeps it and must not be charged.
	Charged  bool
	Response []byte
	Now      time.Time
	// Seal, when set, makes the execution's receipt, which the store keeps
	// in the same step (see Seal); nil keeps none.
	Seal Seal
	// Events are written in the same step, as Outbox.AddEvent writes
	// them (an id already written is kept): an execution finished
	// ambiguous, for a person to hear of the money it holds.
	Events []NewEvent
	// Alerts are written in the same step when a charged finish makes
	// their thresholds reached (see BudgetAlert); ignored unless Charged.
	Alerts []BudgetAlert
}

// Usage is a tool's usage counters. It is not toolgatetype.Usage, what
// callers are shown: that one labels the counts coarsely and shows them
// only where the operator chose to, from these exact ones.
type Usage struct {
	Count       int64 // completed executions
	UniqueUsers int64 // distinct principals with a completed execution
}

// Approval is a principal's standing approval of one tool, bound to the
// manifest digest it was given for. A different current digest makes it stale.
type Approval struct {
	Principal      string
	ToolID         string
	ManifestDigest string
	Mode           toolgatetype.StandingMode
	// ApprovedBy is the approver who set it (by approving a request with
	// Remember, or on the principal's behalf), or whose approved call
	// recorded a first use; empty when the caller set it. Principals whose
	// calls an approver must approve count only approvals an approver set.
	ApprovedBy string
	UpdatedAt  time.Time
}

// Prune is the input of Store.Prune: what is old enough to delete.
type Prune struct {
	// IdempotencyBefore: finished idempotency records and their executions
	// created before this, and running ones whose lease ended before it.
	IdempotencyBefore time.Time
	// QuotesBefore: quotes that expired before this.
	QuotesBefore time.Time
	// LedgerBefore: spend and call history created before this. It must be
	// older than every window a limit looks at (the current UTC month).
	// The budgets' history, kept by day of each budget's own calendar
	// (BudgetDay), goes by day: the days before LedgerBefore's UTC date
	// minus one, which in every zone (UTC-12 to UTC+14) ended before
	// LedgerBefore: no day that may hold a later call is cut.
	LedgerBefore time.Time
	// ApprovalRequestsBefore: approval requests, whatever their state, that
	// expired before this.
	ApprovalRequestsBefore time.Time
	// EventsBefore: delivered events delivered before this. Pending and
	// failed events are never pruned, nor the counts of EventStats.
	EventsBefore time.Time
	// Limit caps the rows of each kind one call deletes: 1 or more. The
	// gateway always sets it, so a backend need not default it.
	Limit int
}

// PruneResult says how much one Prune call deleted.
type PruneResult struct {
	Idempotency      int
	Quotes           int
	Ledger           int
	ApprovalRequests int
	Events           int
}
