package mcpserver_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// A tools/call whose first run died with its request at a provider that is
// not retry-safe is, once retried after the run's lease, a tool error that
// says the outcome is unknown, not to call again, and which execution an
// approver resolves; the provider is not called a second time.
func TestAnAmbiguousCallIsAToolErrorThatSaysNotToRetry(t *testing.T) {
	t.Parallel()
	store := toolgatetest.NewDyingStore(memory.New())
	gw := toolgatetest.New(t, &toolgatetest.Options{Store: store, Tools: []*registry.Tool{paidEcho()}})
	notSafe := false
	require.NoError(t, gw.Registry.SetTrust("paid-echo", registry.Trust{RetrySafe: &notSafe}))
	cs := connect(t, gw, "alice", client{})
	meta := mcp.Meta{"toolgate/approval": digestOf(t, gw, "paid-echo"), "toolgate/idempotencyKey": "ticket-1"}

	first := call(t, cs, "paid-echo", `{"v":"x"}`, meta)
	require.True(t, first.IsError)
	store.Dying.Store(false)
	gw.Clock.Advance(toolgate.DefaultIdempotencyLease + toolgate.DefaultQuoteTTL)

	res := call(t, cs, "paid-echo", `{"v":"x"}`, meta)
	msg := requireToolError(t, res, toolgatetype.CodeOutcomeUnknown)
	id := executionID(t, res)
	assert.Contains(t, msg, "Do not call it again")
	assert.Contains(t, msg, id)
	assert.NotContains(t, msg, "paid-echo failed", "never called failed")
	assert.Nil(t, res.StructuredContent)
	gw.Upstream.RequireCalls(t, 1)

	again := call(t, cs, "paid-echo", `{"v":"x"}`, meta)
	assert.Equal(t, msg, requireToolError(t, again, toolgatetype.CodeOutcomeUnknown), "the same answer, from the record")
	gw.Upstream.RequireCalls(t, 1)
}
