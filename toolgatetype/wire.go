package toolgatetype

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// ErrorBody is the body of every non-success response:
// {"error": {"code", "message", ...details}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

type ErrorDetail struct {
	Code                Code           `json:"code"`
	Message             string         `json:"message"`
	Details             []FieldError   `json:"details,omitempty"`
	Violations          []string       `json:"violations,omitempty"`
	Budget              *BudgetRefusal `json:"budget,omitempty"`
	Rule                *RuleRef       `json:"rule,omitempty"`
	RetryAfterSeconds   int            `json:"retryAfterSeconds,omitempty"`
	ApprovalRequirement Requirement    `json:"approvalRequirement,omitempty"`
	ManifestDigest      *string        `json:"manifestDigest,omitempty"`
	Reasons             []string       `json:"reasons,omitempty"`
	Parameter           string         `json:"parameter,omitempty"`
	ApprovalRequestsURL string         `json:"approvalRequestsUrl,omitempty"`
}

// BodyOf is the body the HTTP API answers err with, and the one a refusal
// carries over MCP: its code, message and every detail. Anything that is not
// an *Error, and an internal error, is the internal error's fixed words: a
// cause is for logs, never shown. retryAfterSeconds is at least 1 when
// rate limited. approvalRequestsUrl names an address of the server's, which
// only the door that answers knows; it sets it.
func BodyOf(err error) ErrorBody {
	var te *Error
	if !errors.As(err, &te) || te.Code == CodeInternal {
		return ErrorBody{Error: ErrorDetail{Code: CodeInternal, Message: "the gateway could not complete the request"}}
	}
	d := ErrorDetail{
		Code:                te.Code,
		Message:             te.Message,
		Details:             te.Details,
		Violations:          te.Violations,
		Budget:              te.Budget,
		Rule:                te.Rule,
		ApprovalRequirement: te.ApprovalRequirement,
		ManifestDigest:      te.ManifestDigest,
		Reasons:             te.Reasons,
		Parameter:           te.Parameter,
	}
	if te.Code == CodeRateLimited || te.Code == CodeIdempotencyKeyInUse && te.RetryAfter > 0 {
		d.RetryAfterSeconds = max(int(te.RetryAfter.Seconds()), 1)
	}
	return ErrorBody{Error: d}
}

// DecodeError reads an error answer of the API back into the
// *Error it was written from, for clients: the code (any code,
// including ones this version does not know), the message and every
// detail, with the retry-after from retryAfterSeconds or else the
// Retry-After header. ok is false when body is not the API's error shape,
// as when a proxy answered instead.
func DecodeError(header http.Header, body []byte) (te *Error, ok bool) {
	var b ErrorBody
	if err := json.Unmarshal(body, &b); err != nil || b.Error.Code == "" {
		return nil, false
	}
	d := b.Error
	te = &Error{
		Code:                d.Code,
		Message:             d.Message,
		Details:             d.Details,
		Violations:          d.Violations,
		Budget:              d.Budget,
		Rule:                d.Rule,
		ApprovalRequirement: d.ApprovalRequirement,
		ManifestDigest:      d.ManifestDigest,
		Reasons:             d.Reasons,
		Parameter:           d.Parameter,
		// The gateway says where to ask exactly when a grant is required.
		GrantRequired: d.ApprovalRequestsURL != "",
	}
	secs := d.RetryAfterSeconds
	if secs == 0 {
		secs, _ = strconv.Atoi(header.Get("Retry-After"))
	}
	if secs > 0 {
		te.RetryAfter = time.Duration(secs) * time.Second
	}
	return te, true
}

// ApprovalRequestBody is the body of POST /v1/approval-requests.
type ApprovalRequestBody struct {
	QuoteID *string         `json:"quoteId"`
	Input   json.RawMessage `json:"input"`
}

// NewApprovalRequestBody is the body that asks approval of in, for clients.
func NewApprovalRequestBody(in ApprovalInput) ApprovalRequestBody {
	return ApprovalRequestBody{QuoteID: &in.QuoteID, Input: in.Input}
}

// DecisionBody is the optional body of .../approve; .../deny takes none,
// or an empty object. Remember is "once" (as when left out: this call
// only), "first_use", "never_ask" or "ask_charged_calls" (see
// Decision.Remember).
type DecisionBody struct {
	Remember *StandingMode `json:"remember,omitempty"`
}

// QuoteBody is the optional body of POST /v1/tools/{tool}/quote: the input
// the call will carry, for the organization's rules that read it to be
// decided in the quote rather than shown pending (QuoteOptions.Input). No
// body, or {}, quotes with the input unknown.
type QuoteBody struct {
	Input json.RawMessage `json:"input,omitempty"`
}

// CallBody is the body of POST /v1/tools/{tool}/call; the tool and the
// Idempotency-Key travel in the path and a header.
type CallBody struct {
	QuoteID  *string         `json:"quoteId"`
	Input    json.RawMessage `json:"input"`
	Approval *CallApproval   `json:"approval,omitempty"`
}

// CallApproval is the approval a call carries: the digest the user
// approved, and in approver mode the grant of an approver.
type CallApproval struct {
	ManifestDigest *string `json:"manifestDigest,omitempty"`
	GrantID        *string `json:"grantId,omitempty"`
}

// NewCallBody is the body that asks for req, for clients.
func NewCallBody(req CallRequest) CallBody {
	b := CallBody{QuoteID: &req.QuoteID, Input: req.Input}
	if req.ApprovalDigest != "" || req.ApprovalGrant != "" {
		b.Approval = &CallApproval{}
	}
	if req.ApprovalDigest != "" {
		b.Approval.ManifestDigest = &req.ApprovalDigest
	}
	if req.ApprovalGrant != "" {
		b.Approval.GrantID = &req.ApprovalGrant
	}
	return b
}

// ApprovalBody is the body of PUT /v1/approvals/{tool}: the standing
// approval's mode and the manifest digest it approves.
type ApprovalBody struct {
	Mode           *StandingMode `json:"mode"`
	ManifestDigest *string       `json:"manifestDigest"`
}
