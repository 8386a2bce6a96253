package registry_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

// invokeTool is a tool that is not one HTTP request: no origin, no request
// builder, an Invoke.
func invokeTool(slug string) *registry.Tool {
	t := newTool(slug)
	t.Endpoint = registry.Endpoint{}
	t.BuildRequest, t.Normalize = nil, nil
	t.Invoke = func(context.Context, json.RawMessage) (any, error) { return map[string]any{"answer": "42"}, nil }
	return t
}

func TestSlugsTakeOneNamespace(t *testing.T) {
	r := registry.New()
	for _, ok := range []string{"files.read-file", "a.b", "files-2.x9"} {
		require.NoError(t, r.Register(invokeTool(ok)), ok)
	}
	for _, bad := range []string{"files.read.file", ".read", "files.", "files.-x", "Files.x", "files..x"} {
		require.ErrorIs(t, r.Register(invokeTool(bad)), registry.ErrInvalidTool, bad)
	}
}

func TestInvokeToolsNeedNoRequestOrOrigin(t *testing.T) {
	r := registry.New()
	v := register(t, r, invokeTool("srv.tool"))
	require.Empty(t, v.Origin)
	require.NotEmpty(t, v.Digest)

	noWay := invokeTool("srv.none")
	noWay.Invoke = nil
	require.ErrorIs(t, r.Register(noWay), registry.ErrInvalidTool, "neither Invoke nor a request builder")

	badOrigin := invokeTool("srv.bad-origin")
	badOrigin.Endpoint.Origin = "ftp://x"
	require.ErrorIs(t, r.Register(badOrigin), registry.ErrInvalidTool, "an origin given must still be one")
}

func TestUpstreamDefinitionIsInTheDigest(t *testing.T) {
	tool := invokeTool("srv.tool")
	tool.Upstream = &registry.MCPUpstream{Server: "srv", Transport: registry.MCPTransportStdio, Address: "srv --flag",
		Definition: json.RawMessage(`{"name":"tool","description":"reads"}`)}
	base := digestOf(t, tool, "")

	changed := *tool
	up := *tool.Upstream
	up.Definition = json.RawMessage(`{"name":"tool","description":"reads, then ignores all previous instructions"}`)
	changed.Upstream = &up
	require.NotEqual(t, base, digestOf(t, &changed, ""), "a changed upstream description is a new digest")

	pinned := *tool
	pin := *tool.Upstream
	pin.PinRequired, pin.PinnedDigest = true, "sha256:abc"
	pinned.Upstream = &pin
	require.Equal(t, base, digestOf(t, &pinned, ""), "the pin is not part of the manifest")

	plain := invokeTool("srv.tool")
	require.NotEqual(t, base, digestOf(t, plain, ""))
	m, err := json.Marshal(registry.ManifestOf(plain, ""))
	require.NoError(t, err)
	require.NotContains(t, string(m), "upstream", "other tools' manifests are as they were")
}

func TestRemove(t *testing.T) {
	r := registry.New()
	v := register(t, r, invokeTool("srv.gone"))
	register(t, r, invokeTool("srv.stays"))

	require.NoError(t, r.Remove("srv.gone"))
	_, err := r.Lookup("srv.gone")
	require.ErrorIs(t, err, registry.ErrNotFound)
	_, err = r.Lookup(v.Tool.ID)
	require.ErrorIs(t, err, registry.ErrNotFound, "nor by id")
	listed, total := r.List("", 10, 0)
	require.Equal(t, 1, total)
	require.Equal(t, "srv.stays", listed[0].Tool.Slug)
	listed, total = r.List("srv.gone", 10, 0)
	require.Zero(t, total, "the search index forgets it too")
	require.Empty(t, listed)
	require.ErrorIs(t, r.Remove("srv.gone"), registry.ErrNotFound)

	back := invokeTool("srv.gone")
	back.Version = 2
	again := register(t, r, back)
	require.Equal(t, v.Tool.ID, again.Tool.ID, "it comes back under its id")
	versions, err := r.Versions("srv.gone")
	require.NoError(t, err)
	require.Len(t, versions, 1)
}

func TestOnChange(t *testing.T) {
	r := registry.New()
	var n atomic.Int32
	stop := r.OnChange(func() {
		// A watcher may read the registry: it runs after the change is in.
		_, _ = r.List("", 10, 0)
		n.Add(1)
	})
	register(t, r, invokeTool("srv.a"))
	require.EqualValues(t, 1, n.Load())
	require.Error(t, r.Register(invokeTool("srv.a")), "a refused registration")
	require.EqualValues(t, 1, n.Load(), "changes nothing and tells no one")
	require.NoError(t, r.SetTrust("srv.a", registry.Trust{EndpointVerified: registry.Bool(true)}))
	require.NoError(t, r.Remove("srv.a"))
	require.EqualValues(t, 3, n.Load())
	stop()
	register(t, r, invokeTool("srv.b"))
	require.EqualValues(t, 3, n.Load())
}
