package mcpserver

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolsChangedSignal names a tool the server only ever adds: each time it
// is added, the SDK tells every session that the tools changed
// (notifications/tools/list_changed, debounced). It is no slug, so no
// tools/call ever reaches it (see route), and tools/list never shows it.
const toolsChangedSignal = "_toolgate.tools-changed"

// watchRegistry tells the server's sessions each time the gateway's
// registry changes (a tool registered, changed or removed, say by an
// upstream MCP server), so that their clients list the tools again. stop
// ends it.
func (g *gateway) watchRegistry() (stop func()) {
	signal := &mcp.Tool{Name: toolsChangedSignal, InputSchema: anyObject}
	return g.gw.Registry().OnChange(func() { g.mcp.AddTool(signal, noCall) })
}

func noCall(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, errors.New("not a tool")
}
