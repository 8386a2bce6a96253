package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
)

// errorBody is the body of every non-success response:
// {"error": {"code", "message", ...details}}.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code                toolgate.Code         `json:"code"`
	Message             string                `json:"message"`
	Details             []registry.FieldError `json:"details,omitempty"`
	Violations          []string              `json:"violations,omitempty"`
	RetryAfterSeconds   int                   `json:"retryAfterSeconds,omitempty"`
	ApprovalRequirement toolgate.Requirement  `json:"approvalRequirement,omitempty"`
	ManifestDigest      *string               `json:"manifestDigest,omitempty"`
	Reasons             []string              `json:"reasons,omitempty"`
	Parameter           string                `json:"parameter,omitempty"`
	ApprovalRequestsURL string                `json:"approvalRequestsUrl,omitempty"`
}

// apiError builds a gateway error for a condition the HTTP layer detects.
func apiError(code toolgate.Code, format string, args ...any) *toolgate.Error {
	return &toolgate.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// writeError answers with err's code, status and details. Anything that is
// not a *toolgate.Error is an internal error: logged, never shown.
func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var te *toolgate.Error
	if !errors.As(err, &te) {
		te = &toolgate.Error{Code: toolgate.CodeInternal, Err: err}
	}
	status := statusOf(te.Code)
	if te.Code == toolgate.CodeInternal {
		h.log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "error", te.Err)
		te = &toolgate.Error{Code: toolgate.CodeInternal, Message: "the gateway could not complete the request"}
	}
	d := errorDetail{
		Code:                te.Code,
		Message:             te.Message,
		Details:             te.Details,
		Violations:          te.Violations,
		ApprovalRequirement: te.ApprovalRequirement,
		ManifestDigest:      te.ManifestDigest,
		Reasons:             te.Reasons,
		Parameter:           te.Parameter,
	}
	if te.GrantRequired {
		// The caller's calls need an approver's grant: say where to ask.
		d.ApprovalRequestsURL = baseURL(r) + approvalRequestsPath
		varyOnForwarded(w)
	}
	switch te.Code {
	case toolgate.CodeUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate"`)
	case toolgate.CodeRateLimited:
		secs := int(te.RetryAfter.Seconds())
		if secs < 1 {
			secs = 1
		}
		d.RetryAfterSeconds = secs
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	writeJSON(w, status, errorBody{Error: d})
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"internal_error","message":"the gateway could not encode its answer"}}`)
	}
	writeRaw(w, status, body)
}

// writeRaw answers with a JSON body as it is.
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// DecodeError reads an error answer of the API back into the
// *toolgate.Error it was written from, for clients: the code (any code,
// including ones this version does not know), the message and every
// detail, with the retry-after from retryAfterSeconds or else the
// Retry-After header. ok is false when body is not the API's error shape,
// as when a proxy answered instead.
func DecodeError(header http.Header, body []byte) (te *toolgate.Error, ok bool) {
	var b errorBody
	if err := json.Unmarshal(body, &b); err != nil || b.Error.Code == "" {
		return nil, false
	}
	d := b.Error
	te = &toolgate.Error{
		Code:                d.Code,
		Message:             d.Message,
		Details:             d.Details,
		Violations:          d.Violations,
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
