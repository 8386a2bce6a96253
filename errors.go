package toolgate

import (
	"github.com/toolgate/toolgate/internal/executor"
	"github.com/toolgate/toolgate/toolgatetype"
)

func newError(code toolgatetype.Code, format string, args ...any) *toolgatetype.Error {
	return toolgatetype.Errorf(code, format, args...)
}

// internalError hides cause from the caller but keeps it for logs.
func internalError(cause error) *toolgatetype.Error { return executor.Internal(cause) }
