package mcpserver

import (
	"encoding/json"
	"math"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolgate/toolgate/registry"
)

// sdkTools keeps the *mcp.Server's tools the registry's: every registered
// tool, by slug, with its input schema, added and removed through the SDK
// as the registry changes. The SDK dispatches each tools/call to the tool
// it names (an unknown name is its invalid params), and tells the server's
// sessions each time the set changes (notifications/tools/list_changed,
// debounced).
//
// Tools the server lists not (one that cannot be called, one a principal's
// spend controls block) are added too: calling one is a tool error that
// says why, which only the gateway can answer. That is why tools/list is
// answered by listTools rather than the SDK, which lists every tool it can
// dispatch to.
type sdkTools struct {
	mu sync.Mutex
	// added is the version each slug was added to the SDK as; a registry
	// change replaces the version of what it changes, so a version other
	// than this one is a tool to add again.
	added map[string]*registry.Version
}

// syncTools adds to the SDK the registry's tools it does not have as they
// are now, and removes those the registry no longer has. It runs once when
// the server is made and then after each registry change, on the goroutine
// that made it, so a tool registered is callable as soon as Register
// returns.
func (g *gateway) syncTools() {
	t := &g.tools
	t.mu.Lock()
	defer t.mu.Unlock()
	// Listed under the lock, so that of two changes syncing at once the
	// later sees the later registry.
	versions, _ := g.gw.Registry().List("", math.MaxInt, 0)
	current := make(map[string]bool, len(versions))
	for _, v := range versions {
		slug := v.Tool.Slug
		current[slug] = true
		if t.added[slug] == v {
			continue
		}
		g.addTool(v)
		t.added[slug] = v
	}
	var gone []string
	for slug := range t.added {
		if !current[slug] {
			gone = append(gone, slug)
			delete(t.added, slug)
		}
	}
	if len(gone) > 0 {
		g.mcp.RemoveTools(gone...)
	}
}

// addTool adds version v's tool to the SDK, with callTool to answer it.
// The SDK takes an input schema whose type is "object" only, and checks
// the x-mcp-header annotations in it; a schema it refuses, which a tool
// may have (registry schemas are any JSON Schema object), is replaced in
// the SDK's copy by one taking any object. The SDK's copy routes calls
// only: the arguments are checked by the gateway against the tool's own
// schema, and listTools lists the registry's.
func (g *gateway) addTool(v *registry.Version) {
	slug := v.Tool.Slug
	if schema := v.Tool.InputSchema; objectSchema(schema) && addedTool(g.mcp, &mcp.Tool{Name: slug, InputSchema: schema}, g.callTool) {
		return
	}
	g.log.Warn("the SDK refuses a tool's input schema; its calls are routed under a schema taking any object", "tool", slug)
	g.mcp.AddTool(&mcp.Tool{Name: slug, InputSchema: anyObject}, g.callTool)
}

// anyObject is the input schema taking any object.
var anyObject = json.RawMessage(`{"type":"object"}`)

// objectSchema reports whether schema declares the type "object", the
// only input schema the SDK takes.
func objectSchema(schema json.RawMessage) bool {
	var s struct {
		Type any `json:"type"`
	}
	return json.Unmarshal(schema, &s) == nil && s.Type == "object"
}

// addedTool adds t to server, reporting false when the SDK refuses it,
// which it does by panicking.
func addedTool(server *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	server.AddTool(t, h)
	return true
}

// registered reports whether name is the slug of a tool the SDK routes
// calls to: a registered tool's, as of the last registry change.
func (g *gateway) registered(name string) bool {
	g.tools.mu.Lock()
	defer g.tools.mu.Unlock()
	_, ok := g.tools.added[name]
	return ok
}
