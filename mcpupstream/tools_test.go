package mcpupstream_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/mcpupstream"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetype"
)

func TestSlug(t *testing.T) {
	for name, want := range map[string]string{
		"read_file":     "files.read-file",
		"Read File":     "files.read-file",
		"get-env":       "files.get-env",
		"x.y":           "files.x-y",
		"Ünïcode":       "files.-n-code",
		"already-ok-42": "files.already-ok-42",
	} {
		require.Equal(t, want, mcpupstream.Slug("files", name), name)
	}
}

func TestServedToolsAreRegistryToolsOnTheOperatorsTerms(t *testing.T) {
	t.Parallel()
	g := gateway(t, nil)
	srv := newUpstream()
	start(t, g.Registry, nil, mcpupstream.Server{
		ID: "up", Transport: inProcess(t, srv.MCP), Address: "in process", TransportName: "memory",
		Provider: mcpupstream.Provider{Name: "Test upstream", TrustTier: "basic"},
		Defaults: mcpupstream.ToolConfig{Capabilities: declared()},
		Tools: map[string]mcpupstream.ToolConfig{
			upstreamtest.WriteNote: {Pricing: perCall("0.0100"), Capabilities: &registry.Capabilities{ReadOnly: registry.Bool(false), WritesExternalData: registry.Bool(true)}},
			upstreamtest.Big:       {Enabled: registry.Bool(false)},
		},
		Include: []string{"*"},
	})
	ctx := context.Background()
	entries, total, err := g.List(ctx, "", 100, 0, toolgatetype.EntryOptions{})
	require.NoError(t, err)
	require.Equal(t, len(upstreamtest.Tools())-1, total, "every tool but the one the operator disabled")
	slugs := map[string]bool{}
	for _, e := range entries {
		slugs[e.Slug] = true
	}
	require.True(t, slugs["up.write-note"] && slugs["up.echo"] && slugs["up.set-description"])
	require.False(t, slugs["up.big"])

	echo, err := g.Entry(ctx, "up.echo", toolgatetype.EntryOptions{})
	require.NoError(t, err)
	require.Equal(t, "Echo", echo.Name, "the upstream's title")
	require.Equal(t, upstreamtest.EchoDescription, echo.Description)
	require.JSONEq(t, `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, string(echo.InputSchema))
	require.Equal(t, "Test upstream", echo.Provider.Name)
	require.Equal(t, "basic", echo.Provider.TrustTier)
	require.NotNil(t, echo.Upstream)
	require.Equal(t, "up", echo.Upstream.Server)
	require.Equal(t, "echo", echo.Upstream.Name)
	require.JSONEq(t, `{"readOnlyHint":true,"idempotentHint":true}`, trimFalseHints(t, echo.Upstream.Claims))
	require.False(t, echo.Upstream.Pinned)
	require.NotNil(t, echo.Version.ManifestDigest)
	require.Equal(t, toolgatetype.RiskLow, echo.Risk.Level, "the operator's capabilities")

	note, err := g.Entry(ctx, "up.write-note", toolgatetype.EntryOptions{})
	require.NoError(t, err)
	require.Equal(t, "Write a note", note.Name)
	require.Equal(t, "0.0100", note.Pricing.Amount)
	require.Equal(t, toolgatetype.RiskHigh, note.Risk.Level, "readOnlyHint claims it reads only; the operator says it writes")
	require.True(t, note.Risk.Capabilities.WritesExternalData)
	require.False(t, note.Risk.Capabilities.OpenWorld, "merged over the defaults field by field")
	require.Contains(t, note.Policy.Reasons, toolgatetype.ReasonPaymentNotVerified, "paid, and the operator verified nothing")
	require.Contains(t, string(note.OutputSchema), `"required":["content"]`, "no output schema upstream: the output is the content blocks")
}

// trimFalseHints drops hints that are false, which the SDK may or may not
// write, so claims compare by what is claimed.
func trimFalseHints(t *testing.T, raw json.RawMessage) string {
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	for k, v := range m {
		if v == false {
			delete(m, k)
		}
	}
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return string(out)
}

func TestUndeclaredCapabilitiesAreUnknownRiskWhateverTheUpstreamClaims(t *testing.T) {
	t.Parallel()
	g := gateway(t, nil)
	start(t, g.Registry, nil, mcpupstream.Server{ID: "up", Transport: inProcess(t, newUpstream().MCP)})
	e, err := g.Entry(context.Background(), "up.echo", toolgatetype.EntryOptions{})
	require.NoError(t, err)
	require.Equal(t, toolgatetype.RiskUnknown, e.Risk.Level)
	require.False(t, e.Risk.Capabilities.Declared)
	require.Contains(t, e.Policy.Reasons, toolgatetype.ReasonCapabilitiesUndeclared)
	require.Equal(t, toolgatetype.RequirementExplicitUnverified, e.Policy.Approval.Requirement)
}

func TestIncludeChoosesTools(t *testing.T) {
	t.Parallel()
	g := gateway(t, nil)
	start(t, g.Registry, nil, mcpupstream.Server{ID: "up", Transport: inProcess(t, newUpstream().MCP), Include: []string{"e*", "fail"}})
	vs, total := g.Registry.List("", 100, 0)
	require.Equal(t, 3, total)
	var slugs []string
	for _, v := range vs {
		slugs = append(slugs, v.Tool.Slug)
	}
	require.ElementsMatch(t, []string{"up.echo", "up.env", "up.fail"}, slugs)
}

func TestTwoNamesOfOneSlugStopTheServer(t *testing.T) {
	t.Parallel()
	g := gateway(t, nil)
	srv := mcp.NewServer(&mcp.Implementation{Name: "clash", Version: "1"}, nil)
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	srv.AddTool(&mcp.Tool{Name: "read_file", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	srv.AddTool(&mcp.Tool{Name: "read-file", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	u := start(t, g.Registry, nil, mcpupstream.Server{ID: "up", Transport: inProcess(t, srv)})
	st := u.Status()[0]
	require.False(t, st.Up)
	require.Contains(t, st.Error, `the tools "read-file" and "read_file" of server up both map to the slug up.read-file`)
	_, total := g.Registry.List("", 10, 0)
	require.Zero(t, total, "none of its tools is served")

	// Served one at a time, the server comes up.
	srv.RemoveTools("read-file")
	eventually(t, "the server to come up", func() bool { return u.Health()["up"] == "up" })
	// A clash appearing while it runs stops it again.
	srv.AddTool(&mcp.Tool{Name: "Read_File", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
	eventually(t, "the server to stop", func() bool { return u.Health()["up"] == "down" })
	_, total = g.Registry.List("", 10, 0)
	require.Zero(t, total)
}
