package mcpupstream

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// Servers speaking MCP before 2026-07-28 send their requests back as
// requests of their own (servers speaking it later, inside a call's answer:
// see the ask_roots tool in the package's tests); either way the gateway
// gives them nothing.
func TestRequestsBackAreRefused(t *testing.T) {
	reached := false
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) { reached = true; return nil, nil }
	h := refuseRequestsBack(next)
	for _, method := range []string{"sampling/createMessage", "elicitation/create", "roots/list"} {
		_, err := h(context.Background(), method, nil)
		var rpc *jsonrpc.Error
		require.True(t, errors.As(err, &rpc), method)
		require.Equal(t, int64(jsonrpc.CodeMethodNotFound), rpc.Code)
	}
	require.False(t, reached)
	_, err := h(context.Background(), "notifications/tools/list_changed", nil)
	require.NoError(t, err)
	require.True(t, reached, "notifications pass")
}
