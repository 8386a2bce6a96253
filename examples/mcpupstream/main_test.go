package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGatingAnMCPServer runs the example: the tool of a real MCP server is
// priced and listed, the agent's copied digest is refused without opening
// a ticket, the approved call opens one, and the retry opens none.
func TestGatingAnMCPServer(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	text := out.String()
	assert.Contains(t, text, `1. The registry serves tickets.open-ticket ("Open a ticket" from MCP server tickets, tool open_ticket): $0.0500 a call, risk high, approval per_call`)
	assert.Regexp(t, `2\. The agent's quote: \$0\.0550 \(\$0\.0500 and a \$0\.0050 fee\), version sha256:[0-9a-f]{64}`, text)
	assert.Contains(t, text, "3. Called with the digest it copied: refused, approval_required; tickets opened: 0")
	assert.Regexp(t, `4\. The agent asks; pat approves request [0-9a-f-]{36}`, text)
	assert.Contains(t, text, `5. Called with the grant: completed, output {"id":"T-1001"}, charged $0.0550; tickets opened: 1`)
	assert.Contains(t, text, "6. The agent retries with the same Idempotency-Key: replayed=true, the same execution=true; tickets opened: 1")
	assert.Contains(t, text, "7. The agent's spend: $0.0550")
}
