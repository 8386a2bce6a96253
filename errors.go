package toolgate

import (
	"github.com/toolgate/toolgate/toolgatetype"
)

func newError(code toolgatetype.Code, format string, args ...any) *toolgatetype.Error {
	return toolgatetype.Errorf(code, format, args...)
}

// internalError hides cause from the caller but keeps it for logs.
func internalError(cause error) *toolgatetype.Error {
	return &toolgatetype.Error{Code: toolgatetype.CodeInternal, Message: "the gateway could not complete the request", Err: cause}
}
