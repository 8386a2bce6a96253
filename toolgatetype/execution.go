package toolgatetype

import "encoding/json"

// Execution is the normalized result of one call.
type Execution struct {
	ID     string          `json:"id"`
	Tool   ToolRef         `json:"tool"`
	Status Status          `json:"status"`
	Cost   Cost            `json:"cost"`
	Output json.RawMessage `json:"output"`
	Error  *ExecutionError `json:"error"`
}

// Status is how an execution ended, as callers see it.
type Status string

// Execution statuses.
const (
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
)

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
}

// CodeToolChangedDuringCall is the error code of a call retried after its
// first run was abandoned, when the tool changed or was blocked meanwhile.
const CodeToolChangedDuringCall = "tool_changed"
