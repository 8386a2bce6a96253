package httpx

import (
	"net/http"

	"github.com/toolgate/toolgate/toolgatetype"
)

// Error codes only the HTTP layer meets: the gateway never sees a request
// with the wrong method, an oversized body or a body that is not JSON.
// Their names are on the wire, like the gateway's own.
const (
	CodeMethodNotAllowed     toolgatetype.Code = "method_not_allowed"
	CodePayloadTooLarge      toolgatetype.Code = "payload_too_large"
	CodeUnsupportedMediaType toolgatetype.Code = "unsupported_media_type"
	// CodeInsufficientScope is a valid access token without the scope the
	// route needs (RFC 6750).
	CodeInsufficientScope toolgatetype.Code = "insufficient_scope"
)

// codeStatus is the HTTP status of each code the gateway returns.
var codeStatus = map[toolgatetype.Code]int{
	toolgatetype.CodeInvalidRequest:        http.StatusBadRequest,
	toolgatetype.CodeIdempotencyKeyMissing: http.StatusBadRequest,
	toolgatetype.CodeIdempotencyKeyInvalid: http.StatusBadRequest,
	toolgatetype.CodeUnauthorized:          http.StatusUnauthorized,
	toolgatetype.CodeToolBlocked:           http.StatusForbidden,
	toolgatetype.CodeRuleDenied:            http.StatusForbidden,
	toolgatetype.CodeApprovalRequired:      http.StatusForbidden,
	toolgatetype.CodeApprovalMismatch:      http.StatusForbidden,
	toolgatetype.CodeSpendLimitExceeded:    http.StatusForbidden,
	toolgatetype.CodeToolNotFound:          http.StatusNotFound,
	toolgatetype.CodeQuoteNotFound:         http.StatusNotFound,
	toolgatetype.CodeExecutionNotFound:     http.StatusNotFound,
	toolgatetype.CodeNotFound:              http.StatusNotFound,
	toolgatetype.CodeQuoteExpired:          http.StatusConflict,
	toolgatetype.CodeQuoteUsed:             http.StatusConflict,
	toolgatetype.CodeQuoteOutdated:         http.StatusConflict,
	toolgatetype.CodeIdempotencyKeyInUse:   http.StatusConflict,
	toolgatetype.CodeInputInvalid:          http.StatusUnprocessableEntity,
	toolgatetype.CodeQuoteToolMismatch:     http.StatusUnprocessableEntity,
	toolgatetype.CodeIdempotencyKeyReused:  http.StatusUnprocessableEntity,
	toolgatetype.CodeRateLimited:           http.StatusTooManyRequests,
	toolgatetype.CodeInternal:              http.StatusInternalServerError,

	toolgatetype.CodeApproverRequired:        http.StatusForbidden,
	toolgatetype.CodeCallerKeyRequired:       http.StatusUnauthorized,
	toolgatetype.CodeApprovalPending:         http.StatusForbidden,
	toolgatetype.CodeApprovalDenied:          http.StatusForbidden,
	toolgatetype.CodeApprovalExpired:         http.StatusConflict,
	toolgatetype.CodeApprovalAlreadyDecided:  http.StatusConflict,
	toolgatetype.CodeApprovalGrantMismatch:   http.StatusUnprocessableEntity,
	toolgatetype.CodeApprovalRequestNotFound: http.StatusNotFound,

	toolgatetype.CodeUpstreamIdentityRequired: http.StatusForbidden,
	toolgatetype.CodeUpstreamAuthFailed:       http.StatusBadGateway,

	toolgatetype.CodeExecutionAlreadyResolved: http.StatusConflict,
	toolgatetype.CodeExecutionNotAmbiguous:    http.StatusConflict,
}

// StatusOf is the HTTP status an error code is answered with: the status
// of each code the API documents, 500 for any other.
func StatusOf(code toolgatetype.Code) int {
	switch code {
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	case CodeInsufficientScope:
		return http.StatusForbidden
	}
	if s, ok := codeStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}
