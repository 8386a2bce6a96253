package httpx

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/toolgate/toolgate/toolgatetype"
)

// Errorf builds a gateway error for a condition the HTTP layer detects.
func Errorf(code toolgatetype.Code, format string, args ...any) *toolgatetype.Error {
	return &toolgatetype.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WriteError answers with err's code, status and details. Anything that is
// not a *toolgatetype.Error is an internal error: logged to log, never
// shown.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var te *toolgatetype.Error
	if !errors.As(err, &te) {
		te = &toolgatetype.Error{Code: toolgatetype.CodeInternal, Err: err}
	}
	status := StatusOf(te.Code)
	if te.Code == toolgatetype.CodeInternal {
		log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "error", te.Err)
		te = &toolgatetype.Error{Code: toolgatetype.CodeInternal, Message: "the gateway could not complete the request"}
	}
	d := toolgatetype.ErrorDetail{
		Code:                te.Code,
		Message:             te.Message,
		Details:             te.Details,
		Violations:          te.Violations,
		Budget:              te.Budget,
		ApprovalRequirement: te.ApprovalRequirement,
		ManifestDigest:      te.ManifestDigest,
		Reasons:             te.Reasons,
		Parameter:           te.Parameter,
	}
	if te.GrantRequired {
		// The caller's calls need an approver's grant: say where to ask.
		d.ApprovalRequestsURL = BaseURL(r) + ApprovalRequestsPath
		VaryOnForwarded(w)
	}
	switch te.Code {
	case toolgatetype.CodeUnauthorized, toolgatetype.CodeCallerKeyRequired:
		// A handler that accepts access tokens has set its own challenge.
		if w.Header().Get("WWW-Authenticate") == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate"`)
		}
	case toolgatetype.CodeRateLimited, toolgatetype.CodeIdempotencyKeyInUse:
		if te.Code == toolgatetype.CodeIdempotencyKeyInUse && te.RetryAfter <= 0 {
			break // the lease of the run holding the key is not known
		}
		secs := int(te.RetryAfter.Seconds())
		if secs < 1 {
			secs = 1
		}
		d.RetryAfterSeconds = secs
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	WriteJSON(w, status, toolgatetype.ErrorBody{Error: d})
}
