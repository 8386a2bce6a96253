package mcpupstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/upstreamtest"
	"github.com/toolgate/toolgate/mcpupstream"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetest"
	"github.com/toolgate/toolgate/toolgatetype"
)

// upstreamGateway is a gateway over the in-process test server, every tool
// declared read-only and priced at 0.0100 with the operator's trust.
func upstreamGateway(t *testing.T, cfg *toolgate.Config) (*toolgatetest.Gateway, *upstreamtest.Server) {
	t.Helper()
	g := gateway(t, cfg)
	srv := newUpstream()
	start(t, g.Registry, nil, mcpupstream.Server{
		ID: "up", Transport: inProcess(t, srv.MCP),
		Defaults: mcpupstream.ToolConfig{Capabilities: declared(), Pricing: perCall("0.0100"), Trust: verified()},
		Tools: map[string]mcpupstream.ToolConfig{
			// It writes, whatever it claims: every call needs an approval.
			upstreamtest.WriteNote: {Capabilities: &registry.Capabilities{ReadOnly: registry.Bool(false), WritesExternalData: registry.Bool(true)}},
		},
	})
	return g, srv
}

func TestResultsBecomeExecutions(t *testing.T) {
	t.Parallel()
	g, srv := upstreamGateway(t, nil)

	res, err := call(t, g, "up.echo", `{"text":"hi <there> & you"}`)
	out := toolgatetest.RequireCompleted(t, res, err, "0.0110")
	require.JSONEq(t, `{"text":"hi <there> & you"}`, string(out), "structuredContent is the output")

	res, err = call(t, g, "up.blocks", `{}`)
	out = toolgatetest.RequireCompleted(t, res, err, "0.0110")
	require.JSONEq(t, `{"content":[{"type":"text","text":"a picture:"},{"type":"image","data":"iVBORw==","mimeType":"image/png"}]}`, string(out),
		"no structuredContent: the content blocks as MCP shapes them")

	res, err = call(t, g, "up.untyped", `{}`)
	out = toolgatetest.RequireCompleted(t, res, err, "0.0110")
	require.JSONEq(t, `{"anything":[1,2]}`, string(out), "structuredContent, though no schema says its shape")

	res, err = call(t, g, "up.fail", `{}`)
	toolgatetest.RequireFailed(t, res, err, registry.CodeUpstreamError)
	require.Contains(t, res.Execution.Error.Message, "provider message: disk full at /srv/data", "the upstream's text, labelled as the provider's")

	res, err = call(t, g, "up.bad-output", `{}`)
	toolgatetest.RequireFailed(t, res, err, registry.CodeOutputInvalid)
	require.Contains(t, res.Execution.Error.Message, "output.n")

	res, err = call(t, g, "up.big", `{"bytes":1100000}`)
	toolgatetest.RequireFailed(t, res, err, registry.CodeUpstreamTooLarge)
	require.Contains(t, res.Execution.Error.Message, "1 MiB")

	res, err = call(t, g, "up.ask-roots", `{}`)
	toolgatetest.RequireFailed(t, res, err, registry.CodeUpstreamError)
	require.Contains(t, res.Execution.Error.Message, "gives none")
	require.Equal(t, 1, srv.Runs(upstreamtest.AskRoots), "asked once; the call was not sent again")

	res, err = call(t, g, "up.echo", `{"text":42}`)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeInputInvalid)
	require.Nil(t, res)
	require.Equal(t, 1, srv.Runs(upstreamtest.Echo), "an input against the upstream's schema never reaches it")

	// Only the completed calls were charged: echo, blocks and untyped.
	g.RequireSpent(t, "alice", "0.0330")
}

func TestResultsOver4MiBFail(t *testing.T) {
	t.Parallel()
	g, _ := upstreamGateway(t, nil)
	res, err := call(t, g, "up.big", `{"bytes":1000000,"blocks":4}`)
	toolgatetest.RequireCompleted(t, res, err, "0.0110")
	res, err = call(t, g, "up.big", `{"bytes":1000000,"blocks":5}`)
	toolgatetest.RequireFailed(t, res, err, registry.CodeUpstreamTooLarge)
	require.Contains(t, res.Execution.Error.Message, "more than 4 MiB")
	g.RequireSpent(t, "alice", "0.0110")
}

func TestDuplicateCallsRunOnceAndChargeOnce(t *testing.T) {
	t.Parallel()
	g, srv := upstreamGateway(t, nil)
	q := g.MustQuote(t, "alice", "up.write-note")
	req := toolgatetype.CallRequest{Tool: "up.write-note", QuoteID: q.Quote.ID, Input: json.RawMessage(`{"note":"once"}`),
		IdempotencyKey: "one-key", ApprovalDigest: *q.Quote.ManifestDigest}
	const n = 50
	var wg sync.WaitGroup
	results := make([]*toolgatetype.CallResult, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = g.Call(context.Background(), "alice", req)
		}()
	}
	close(start)
	wg.Wait()
	var ids = map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			// A duplicate arriving while the first runs is told to retry.
			toolgatetest.RequireCode(t, errs[i], toolgatetype.CodeIdempotencyKeyInUse)
			continue
		}
		require.Equal(t, toolgatetype.StatusCompleted, results[i].Execution.Status)
		ids[results[i].Execution.ID] = true
	}
	require.Len(t, ids, 1, "one execution")
	require.Equal(t, 1, srv.Runs(upstreamtest.WriteNote), "the upstream ran it once")
	g.RequireSpent(t, "alice", "0.0110")
	// A retry now replays the one result.
	res, err := g.Call(context.Background(), "alice", req)
	require.NoError(t, err)
	require.True(t, res.Replayed)
	require.Equal(t, 1, srv.Runs(upstreamtest.WriteNote))
}

func TestSpendControlsRefuseBeforeTheUpstream(t *testing.T) {
	t.Parallel()
	limit := decimal.RequireFromString("0.0050")
	g, srv := upstreamGateway(t, &toolgate.Config{SpendControls: toolgatetype.StaticSpendControls{
		"alice": {MaxPerCallUSD: &limit},
	}})
	res, err := call(t, g, "up.write-note", `{"note":"too dear"}`)
	require.Nil(t, res)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeSpendLimitExceeded)
	require.Zero(t, srv.Runs(upstreamtest.WriteNote), "a refused call never reaches the upstream")
	g.RequireSpent(t, "alice", "0.0000")
}

func TestApproverModeReachesTheUpstreamOnlyOnceApproved(t *testing.T) {
	t.Parallel()
	g, srv := upstreamGateway(t, &toolgate.Config{Approvers: toolgatetype.StaticApprovers{
		Modes:     map[string]toolgatetype.ApprovalMode{"alice": toolgatetype.ApprovalModeApprover},
		Approvers: map[string][]string{"pat": {"alice"}},
	}})
	ctx := context.Background()
	input := json.RawMessage(`{"note":"needs a person"}`)
	q := g.MustQuote(t, "alice", "up.write-note")
	req := toolgatetype.CallRequest{Tool: "up.write-note", QuoteID: q.Quote.ID, Input: input, IdempotencyKey: "k1",
		ApprovalDigest: *q.Quote.ManifestDigest}

	_, err := g.Call(ctx, "alice", req)
	e := toolgatetest.RequireCode(t, err, toolgatetype.CodeApprovalRequired)
	require.True(t, e.GrantRequired, "the digest the agent copied approves nothing")
	require.Zero(t, srv.Runs(upstreamtest.WriteNote))

	ar, err := g.RequestApproval(ctx, "alice", toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: input})
	require.NoError(t, err)
	req.ApprovalGrant = ar.ID
	_, err = g.Call(ctx, "alice", req)
	toolgatetest.RequireCode(t, err, toolgatetype.CodeApprovalPending)
	require.Zero(t, srv.Runs(upstreamtest.WriteNote), "pending: still not reached")

	_, err = g.DecideApproval(ctx, "pat", ar.ID, toolgatetype.Decision{Approve: true})
	require.NoError(t, err)
	res, err := g.Call(ctx, "alice", req)
	out := toolgatetest.RequireCompleted(t, res, err, "0.0110")
	require.Contains(t, string(out), "saved: needs a person")
	require.Equal(t, 1, srv.Runs(upstreamtest.WriteNote), "reached once a person approved")
}

func TestUpstreamJSONRPCErrorFails(t *testing.T) {
	t.Parallel()
	g, srv := upstreamGateway(t, nil)
	q := g.MustQuote(t, "alice", "up.echo")
	// The upstream stops serving echo between the quote and the call.
	srv.MCP.RemoveTools(upstreamtest.Echo)
	res, err := g.Call(context.Background(), "alice", toolgatetype.CallRequest{Tool: "up.echo", QuoteID: q.Quote.ID,
		Input: json.RawMessage(`{"text":"x"}`), IdempotencyKey: "k", ApprovalDigest: *q.Quote.ManifestDigest})
	if err != nil {
		// The registry already heard it is gone.
		toolgatetest.RequireCode(t, err, toolgatetype.CodeToolNotFound)
		return
	}
	toolgatetest.RequireFailed(t, res, err, registry.CodeUpstreamError)
	require.True(t, strings.HasPrefix(res.Execution.Error.Message, "the MCP server up refused the call"), res.Execution.Error.Message)
	g.RequireSpent(t, "alice", "0.0000")
}

func ExampleSlug() {
	fmt.Println(mcpupstream.Slug("files", "read_file"))
	// Output: files.read-file
}
