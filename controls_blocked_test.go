package toolgate_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

func TestBlockedToolsLayersOperatorAndCallerControls(t *testing.T) {
	t.Parallel()
	no, yes := registry.Bool(false), registry.Bool(true)
	gw := toolgatetest.New(t, &toolgatetest.Options{Config: &toolgate.Config{SpendControls: toolgatetype.StaticSpendControls{
		"alice": {Tools: map[string]toolgatetype.ToolSpendControls{"echo": {Allowed: no}, "exchange-rates": {Allowed: yes}}},
	}}})
	ctx := context.Background()
	// alice cannot allow what the operator blocks, and can block more.
	require.NoError(t, gw.SetSpendControls(ctx, "alice", toolgatetype.SpendControls{Tools: map[string]toolgatetype.ToolSpendControls{
		"echo": {Allowed: yes}, "public-holidays": {Allowed: no}}}))

	blocked, err := gw.BlockedTools(ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"echo": true, "public-holidays": true}, blocked)
	blocked, err = gw.BlockedTools(ctx, "bob")
	require.NoError(t, err)
	assert.Empty(t, blocked)

	// What the list leaves out is what a call is refused.
	_, err = gw.CallApproved(t, "alice", "echo", `{"v":"x"}`)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeSpendLimitExceeded)
	res, err := gw.CallApproved(t, "alice", "exchange-rates", `{"base":"USD","quotes":"EUR"}`)
	toolgatetest.RequireCompleted(t, res, err, "0.0000")
}
