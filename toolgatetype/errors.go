package toolgatetype

import (
	"errors"
	"fmt"
	"time"
)

// Code is the stable, machine-readable code of an error. Callers branch on
// codes, never on messages.
type Code string

// Error codes, each answered over HTTP with one fixed status. The codes
// only the HTTP layer can meet (a wrong method, a body too large or not
// JSON) belong to that layer.
const (
	CodeInvalidRequest        Code = "invalid_request"
	CodeIdempotencyKeyMissing Code = "idempotency_key_missing"
	CodeIdempotencyKeyInvalid Code = "idempotency_key_invalid"
	CodeUnauthorized          Code = "unauthorized"
	CodeToolBlocked           Code = "tool_blocked"
	// CodeRuleDenied: a rule of the organization's denies the call
	// (Error.Rule names it).
	CodeRuleDenied           Code = "rule_denied"
	CodeApprovalRequired     Code = "approval_required"
	CodeApprovalMismatch     Code = "approval_mismatch"
	CodeSpendLimitExceeded   Code = "spend_limit_exceeded"
	CodeToolNotFound         Code = "tool_not_found"
	CodeQuoteNotFound        Code = "quote_not_found"
	CodeExecutionNotFound    Code = "execution_not_found"
	CodeNotFound             Code = "not_found"
	CodeQuoteExpired         Code = "quote_expired"
	CodeQuoteUsed            Code = "quote_used"
	CodeQuoteOutdated        Code = "quote_outdated"
	CodeIdempotencyKeyInUse  Code = "idempotency_key_in_use"
	CodeInputInvalid         Code = "input_invalid"
	CodeQuoteToolMismatch    Code = "quote_tool_mismatch"
	CodeIdempotencyKeyReused Code = "idempotency_key_reused"
	CodeRateLimited          Code = "rate_limited"
	CodeInternal             Code = "internal_error"

	// Codes of approver mode and approval requests. approver_required is a
	// caller's key on an approver's route; caller_key_required, an
	// approver's key on a caller's route.
	CodeApproverRequired        Code = "approver_required"
	CodeCallerKeyRequired       Code = "caller_key_required"
	CodeApprovalPending         Code = "approval_pending"
	CodeApprovalDenied          Code = "approval_denied"
	CodeApprovalExpired         Code = "approval_expired"
	CodeApprovalAlreadyDecided  Code = "approval_already_decided"
	CodeApprovalGrantMismatch   Code = "approval_grant_mismatch"
	CodeApprovalRequestNotFound Code = "approval_request_not_found"

	// Codes of the caller's identity at a tool's provider (its
	// TokenExchange): upstream_identity_required is a caller with an API
	// key, where the provider must learn who calls; upstream_auth_failed,
	// an identity provider that refused, or could not be asked, to exchange
	// the caller's token. Both name the provider, and the call is not run.
	CodeUpstreamIdentityRequired Code = "upstream_identity_required"
	CodeUpstreamAuthFailed       Code = "upstream_auth_failed"

	// Codes of the resolution of ambiguous executions.
	CodeExecutionAlreadyResolved Code = "execution_already_resolved"
	CodeExecutionNotAmbiguous    Code = "execution_not_ambiguous"
)

// Error is every error the gateway returns for a rejected request. Match it
// with errors.As and branch on Code. The detail fields are set only for the
// codes that carry them.
type Error struct {
	Code    Code
	Message string

	// Details lists what failed the input schema (input_invalid).
	Details []FieldError
	// Violations lists the spend controls a call would break (spend_limit_exceeded).
	Violations []string
	// Budget is the first budget short, nearest the principal, when a
	// budget refused the call (spend_limit_exceeded); nil otherwise.
	Budget *BudgetRefusal
	// Rule is the rule that denied the call (rule_denied); nil otherwise.
	Rule *RuleRef
	// RetryAfter says when a rate-limited caller may try again (rate_limited).
	RetryAfter time.Duration
	// ApprovalRequirement, ManifestDigest and Reasons explain tool_blocked,
	// approval_required and approval_mismatch.
	ApprovalRequirement Requirement
	ManifestDigest      *string
	Reasons             []string
	// GrantRequired marks an approval_required whose caller must carry an
	// approver's grant: its principal is in approver mode. The HTTP API
	// then says where approval requests are made (approvalRequestsUrl).
	GrantRequired bool
	// Parameter names the query parameter or filter field that is wrong
	// (invalid_request from a listing: "limit", "cursor"...).
	Parameter string

	// Err is the underlying cause, for logs; it is never shown to callers.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("toolgate: %s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("toolgate: %s: %s", e.Code, e.Message)
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, &Error{Code: c}) match any *Error with code c.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Message == ""
}

// IsCode reports whether err is answered with code: the first *Error in
// its chain has it. An internal error that wraps a typed cause is internal.
func IsCode(err error, code Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// FieldError is one way a document fails its schema.
type FieldError struct {
	// Path locates the failing value, e.g. "input.limit"; the root is the prefix alone.
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Errorf is an *Error with code and a message formatted as fmt.Sprintf does.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
