package storage

import (
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Sentinel errors of approval requests.
var (
	// ErrAlreadyDecided: DecideApprovalRequest found the request approved,
	// denied or used. A decision is final.
	ErrAlreadyDecided = errors.New("storage: approval request already decided")
	// ErrApprovalExpired: DecideApprovalRequest found the request still
	// pending, but its ExpiresAt is at or before the decision's Now.
	ErrApprovalExpired = errors.New("storage: approval request expired")
	// ErrGrantUnusable: BeginExecution's Begin.GrantID is not an approved,
	// unused approval request of b.Principal for b.QuoteID and b.ToolID.
	ErrGrantUnusable = errors.New("storage: approval grant cannot be used for this call")
	// ErrApprovalRequestPending: CreateApprovalRequest found the same
	// request (principal, quote and input) pending already. The error is a
	// *PendingRequestError, which carries that request.
	ErrApprovalRequestPending = errors.New("storage: the same approval request is pending already")
)

// PendingRequestError is CreateApprovalRequest's error when a pending
// request of the same principal, quote and input hash is live: nothing
// was written, and Pending is that request. It matches
// ErrApprovalRequestPending.
type PendingRequestError struct {
	Pending ApprovalRequest
}

func (e *PendingRequestError) Error() string {
	return ErrApprovalRequestPending.Error() + " (" + e.Pending.ID.String() + ")"
}

// Is makes errors.Is(err, ErrApprovalRequestPending) hold.
func (e *PendingRequestError) Is(target error) bool { return target == ErrApprovalRequestPending }

// SameRequest reports whether a and b ask for the same call: of the same
// principal, quote and input. Two such requests pending at once would ask
// a person the same question twice.
func SameRequest(a, b ApprovalRequest) bool {
	return a.Principal == b.Principal && a.QuoteID == b.QuoteID && a.InputSHA256 == b.InputSHA256
}

// ApprovalStatus is the stored state of an approval request: the status
// callers see, toolgatetype.ApprovalStatus, the same type, of which a store
// keeps four values. Expiry is not a stored state: a pending or approved
// request whose ExpiresAt has passed is shown as expired
// (toolgatetype.ApprovalStatusExpired), and can no longer be decided or
// used; toolgatetype.ApprovalStatusAll names no state at all.
type ApprovalStatus = toolgatetype.ApprovalStatus

// Approval request states. A request is created pending; a decision makes
// it approved or denied, once; an approved request becomes used when the
// call it approves is admitted.
const (
	ApprovalPending  = toolgatetype.ApprovalStatusPending
	ApprovalApproved = toolgatetype.ApprovalStatusApproved
	ApprovalDenied   = toolgatetype.ApprovalStatusDenied
	ApprovalUsed     = toolgatetype.ApprovalStatusUsed
)

// ApprovalRequest is a caller's request that an approver approve one call:
// one quote, of one tool version, with one input. Once approved it is the
// grant the call carries (its ID), good for that call only.
//
// Everything but Status, DecidedBy, DecidedAt, Remember and ExecutionID is
// set at creation and never changes.
//
// It is not toolgatetype.ApprovalRequest, what callers are shown: that one
// is the wire form (ids and amounts as strings, the tool as the registry
// names it now, expiry folded into its status, the page to decide it on),
// made from this one as of a moment; this one is what is kept, with the
// ids, amounts and tool id that the store compares and sums.
type ApprovalRequest struct {
	ID             uuid.UUID
	Principal      string
	QuoteID        uuid.UUID
	ToolID         string
	ToolSlug       string
	ManifestDigest string
	PriceUSD       decimal.Decimal
	FeeUSD         decimal.Decimal
	TotalUSD       decimal.Decimal
	// Input is the call's input in RFC 8785 canonical form, as the caller
	// sent it (before schema defaults); InputSHA256 is the lowercase hex
	// SHA-256 of exactly these bytes.
	Input       []byte
	InputSHA256 string
	Status      ApprovalStatus
	DecidedBy   string    // the approver's id, once decided
	DecidedAt   time.Time // zero until decided
	// Remember is what an approve applied: the standing approval it
	// recorded, or toolgatetype.ApprovalOnce for none; empty until approved
	// (and on requests approved before every approve recorded one).
	Remember toolgatetype.StandingMode
	// ExecutionID is the execution that used the grant, once used.
	ExecutionID uuid.UUID
	CreatedAt   time.Time
	// ExpiresAt is when the request ends: past it, it can be neither
	// decided nor used. Its quote lives at least as long (see
	// Store.CreateApprovalRequest).
	ExpiresAt time.Time
	// Approvers are the approvers a rule named (ids of approver entries),
	// who alone may see and decide this request; nil: the principal's
	// approvers, as for every other request. Stores read an empty list
	// back as nil.
	Approvers []string
	// Budgets are the ids of the budgets the principal counted in when
	// the request was made (its own, those its token's claims joined, and
	// their ancestors), so that an approver of a budget finds the requests
	// of its members whom no config names, on every instance sharing the
	// store. Stores read an empty list back as nil.
	Budgets []string

	// Event, when set, is written by CreateApprovalRequest with the
	// request, in the same step (as Outbox.AddEvent writes it), and only
	// when the request is stored. It is not kept on the request: reads
	// give nil.
	Event *NewEvent
}

// ApprovalDecision is the input of DecideApprovalRequest.
type ApprovalDecision struct {
	ID uuid.UUID
	// Approve approves the request; false denies it.
	Approve bool
	// DecidedBy is the approver's id.
	DecidedBy string
	// Remember, on an approve, is stored on the request, and also stores
	// the standing approval of the request's principal, tool and digest
	// with this mode, approved by DecidedBy, in the same atomic step when
	// it is one (Remember.Standing()): empty and toolgatetype.ApprovalOnce
	// store none. Ignored on a deny.
	Remember toolgatetype.StandingMode
	Now      time.Time
	// Event, when set, is written with the decision, in the same step (as
	// Outbox.AddEvent writes it); on any error it is not written.
	Event *NewEvent
}

// Standing reports whether the decision stores a standing approval: an
// approve whose Remember is one.
func (d ApprovalDecision) Standing() bool {
	return d.Approve && d.Remember.Standing()
}

// ApprovalCursor is a position in a listing of approval requests, newest
// first: the listing continues with the requests strictly older than it.
type ApprovalCursor struct {
	CreatedAt time.Time
	ID        uuid.UUID
}

// After reports whether r comes after the cursor in a newest-first
// listing: created before it, or at the same instant with a smaller id.
func (c ApprovalCursor) After(r ApprovalRequest) bool {
	if !r.CreatedAt.Equal(c.CreatedAt) {
		return r.CreatedAt.Before(c.CreatedAt)
	}
	return bytesLess(r.ID, c.ID)
}

// bytesLess orders ids by their bytes, as a database orders uuid columns.
func bytesLess(a, b uuid.UUID) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// ApprovalRequestFilter selects approval requests for
// ListApprovalRequests. Zero fields select everything.
type ApprovalRequestFilter struct {
	// Principals are the principals whose requests are listed; with no
	// Approver and no Budgets, none lists nothing. With an Approver they
	// select only the requests that name no approvers.
	Principals []string
	// Budgets keep, beside the requests of Principals, those whose
	// Budgets hold one of these ids: an approver of budgets sees the
	// requests of their members, whom the config may not name.
	Budgets []string
	// Approver, when set, makes the listing that approver's view: a
	// request that names approvers (ApprovalRequest.Approvers) is kept
	// only when Approver is among them, whoever its principal; a request
	// that names none only when its principal is among Principals or its
	// Budgets meet Budgets. Empty, requests are kept by Principals and
	// Budgets alone, whatever they name.
	Approver string
	// Statuses keeps requests in one of these stored states; empty keeps all.
	Statuses []ApprovalStatus
	// LiveAt keeps only requests whose ExpiresAt is after it.
	LiveAt time.Time
	// ExpiredAt keeps only requests whose ExpiresAt is at or before it.
	ExpiredAt time.Time
	// ToolID and InputSHA256, when set, keep only requests of this tool and
	// with this input hash: the requests made for one call, which a caller
	// looks for to find its grant. Backends answer these from an index.
	ToolID      string
	InputSHA256 string
	// After continues a listing from a cursor; nil starts with the newest.
	After *ApprovalCursor
	// Limit caps the requests returned: 1 or more. The gateway always sets
	// it (a page's size, and one more to tell whether another follows), so
	// a backend need not default it.
	Limit int
}

// Matches reports whether r passes the filter's principals or approver,
// statuses, expiry, tool and input (not its cursor or limit).
func (f ApprovalRequestFilter) Matches(r ApprovalRequest) bool {
	if !f.shows(r) {
		return false
	}
	if len(f.Statuses) > 0 {
		found := false
		for _, s := range f.Statuses {
			if s == r.Status {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if !f.LiveAt.IsZero() && !r.ExpiresAt.After(f.LiveAt) {
		return false
	}
	if !f.ExpiredAt.IsZero() && r.ExpiresAt.After(f.ExpiredAt) {
		return false
	}
	if f.ToolID != "" && r.ToolID != f.ToolID {
		return false
	}
	return f.InputSHA256 == "" || r.InputSHA256 == f.InputSHA256
}

// shows reports whether r is among the requests the filter's viewer sees:
// those of its Principals and its Budgets; with an Approver, the requests
// that name that approver, and those of its Principals and Budgets that
// name no approvers.
func (f ApprovalRequestFilter) shows(r ApprovalRequest) bool {
	if f.Approver != "" && len(r.Approvers) > 0 {
		return slices.Contains(r.Approvers, f.Approver)
	}
	return slices.Contains(f.Principals, r.Principal) || f.InBudgets(r)
}

// InBudgets reports whether r counted in one of the filter's Budgets.
func (f ApprovalRequestFilter) InBudgets(r ApprovalRequest) bool {
	for _, b := range r.Budgets {
		if slices.Contains(f.Budgets, b) {
			return true
		}
	}
	return false
}

// Selects reports whether the filter can select anything: it names
// principals, budgets or an approver.
func (f ApprovalRequestFilter) Selects() bool {
	return len(f.Principals) > 0 || len(f.Budgets) > 0 || f.Approver != ""
}
