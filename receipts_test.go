package toolgate_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/internal/jcs"
	"github.com/toolgate/toolgate/receipt"
	"github.com/toolgate/toolgate/toolgatetype"
)

// chainOf reads principal's whole chain from gw and verifies it with gw's
// published keys.
func chainOf(t *testing.T, gw *toolgate.Gateway, principal string) []toolgatetype.SignedReceipt {
	t.Helper()
	v, err := receipt.NewVerifier(gw.ReceiptKeys())
	require.NoError(t, err)
	var out []toolgatetype.SignedReceipt
	after := int64(0)
	for {
		page, err := gw.Receipts(context.Background(), principal, after, 2)
		require.NoError(t, err)
		for _, raw := range page.Receipts {
			require.NoError(t, v.Add(raw))
			var s toolgatetype.SignedReceipt
			require.NoError(t, json.Unmarshal(raw, &s))
			out = append(out, s)
		}
		if page.Next == nil {
			return out
		}
		after = *page.Next
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestEveryCallHasASignedReceipt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{paidCallable})
	ctx := context.Background()
	var results []*toolgatetype.CallResult
	for i, v := range []string{"one", "two", "three"} {
		q := e.quote("alice", "paid")
		res, err := e.gw.Call(ctx, "alice", approvedCall(q, "k"+string(rune('1'+i)), v))
		require.NoError(t, err)
		results = append(results, res)
	}
	// Another principal's calls are another chain.
	_, err := e.gw.Call(ctx, "bob", approvedCall(e.quote("bob", "paid"), "k1", "x"))
	require.NoError(t, err)

	chain := chainOf(t, e.gw, "alice")
	require.Len(t, chain, 3)
	require.Len(t, chainOf(t, e.gw, "bob"), 1)
	for i, res := range results {
		r := chain[i].Receipt
		x := res.Execution
		assert.Equal(t, int64(i+1), r.Seq)
		assert.Equal(t, x.ID, r.ExecutionID)
		assert.Equal(t, "alice", r.Principal)
		assert.Equal(t, "paid", r.Tool.Slug)
		assert.Equal(t, toolgatetype.ReceiptSchemaVersion, r.SchemaVersion)
		assert.Equal(t, toolgatetype.StatusCompleted, r.Status)
		assert.Equal(t, toolgatetype.ReceiptCost{PriceUSD: "0.1000", FeeUSD: "0.0100", TotalUSD: "0.1100"}, r.Cost)
		assert.Equal(t, toolgatetype.ApprovalKindDigest, r.Approval.Kind)
		assert.Nil(t, r.Approval.GrantID)
		assert.Nil(t, r.Resolution)
		// The hashes are of the canonical input and output, nothing else of them.
		input, err := jcs.Canonicalize(approvedCall(e.quote("alice", "paid"), "x", []string{"one", "two", "three"}[i]).Input)
		require.NoError(t, err)
		assert.Equal(t, sha256Hex(input), r.InputSHA256)
		output, err := jcs.Canonicalize(x.Output)
		require.NoError(t, err)
		require.NotNil(t, r.OutputSHA256)
		assert.Equal(t, sha256Hex(output), *r.OutputSHA256)
		assert.False(t, r.FinishedAt.Before(r.CreatedAt))

		// The receipt comes with the call's result, and with its record.
		require.NotNil(t, x.Receipt)
		assert.Equal(t, chain[i], *x.Receipt)
		var body struct {
			Receipt toolgatetype.SignedReceipt `json:"receipt"`
		}
		require.NoError(t, json.Unmarshal(res.Body, &body))
		assert.Equal(t, chain[i], body.Receipt)
		got, err := e.gw.GetExecution(ctx, "alice", x.ID)
		require.NoError(t, err)
		assert.Equal(t, res.Body, got.Body)
	}
	// The key listed is the one that signed.
	keys := e.gw.ReceiptKeys()
	require.Len(t, keys.Keys, 1)
	assert.Equal(t, chain[0].Signature.KeyID, keys.Keys[0].KeyID)
	assert.Equal(t, toolgatetype.ReceiptKeyCurrent, keys.Keys[0].Status)

	// A refused call, and a replay, sign nothing.
	_, err = e.gw.Call(ctx, "alice", approvedCall(e.quote("alice", "paid"), "k1", "one"))
	require.Error(t, err, "a new quote under a used key is another request")
	assert.Len(t, chainOf(t, e.gw, "alice"), 3)
}

func TestAFailedCallHasAReceiptWithoutOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{paidCallable})
	e.upstream.HandleFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	res, err := e.gw.Call(context.Background(), "alice", approvedCall(e.quote("alice", "paid"), "k1", "v"))
	require.NoError(t, err)
	require.Equal(t, toolgatetype.StatusFailed, res.Execution.Status)
	chain := chainOf(t, e.gw, "alice")
	require.Len(t, chain, 1)
	assert.Equal(t, toolgatetype.StatusFailed, chain[0].Receipt.Status)
	assert.Nil(t, chain[0].Receipt.OutputSHA256)
	assert.Equal(t, "0.1100", chain[0].Receipt.Cost.TotalUSD, "the price quoted, though nothing was charged")
}

func TestAResolutionIsReceiptedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gw, _, _ := resolveEnv(t)
	first := ambiguousCall(t, gw, "k1")
	require.NotNil(t, first.Execution.Receipt)
	assert.Equal(t, toolgatetype.StatusAmbiguous, first.Execution.Receipt.Receipt.Status)

	res, err := gw.ResolveExecution(ctx, "dana", first.Execution.ID, toolgatetype.ResolveRequest{Outcome: toolgatetype.StatusFailed, Note: "not in their log"})
	require.NoError(t, err)
	chain := chainOf(t, gw, "alice")
	require.Len(t, chain, 2)
	ambiguous, resolution := chain[0].Receipt, chain[1].Receipt
	assert.Equal(t, toolgatetype.StatusAmbiguous, ambiguous.Status)
	assert.Equal(t, toolgatetype.StatusFailed, resolution.Status)
	require.NotNil(t, resolution.Resolution)
	assert.Equal(t, "dana", resolution.Resolution.ResolvedBy)
	assert.Equal(t, "not in their log", resolution.Resolution.Note)
	assert.Equal(t, first.Execution.ID, resolution.ExecutionID)
	assert.Equal(t, ambiguous.InputSHA256, resolution.InputSHA256)
	assert.Equal(t, ambiguous.Cost, resolution.Cost)
	assert.Equal(t, *first.Execution.Receipt, chain[0])
	require.NotNil(t, res.Execution.Receipt)
	assert.Equal(t, chain[1], *res.Execution.Receipt)
	got, err := gw.GetExecution(ctx, "alice", first.Execution.ID)
	require.NoError(t, err)
	assert.Equal(t, chain[1], *got.Execution.Receipt, "the record carries the newest receipt")
}

func TestReceiptsRefusesBadPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, []toolSpec{paidCallable})
	_, err := e.gw.Receipts(context.Background(), "alice", -1, 10)
	requireCode(t, err, toolgatetype.CodeInvalidRequest)
	_, err = e.gw.Receipts(context.Background(), "alice", 0, 0)
	requireCode(t, err, toolgatetype.CodeInvalidRequest)
	_, err = e.gw.Receipts(context.Background(), "alice", 0, 1001)
	requireCode(t, err, toolgatetype.CodeInvalidRequest)
	page, err := e.gw.Receipts(context.Background(), "alice", 0, 1000)
	require.NoError(t, err)
	assert.Empty(t, page.Receipts)
	assert.Nil(t, page.Next)
}

func TestAnApproverReadsTheChainsOfItsPrincipalsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gw, _, _ := resolveEnv(t)
	ambiguousCall(t, gw, "k1")
	page, err := gw.ReceiptsFor(ctx, "dana", "alice", 0, 10)
	require.NoError(t, err)
	require.Len(t, page.Receipts, 1)
	_, err = gw.ReceiptsFor(ctx, "erin", "alice", 0, 10)
	requireCode(t, err, toolgatetype.CodeNotFound)
	_, err = gw.ReceiptsFor(ctx, "", "alice", 0, 10)
	requireCode(t, err, toolgatetype.CodeApproverRequired)
}
