package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/toolgatetest"
)

// TestApprovalsWalkThroughOffline runs the example against an in-process
// fake of the providers: the agent is refused until the person approves,
// its call then runs once, and the reused grant is refused.
func TestApprovalsWalkThroughOffline(t *testing.T) {
	providers := toolgatetest.NewUpstream()
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, providers))
	text := out.String()

	assert.Regexp(t, `403 approval_required; ask at http://127\.0\.0\.1:\d+/v1/approval-requests`, text)
	assert.Regexp(t, `request [0-9a-f-]{36} is pending; a person decides at http://127\.0\.0\.1:\d+/approvals/[0-9a-f-]{36}`, text)
	assert.Contains(t, text, `waiting: agent wants Earthquake Search (earthquake-search) for $0.0000 with input {"endtime":"2024-09-30","limit":3,"starttime":"2024-09-25"}`)
	assert.Regexp(t, `is approved by pat`, text)
	assert.Regexp(t, `200: execution [0-9a-f-]{36} status=completed`, text)
	assert.Contains(t, text, "422 approval_grant_mismatch: a grant approves one call only")

	ids := regexp.MustCompile(`request ([0-9a-f-]{36})`).FindAllStringSubmatch(text, -1)
	require.Len(t, ids, 3)
	assert.Equal(t, ids[0][1], ids[1][1])
	providers.RequireCalls(t, 1)
}
