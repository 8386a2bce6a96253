// Package client calls a remote toolgate gateway over its HTTP API, for Go
// agent runtimes that cannot embed the gateway because it runs as a shared
// service. It speaks the library's own types: a quote is a
// *toolgatetype.QuoteResult, a call a *toolgatetype.CallResult, a registry entry a
// *toolgatetype.RegistryEntry, and every refusal the same *toolgatetype.Error, with
// the same Code and details, as an embedded gateway returns. A *Client is a
// toolgatetype.Caller, as is an embedded gateway bound to a principal
// (toolgate.Gateway.For), so agent code written against toolgatetype.Caller runs
// on either.
//
//	c, err := client.New("https://gateway.example.com", os.Getenv("TOOLGATE_API_KEY"), nil)
//	q, err := c.Quote(ctx, "exchange-rates")
//	// check q.Policy.Callable, q.Policy.Approval, q.Controls.Approved; ask the user
//	res, err := c.Call(ctx, toolgatetype.CallRequest{
//		Tool: "exchange-rates", QuoteID: q.Quote.ID,
//		Input:          json.RawMessage(`{"base":"USD","quotes":"EUR"}`),
//		ApprovalDigest: *q.Quote.ManifestDigest,
//	})
//
// # Approval requests
//
// A principal whose calls a person approves (approver mode) asks for
// approval of one exact call with RequestApproval, waits with
// WaitForDecision, and calls with the approved request's ID as
// toolgatetype.CallRequest.ApprovalGrant. The grant is used once, with its
// quote; Call's retries cannot use it twice, since every retry carries the
// same Idempotency-Key and gets the first run's result. A client holding
// an approver key lists what waits (ApprovalRequests) and decides
// (Approve, Deny).
//
//	asked, err := c.RequestApproval(ctx, toolgatetype.ApprovalInput{QuoteID: q.Quote.ID, Input: input})
//	// show the person asked.ApproveURL
//	decided, err := c.WaitForDecision(ctx, asked.ID)
//	if decided.Status == toolgatetype.ApprovalStatusApproved {
//		res, err := c.Call(ctx, toolgatetype.CallRequest{..., ApprovalGrant: decided.ID})
//	}
//
// # The audit trail and what was spent
//
// Executions lists this principal's finished executions, newest first,
// each without its output (GetExecution has it), filtered as
// toolgate.Gateway.ListExecutions filters, as an iterator that fetches a
// page when the loop reaches it and follows the gateway's cursor, so calls
// finishing meanwhile neither repeat nor shift items. Spend sums what was
// charged over a window, by tool or by UTC day, as toolgate.Gateway.Spend
// does. With an approver key both cover every principal the approver
// approves for. A filter the gateway refuses comes back as the same
// invalid_request as in process, its Parameter naming the filter.
//
//	for e, err := range c.Executions(ctx, toolgatetype.ExecutionFilter{Status: toolgatetype.StatusFailed}) {
//		if err != nil { ... }
//		fmt.Println(e.CreatedAt, e.Tool.Slug, e.ID)
//	}
//	sum, err := c.Spend(ctx, toolgatetype.SpendFilter{GroupBy: storage.SpendByDay})
//
// # Budgets
//
// With an approver key, Budgets lists the budgets that name the approver
// and their teams, each window's use against its limit, and BudgetSpend
// sums what one of them was charged, by day of its calendar, principal or
// tool. A call a budget refuses is spend_limit_exceeded with the budget
// short in the error's Budget: which one, which window, and when it resets.
//
//	budgets, err := c.Budgets(ctx)
//	sum, err := c.BudgetSpend(ctx, "search-team", toolgatetype.SpendFilter{GroupBy: toolgatetype.SpendByPrincipal})
//
// # Receipts
//
// Every execution result carries the gateway's signed receipt of it
// (toolgatetype.Execution.Receipt). Receipts returns this principal's
// chain of them a page at a time, each exactly as signed, and ReceiptKeys
// the public keys they verify with, offline (package
// github.com/toolgate/toolgate/receipt, which this package does not link).
// With an approver key, PrincipalReceipts reads the chain of a principal
// the approver approves for.
//
//	p, err := c.Receipts(ctx, 0, 100)
//	keys, err := c.ReceiptKeys(ctx)
//
// # Exactly once over an unreliable network
//
// Call always sends an Idempotency-Key: the request's, or a new random one,
// returned in the result. When the outcome is unknown or the gateway asks
// to come back later, it sends the same body with the same key again: after
// a connection that failed or dropped before the answer, 409
// idempotency_key_in_use, 429 and 503 after their Retry-After, 502 and 504.
// The gateway runs one call per key and answers a repeat with the first
// run's result (Replayed), so the tool is reached and charged at most once.
// Nothing else is retried, 500 included. Reads and replacements (GET, PUT,
// DELETE), the pages of a listing among them, are retried the same way. A
// quote, an approval request or a decision, each of which creates or
// changes something, is retried only when the connection was refused, so
// it cannot have reached the gateway.
//
// Waits between attempts grow exponentially, jittered and capped
// (Options.RetryWaitMin, RetryWaitMax), never shorter than a Retry-After,
// for at most Options.MaxAttempts attempts (10), and never past ctx's
// deadline: when the next wait would pass it, the last error comes back at
// once (for a 429, rate_limited with its RetryAfter). With no deadline, a
// Retry-After is waited out however long it is. Options.CheckRetry and
// Options.Backoff replace the policy, in the manner of go-retryablehttp.
//
// # Errors
//
// A refusal is the gateway's *toolgatetype.Error: match it with errors.As and
// branch on Code, as in process; codes this version does not know come
// through too. When no answer of the gateway arrived (the connection failed
// or dropped, or a proxy answered in its stead), the error is a
// *TransportError, which says whether the request may have reached the
// gateway and, for a call, the Idempotency-Key to retry it with.
//
// The API key is sent only in the Authorization header and never appears
// in an error or a log line (Options.Logger, silent by default).
package client
