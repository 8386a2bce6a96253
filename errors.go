package toolgate

import (
	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/internal/textcheck"
	"github.com/toolgate/toolgate/toolgatetype"
)

func newError(code toolgatetype.Code, format string, args ...any) *toolgatetype.Error {
	return toolgatetype.Errorf(code, format, args...)
}

// internalError hides cause from the caller but keeps it for logs.
func internalError(cause error) *toolgatetype.Error { return executor.Internal(cause) }

// textError refuses a text field no store can keep as sent (a NUL or
// another C0 control character, or bytes that are not UTF-8; see
// textcheck) with invalid_request naming it; nil when s is text.
func textError(field, s string) error {
	if p := textcheck.Problem(s); p != "" {
		return paramError(field, "%s %s", field, p)
	}
	return nil
}
