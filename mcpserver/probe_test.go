package mcpserver_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/probe"
	"github.com/toolgate/toolgate/toolgatetest"
)

// One tools/call asks the gateway once, at either revision over streamable
// HTTP (2026-07-28 stateless, 2025-11-25 in a session): its tool is looked
// up in the registry once, its arguments put in canonical form once and
// validated against the tool's input schema once, by the gateway; the
// server routes the call by the SDK's own tools and checks nothing itself.
// Not parallel: the counts are the process's.
func TestACallPreparesItsToolOnce(t *testing.T) {
	gw := toolgatetest.New(t, nil)
	url, _, _ := mcpHTTP(t, gw)
	meta := mcp.Meta{"toolgate/approval": digestOf(t, gw, "echo")}
	for _, version := range []string{"", legacyProtocol} {
		transport := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{aliceKey, http.DefaultTransport}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-agent", Version: "1"}, nil).
			Connect(context.Background(), transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
		require.NoError(t, err)

		stop := probe.Start()
		res := call(t, cs, "echo", `{"v":"once"}`, meta)
		counts := stop()
		assert.JSONEq(t, `{"value":"once"}`, requireCompleted(t, res))
		assert.Equal(t, probe.Counts{Lookups: 1, Canonicalizations: 1, InputValidations: 1}, counts, "protocol %q", version)
		require.NoError(t, cs.Close())
	}
}
