package client

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/toolgate/toolgate/receipt"
	"github.com/toolgate/toolgate/toolgatetype"
)

// assertNoKeys fails t when any party's API key shows in b.
func assertNoKeys(t *testing.T, what string, b []byte) {
	t.Helper()
	for who, key := range keyOf {
		assert.NotContains(t, string(b), key, "%s carries %s's key", what, who)
	}
}

// A caller's chain, read a page at a time, is the gateway's as signed; the
// result of each call carries its receipt; the chain verifies with the
// keys the client fetches.
func TestReceipts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.client(nil)
	ctx := context.Background()

	var results []*toolgatetype.CallResult
	for _, v := range []string{"one", "two", "three"} {
		q, err := c.Quote(ctx, "paid")
		require.NoError(t, err)
		res, err := c.Call(ctx, toolgatetype.CallRequest{Tool: "paid", QuoteID: q.Quote.ID, Input: []byte(`{"v":"` + v + `"}`)})
		require.NoError(t, err)
		require.NotNil(t, res.Execution.Receipt, "the client's result carries the receipt")
		results = append(results, res)
	}

	first, err := c.Receipts(ctx, 0, 2)
	require.NoError(t, err)
	require.Len(t, first.Receipts, 2)
	require.NotNil(t, first.Next)
	second, err := c.Receipts(ctx, *first.Next, 2)
	require.NoError(t, err)
	require.Len(t, second.Receipts, 1)
	assert.Nil(t, second.Next)
	chain := append(first.Receipts, second.Receipts...)

	held, err := e.gw.Receipts(ctx, "alice", 0, 100)
	require.NoError(t, err)
	require.Len(t, held.Receipts, 3)
	for i := range chain {
		assert.Equal(t, string(held.Receipts[i]), string(chain[i]), "receipt %d as signed", i+1)
	}
	all, err := c.Receipts(ctx, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, held, all, "limit 0 takes the gateway's default")

	keys, err := c.ReceiptKeys(ctx)
	require.NoError(t, err)
	assert.Equal(t, e.gw.ReceiptKeys(), keys)
	v, err := receipt.NewVerifier(keys)
	require.NoError(t, err)
	for i, signed := range chain {
		require.NoError(t, v.Add(signed), "receipt %d", i+1)

		var want toolgatetype.SignedReceipt
		require.NoError(t, json.Unmarshal(signed, &want))
		assert.Equal(t, want, *results[i].Execution.Receipt, "call %d", i+1)
		assert.Equal(t, results[i].Execution.ID, want.Receipt.ExecutionID)
		got, err := c.GetExecution(ctx, results[i].Execution.ID)
		require.NoError(t, err)
		assert.Equal(t, want, *got.Execution.Receipt, "execution %d read back", i+1)
	}

	empty, err := c.Receipts(ctx, 3, 10)
	require.NoError(t, err)
	assert.NotNil(t, empty.Receipts)
	assert.Empty(t, empty.Receipts)
	assert.Nil(t, empty.Next)

	// The key set is public.
	anonymous := e.clientAt(e.front.URL, "", nil)
	public, err := anonymous.ReceiptKeys(ctx)
	require.NoError(t, err)
	assert.Equal(t, keys, public)
	_, err = anonymous.Receipts(ctx, 0, 0)
	assert.True(t, toolgatetype.IsCode(err, toolgatetype.CodeUnauthorized), "%v", err)

	// No key travels into a receipt or the key document.
	for _, signed := range chain {
		assertNoKeys(t, "a receipt", signed)
	}
	doc, err := json.Marshal(keys)
	require.NoError(t, err)
	assertNoKeys(t, "the key document", doc)
}

// An approver reads the chain of a principal it approves for and of no
// other; a caller's key does not read another's; bad pages are refused
// with the parameter named.
func TestPrincipalReceipts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	e.history(2)
	own, err := e.client(nil).Receipts(ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, own.Receipts, 2)

	pat := e.clientAs("pat", nil)
	forAlice, err := pat.PrincipalReceipts(ctx, "alice", 0, 0)
	require.NoError(t, err)
	assert.Equal(t, own, forAlice)
	forAgent, err := pat.PrincipalReceipts(ctx, "agent", 0, 1)
	require.NoError(t, err)
	require.Len(t, forAgent.Receipts, 1)
	var r toolgatetype.SignedReceipt
	require.NoError(t, json.Unmarshal(forAgent.Receipts[0], &r))
	assert.Equal(t, "agent", r.Receipt.Principal)
	assert.Equal(t, toolgatetype.ApprovalKindGrant, r.Receipt.Approval.Kind)

	var ge *toolgatetype.Error
	_, err = e.clientAs("sam", nil).PrincipalReceipts(ctx, "alice", 0, 0)
	require.True(t, errors.As(err, &ge), "%v", err)
	assert.Equal(t, toolgatetype.CodeNotFound, ge.Code)
	_, err = pat.Receipts(ctx, 0, 0)
	require.True(t, errors.As(err, &ge), "%v", err)
	assert.Equal(t, toolgatetype.CodeInvalidRequest, ge.Code, "an approver names a principal")
	assert.Equal(t, "principal", ge.Parameter)
	_, err = pat.PrincipalReceipts(ctx, "", 0, 0)
	require.True(t, errors.As(err, &ge), "%v", err)
	assert.Equal(t, "principal", ge.Parameter)

	_, err = e.client(nil).PrincipalReceipts(ctx, "agent", 0, 0)
	require.True(t, errors.As(err, &ge), "%v", err)
	assert.Equal(t, toolgatetype.CodeApproverRequired, ge.Code, "a caller's key reads its own chain only")

	for _, c := range []struct {
		after     int64
		limit     int
		parameter string
	}{
		{-1, 0, "after"},
		{0, -1, "limit"},
		{0, 1001, "limit"},
	} {
		_, err := e.client(nil).Receipts(ctx, c.after, c.limit)
		require.True(t, errors.As(err, &ge), "%v", err)
		assert.Equal(t, toolgatetype.CodeInvalidRequest, ge.Code)
		assert.Equal(t, c.parameter, ge.Parameter, "after %d, limit %d", c.after, c.limit)
		_, err = pat.PrincipalReceipts(ctx, "alice", c.after, c.limit)
		require.True(t, errors.As(err, &ge), "%v", err)
		assert.Equal(t, c.parameter, ge.Parameter, "approver: after %d, limit %d", c.after, c.limit)
	}
}
