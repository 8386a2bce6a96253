package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/apikey"
	"github.com/toolgate/toolgate/client"
	"github.com/toolgate/toolgate/httpapi"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage/memory"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

// serveExampleGateway serves a gateway of the built-in tools, answering
// from recorded provider responses, with API keys for two principals:
// alice, whose own user approves her calls, and agent, whose calls pat, a
// person with an approver key, approves. In real use the gateway is
// cmd/toolgate, somewhere else.
func serveExampleGateway() *httptest.Server {
	reg := registry.New()
	if err := tools.RegisterAll(reg); err != nil {
		panic(err)
	}
	gw, err := toolgate.New(memory.New(), &toolgate.Config{
		Registry: reg, Transport: recorded.Transport(),
		Approvers: toolgatetype.StaticApprovers{
			Modes:     map[string]toolgatetype.ApprovalMode{"agent": toolgatetype.ApprovalModeApprover},
			Approvers: map[string][]string{"pat": {"agent"}},
		},
	})
	if err != nil {
		panic(err)
	}
	keys := apikey.NewKeyStore()
	for _, err := range []error{
		keys.AddKey("alice", "tg_example_alice"),
		keys.AddKey("agent", "tg_example_agent"),
		keys.AddApproverKey("pat", "tg_example_pat_approver"),
	} {
		if err != nil {
			panic(err)
		}
	}
	return httptest.NewServer(httpapi.NewHandler(gw, &httpapi.Options{Authenticator: keys}))
}

// Quote a tool, check what the quote says, and call it under the quote
// with the digest the user approved. The call is made exactly once however
// often the network fails on the way: the client retries it under one
// Idempotency-Key.
func Example() {
	srv := serveExampleGateway()
	defer srv.Close()
	ctx := context.Background()

	c, err := client.New(srv.URL, "tg_example_alice", nil)
	if err != nil {
		panic(err)
	}
	q, err := c.Quote(ctx, "exchange-rates")
	if err != nil {
		panic(err)
	}
	fmt.Println("total:", q.Quote.TotalUSD, "callable:", q.Policy.Callable, "approval:", q.Policy.Approval.Requirement)
	if !q.Policy.Callable || !q.Controls.Approved {
		return
	}
	// explicit_unverified: the user is shown the tool and its exact
	// manifest digest, and approves that.
	res, err := c.Call(ctx, toolgatetype.CallRequest{
		Tool:           "exchange-rates",
		QuoteID:        q.Quote.ID,
		Input:          json.RawMessage(`{"base":"USD","quotes":"EUR"}`),
		ApprovalDigest: *q.Quote.ManifestDigest,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Execution.Status, string(res.Execution.Output))
	fmt.Println("a key was made up for the call:", res.IdempotencyKey != "")
	// Output:
	// total: 0.0000 callable: true approval: explicit_unverified
	// completed [{"date":"2026-03-25","base":"USD","quote":"EUR","rate":0.9251}]
	// a key was made up for the call: true
}

// An agent whose calls a person approves (approver mode) quotes a tool,
// asks for approval of one exact call, waits while the person decides, and
// calls with the grant. The digest it could copy from its quote approves
// nothing on its own.
func Example_approvalRequest() {
	srv := serveExampleGateway()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	agent, err := client.New(srv.URL, "tg_example_agent", nil)
	if err != nil {
		panic(err)
	}
	q, err := agent.Quote(ctx, "exchange-rates")
	if err != nil {
		panic(err)
	}
	fmt.Println("total:", q.Quote.TotalUSD, "approval:", q.Policy.Approval.Requirement)
	input := json.RawMessage(`{"base":"USD","quotes":"EUR"}`)
	asked, err := agent.RequestApproval(ctx, toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: input})
	if err != nil {
		panic(err)
	}
	fmt.Println("request:", asked.Status, "for", asked.Tool.Slug, asked.TotalUSD)

	// Elsewhere, the person reads what waits for them and approves; a
	// person would usually decide on the approval page, at asked.ApproveURL.
	go func() {
		person, err := client.New(srv.URL, "tg_example_pat_approver", nil)
		if err != nil {
			panic(err)
		}
		for r, err := range person.ApprovalRequests(ctx, toolgatetype.ApprovalStatusPending) {
			if err != nil {
				return
			}
			if _, err := person.Approve(ctx, r.ID, ""); err != nil {
				return
			}
		}
	}()

	decided, err := agent.WaitForDecision(ctx, asked.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println("decision:", decided.Status, "by", decided.DecidedBy)
	if decided.Status != toolgatetype.ApprovalStatusApproved {
		return
	}
	res, err := agent.Call(ctx, toolgatetype.CallRequest{
		Tool:           "exchange-rates",
		QuoteID:        q.Quote.ID,
		Input:          input,
		ApprovalDigest: *q.Quote.ManifestDigest,
		ApprovalGrant:  decided.ID,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Execution.Status, string(res.Execution.Output))
	// Output:
	// total: 0.0000 approval: explicit_unverified
	// request: pending for exchange-rates 0.0000
	// decision: approved by pat
	// completed [{"date":"2026-03-25","base":"USD","quote":"EUR","rate":0.9251}]
}

// A refusal is the same *toolgatetype.Error as in process; a request that got
// no answer of the gateway is a *client.TransportError.
func Example_errors() {
	srv := serveExampleGateway()
	ctx := context.Background()
	c, err := client.New(srv.URL, "tg_example_alice", &client.Options{MaxAttempts: 2})
	if err != nil {
		panic(err)
	}
	q, err := c.Quote(ctx, "goal-data")
	if err != nil {
		panic(err)
	}
	_, err = c.Call(ctx, toolgatetype.CallRequest{Tool: "goal-data", QuoteID: q.Quote.ID, Input: json.RawMessage(`{"goal":"g","step":1}`)})
	var refused *toolgatetype.Error
	if errors.As(err, &refused) {
		fmt.Println(refused.Code, refused.Reasons)
	}

	srv.Close() // the gateway goes away
	_, err = c.Call(ctx, toolgatetype.CallRequest{Tool: "goal-data", QuoteID: q.Quote.ID, Input: json.RawMessage(`{"goal":"g","step":1}`)})
	var lost *client.TransportError
	if errors.As(err, &lost) {
		fmt.Println("may have run:", lost.MayHaveReachedServer, "attempts:", lost.Attempts, "key to retry with:", lost.IdempotencyKey != "")
	}
	// Output:
	// tool_blocked [paid provider has not completed payment verification]
	// may have run: false attempts: 2 key to retry with: true
}
