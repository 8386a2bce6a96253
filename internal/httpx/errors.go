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
	noteRefusal(r, te)
	if te.Code == toolgatetype.CodeInternal {
		log.ErrorContext(r.Context(), "internal error", "method", r.Method, "path", r.URL.Path, "error", te.Err)
	}
	body := toolgatetype.BodyOf(te)
	if te.GrantRequired {
		// The caller's calls need an approver's grant: say where to ask.
		body.Error.ApprovalRequestsURL = BaseURL(r) + ApprovalRequestsPath
		VaryOnForwarded(w)
	}
	switch te.Code {
	case toolgatetype.CodeUnauthorized, toolgatetype.CodeCallerKeyRequired:
		// A handler that accepts access tokens has set its own challenge.
		if w.Header().Get("WWW-Authenticate") == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolgate"`)
		}
	case toolgatetype.CodeRateLimited, toolgatetype.CodeIdempotencyKeyInUse:
		// A key in use says when the lease of the run holding it ends,
		// when that is known.
		if body.Error.RetryAfterSeconds > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(body.Error.RetryAfterSeconds))
		}
	}
	WriteJSON(w, status, body)
}
