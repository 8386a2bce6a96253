package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The program runs the agent embedded and over HTTP, and both runs go the
// same way.
func TestRunsTheSameBothWays(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	embedded, remote, found := strings.Cut(out.String(), "over HTTP, as agent-8:\n")
	require.True(t, found, "%s", out.String())
	embedded = strings.TrimPrefix(embedded, "embedded, as agent-7:\n")
	assert.Equal(t, embedded, remote)
	assert.Contains(t, remote, "step 3: verified-demo-datum-3 (goal achieved: true)")
	assert.Contains(t, remote, "done in 3 steps, spent $0.3300")
	assert.Equal(t, 1, strings.Count(remote, "user: approve goal-data"), "first_use: asked once")
}
