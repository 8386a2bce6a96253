package toolgate_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetype"
)

func TestApprovalModeComesFromTheDirectory(t *testing.T) {
	t.Parallel()
	e := newApproverEnv(t, []toolSpec{callable})
	ctx := context.Background()
	for principal, want := range map[string]toolgatetype.ApprovalMode{
		"agent":  toolgatetype.ApprovalModeApprover,
		"alice":  toolgatetype.ApprovalModeCaller, // pat approves for her, but she is in caller mode
		"nobody": toolgatetype.ApprovalModeCaller,
	} {
		got, err := e.gw.ApprovalMode(ctx, principal)
		require.NoError(t, err)
		assert.Equal(t, want, got, principal)
	}
	_, err := e.gw.ApprovalMode(ctx, "")
	requireCode(t, err, toolgatetype.CodeUnauthorized)

	// A mode the directory made up loosens nothing.
	odd := newEnv(t, []toolSpec{callable}, func(c *toolgate.Config) {
		c.Approvers = toolgate.StaticApprovers{Modes: map[string]toolgatetype.ApprovalMode{"agent": "whoever"}}
	})
	got, err := odd.gw.ApprovalMode(ctx, "agent")
	require.NoError(t, err)
	assert.Equal(t, toolgatetype.ApprovalModeApprover, got)
}

func TestLatestApprovalRequestFindsTheCallsNewest(t *testing.T) {
	t.Parallel()
	store := memory.New()
	e := newEnvWithStore(t, store, []toolSpec{callable}, withApprovers)
	ctx := context.Background()
	lookup := func(principal, input string, status toolgatetype.ApprovalStatus) *toolgatetype.ApprovalRequest {
		t.Helper()
		r, err := e.gw.LatestApprovalRequest(ctx, principal, toolgate.ApprovalLookup{Tool: "echo", Input: json.RawMessage(input), Status: status})
		require.NoError(t, err)
		return r
	}
	assert.Nil(t, lookup("agent", `{"v":"hi"}`, toolgatetype.ApprovalStatusAll), "none asked yet")

	_, first := e.ask("agent", "echo", "hi")
	e.clock.Advance(time.Second)
	_, second := e.ask("agent", "echo", "hi")
	e.clock.Advance(time.Second)
	e.ask("agent", "echo", "another input")
	e.ask("other", "echo", "hi")
	e.approve(first.ID, "")

	// The same input, however it is spaced or ordered.
	got := lookup("agent", "{ \"v\" :\n\"hi\" }", toolgatetype.ApprovalStatusAll)
	require.NotNil(t, got)
	assert.Equal(t, second.ID, got.ID, "the newest of the call's requests")
	assert.Equal(t, toolgatetype.ApprovalStatusPending, got.Status)
	assert.Equal(t, first.ID, lookup("agent", `{"v":"hi"}`, toolgatetype.ApprovalStatusApproved).ID)
	assert.Equal(t, second.ID, lookup("agent", `{"v":"hi"}`, "").ID, `"" means pending, as in listings`)
	assert.Nil(t, lookup("agent", `{"v":"hi"}`, toolgatetype.ApprovalStatusDenied))
	assert.Nil(t, lookup("alice", `{"v":"hi"}`, toolgatetype.ApprovalStatusAll), "another principal's requests are not hers")

	// Another gateway on the same store finds it: nothing lives in process memory.
	twin := newEnvWithStore(t, store, []toolSpec{callable}, withApprovers)
	twin.clock.Set(e.clock.Now())
	r, err := twin.gw.LatestApprovalRequest(ctx, "agent", toolgate.ApprovalLookup{Tool: "echo", Input: json.RawMessage(`{"v":"hi"}`), Status: toolgatetype.ApprovalStatusAll})
	require.NoError(t, err)
	require.NotNil(t, r)
	assert.Equal(t, second.ID, r.ID)

	// Past the request's expiry it is shown as expired.
	e.clock.Advance(toolgate.DefaultApprovalTTL)
	assert.Equal(t, toolgatetype.ApprovalStatusExpired, lookup("agent", `{"v":"hi"}`, toolgatetype.ApprovalStatusAll).Status)
	assert.Nil(t, lookup("agent", `{"v":"hi"}`, toolgatetype.ApprovalStatusPending))

	for _, c := range []struct {
		name      string
		principal string
		lookup    toolgate.ApprovalLookup
		code      toolgatetype.Code
	}{
		{"NoPrincipal", "", toolgate.ApprovalLookup{Tool: "echo", Input: json.RawMessage(`{}`)}, toolgatetype.CodeUnauthorized},
		{"UnknownTool", "agent", toolgate.ApprovalLookup{Tool: "nope", Input: json.RawMessage(`{}`)}, toolgatetype.CodeToolNotFound},
		{"NoInput", "agent", toolgate.ApprovalLookup{Tool: "echo"}, toolgatetype.CodeInvalidRequest},
		{"NotJSON", "agent", toolgate.ApprovalLookup{Tool: "echo", Input: json.RawMessage(`{`)}, toolgatetype.CodeInvalidRequest},
		{"UnknownStatus", "agent", toolgate.ApprovalLookup{Tool: "echo", Input: json.RawMessage(`{}`), Status: "maybe"}, toolgatetype.CodeInvalidRequest},
	} {
		_, err := e.gw.LatestApprovalRequest(ctx, c.principal, c.lookup)
		requireCode(t, err, c.code)
	}
}
