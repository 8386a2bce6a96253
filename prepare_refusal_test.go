package toolgate_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A call handed to CallPreparedTool that Prepare did not make (nil, as a
// caller that ignored Prepare's error has, or the zero PreparedCall) is
// refused as a bad request, as every refusal of CallTool is an outcome:
// it does not panic.
func TestCallPreparedToolRefusesACallNotPrepared(t *testing.T) {
	e := newEnv(t, []toolSpec{callable})
	for name, p := range map[string]*toolgate.PreparedCall{"nil": nil, "zero": {}} {
		var out *toolgatetype.ToolCallOutcome
		require.NotPanics(t, func() { out = e.gw.CallPreparedTool(context.Background(), p, "k1", nil) }, name)
		require.NotNil(t, out.Refusal, name)
		assert.Equal(t, toolgatetype.CodeInvalidRequest, out.Refusal.Code, name)
	}
}
