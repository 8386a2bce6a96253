package toolgatetype

import (
	"encoding/json"
	"time"
)

// Execution is the normalized result of one call.
type Execution struct {
	ID     string          `json:"id"`
	Tool   ToolRef         `json:"tool"`
	Status Status          `json:"status"`
	Cost   Cost            `json:"cost"`
	Output json.RawMessage `json:"output"`
	Error  *ExecutionError `json:"error"`
	// Resolution says how a person resolved an ambiguous execution; absent
	// for every other.
	Resolution *Resolution `json:"resolution,omitempty"`
	// Receipt is the gateway's signed receipt of this outcome (the newest,
	// for a resolved execution); absent only from gateways that keep none.
	Receipt *SignedReceipt `json:"receipt,omitempty"`
	// Rules are the organization's rules that took part in admitting the
	// call, audit ones included; absent when none did.
	Rules []RuleUse `json:"rules,omitempty"`
}

// Status is how an execution ended, as callers see it. The store keeps the
// same type (storage.ExecutionStatus), with one more value of its own for
// an execution still running, which callers never see.
type Status string

// Execution statuses.
const (
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	// StatusAmbiguous: the request may have reached the provider and no
	// complete answer came back, so nobody knows whether it ran. It is not
	// sent again; its amount stays reserved, counted in the limits but not
	// charged, until a person resolves it as completed or failed.
	StatusAmbiguous Status = "ambiguous"
)

// Resolution is a person's finding about an ambiguous execution: whether it
// ran (completed: charged, its output stays unknown) or not (failed: the
// reservation is released).
type Resolution struct {
	Outcome    Status    `json:"outcome"`
	ResolvedBy string    `json:"resolvedBy"`
	ResolvedAt time.Time `json:"resolvedAt"`
	Note       string    `json:"note"`
}

// ResolveRequest is a person's resolution of an ambiguous execution, the
// body of POST /v1/executions/{id}/resolve: Outcome is StatusCompleted (it
// ran: charge it) or StatusFailed (it did not: release its amount), Note an
// optional explanation of at most MaxResolutionNote characters.
type ResolveRequest struct {
	Outcome Status `json:"outcome"`
	Note    string `json:"note,omitempty"`
}

// MaxResolutionNote is the longest note a resolution may carry, in characters.
const MaxResolutionNote = 1000

// Cost is what a call costs. A failed execution shows the quoted amounts
// but is not charged.
type Cost struct {
	PriceUSD string `json:"priceUsd"`
	FeeUSD   string `json:"feeUsd"`
	TotalUSD string `json:"totalUsd"`
	Currency string `json:"currency"`
}

// ExecutionError says why an execution failed. Its message is the
// gateway's, never the provider's unfiltered text.
type ExecutionError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfterSeconds, on an upstream_unavailable failure of a call the
	// circuit breaker held back, is when the provider may be called again,
	// for everyone or for this caller; the HTTP answer says it in
	// Retry-After too.
	RetryAfterSeconds int `json:"retryAfterSeconds,omitempty"`
}

// CodeOutcomeUnknown is the error code of an ambiguous execution.
const CodeOutcomeUnknown = "outcome_unknown"

// CodeResolvedFailed is the error code of an ambiguous execution that a
// person resolved as failed: the provider did not run it.
const CodeResolvedFailed = "resolved_failed"

// CodeToolChangedDuringCall is the error code of a call retried after its
// first run was abandoned, when the tool changed or was blocked meanwhile.
const CodeToolChangedDuringCall = "tool_changed"
