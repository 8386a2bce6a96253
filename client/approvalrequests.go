package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/toolgate/toolgate/toolgatetype"
)

// approvalRequestsPath is where approval requests are made and read.
const approvalRequestsPath = "/v1/approval-requests"

// RequestApproval asks this principal's approvers to approve one call: the
// quote in.QuoteID (this principal's, open and unexpired) with in.Input,
// as toolgate.Gateway.RequestApproval does. The request is pending until
// an approver decides it, and expires after the gateway's approval TTL
// (its quote living as long); its ApproveURL is
// where a person decides it. Approved, its ID is the grant the call
// carries (toolgatetype.CallRequest.ApprovalGrant).
//
// A request is created anew each time it is sent, so it is retried only
// when the connection was refused.
func (c *Client) RequestApproval(ctx context.Context, in toolgatetype.ApprovalInput) (*toolgatetype.ApprovalRequest, error) {
	if len(in.Input) > 0 && !json.Valid(in.Input) {
		return nil, &toolgatetype.Error{Code: toolgatetype.CodeInvalidRequest, Message: "input is not valid JSON"}
	}
	body, err := json.Marshal(toolgatetype.NewApprovalRequestBody(in))
	if err != nil {
		return nil, fmt.Errorf("client: encode the approval request: %w", err)
	}
	return doJSON[toolgatetype.ApprovalRequest](ctx, c, request{method: http.MethodPost, path: approvalRequestsPath, body: body})
}

// ApprovalRequest returns an approval request as it is now: one of this
// principal's own or, with an approver key, one of a principal the
// approver approves for. Any other is approval_request_not_found.
func (c *Client) ApprovalRequest(ctx context.Context, id string) (*toolgatetype.ApprovalRequest, error) {
	seg, err := approvalSegment(id)
	if err != nil {
		return nil, err
	}
	return doJSON[toolgatetype.ApprovalRequest](ctx, c, request{method: http.MethodGet, path: approvalRequestsPath + "/" + seg})
}

// WaitForDecision reads approval request id until it is no longer pending,
// and returns it as it then is: approved (its ID is the grant to call
// with), denied, expired (nobody decided before the quote expired) or used.
// Each of those is an answer, not an error.
//
// It polls with the retry waits: first after about Options.RetryWaitMin,
// then twice as long each time, jittered, up to one poll every
// Options.RetryWaitMax (by default from 100 ms up to one poll every 2.5 to
// 5 s), each poll retried as ApprovalRequest is. It never waits past ctx's
// deadline: when the next poll would come after it, it returns at once
// with an error that matches context.DeadlineExceeded, as it returns
// ctx's error when ctx ends while it waits. A request nobody decides
// expires, so a wait without a deadline ends too.
func (c *Client) WaitForDecision(ctx context.Context, id string) (*toolgatetype.ApprovalRequest, error) {
	for poll := 0; ; poll++ {
		req, err := c.ApprovalRequest(ctx, id)
		if err != nil {
			return nil, err
		}
		if req.Status != toolgatetype.ApprovalStatusPending {
			return req, nil
		}
		wait := c.opts.Backoff(c.opts.RetryWaitMin, c.opts.RetryWaitMax, poll, nil)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return nil, stillPending(id, context.DeadlineExceeded)
		}
		if err := c.sleep(ctx, wait); err != nil {
			return nil, stillPending(id, err)
		}
	}
}

func stillPending(id string, cause error) error {
	return fmt.Errorf("client: approval request %s was still pending when the wait ended: %w", id, cause)
}

// ApprovalRequests lists, for a client holding an approver key, the
// approval requests of the principals the approver approves for, newest
// first, with the given status (toolgatetype.ApprovalStatusPending when
// empty; toolgatetype.ApprovalStatusAll for every status), fetching
// Options.PageSize at a time as the loop goes on. The listing follows the
// gateway's cursor, so requests made meanwhile do not shift entries across
// pages. A caller key gets approver_required.
//
//	for r, err := range c.ApprovalRequests(ctx, toolgatetype.ApprovalStatusPending) {
//		if err != nil { ... }
//		fmt.Println(r.Principal, r.Tool.Slug, r.TotalUSD, r.ApproveURL)
//	}
func (c *Client) ApprovalRequests(ctx context.Context, status toolgatetype.ApprovalStatus) iter.Seq2[*toolgatetype.ApprovalRequest, error] {
	return pages(ctx, func(ctx context.Context, cursor string) (page[*toolgatetype.ApprovalRequest], error) {
		q := url.Values{"limit": {strconv.Itoa(c.opts.PageSize)}}
		if status != "" {
			q.Set("status", string(status))
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		list, err := doJSON[toolgatetype.ApprovalRequestList](ctx, c, request{method: http.MethodGet, path: approvalRequestsPath, query: q})
		if err != nil {
			return page[*toolgatetype.ApprovalRequest]{}, err
		}
		p := page[*toolgatetype.ApprovalRequest]{items: make([]*toolgatetype.ApprovalRequest, len(list.ApprovalRequests))}
		for i := range list.ApprovalRequests {
			p.items[i] = &list.ApprovalRequests[i]
		}
		// An empty page ends the listing whatever it says, so a cursor
		// that does not advance cannot loop forever.
		if list.NextCursor != nil && len(list.ApprovalRequests) > 0 {
			p.next = *list.NextCursor
		}
		return p, nil
	})
}

// Approve approves approval request id, for a client holding an approver
// key, and returns the request as decided, as toolgate.Gateway.DecideApproval
// does. remember, when a standing approval (toolgatetype.ApprovalNeverAsk,
// toolgatetype.ApprovalAskChargedCalls, or toolgatetype.ApprovalFirstUse
// for a tool whose requirement is first_use), also records it for the
// tool's digest and the request's principal; empty or
// toolgatetype.ApprovalOnce approves this call only, and the request
// returned reads Remember "once".
//
// A decision is final: a second one gets approval_already_decided, and one
// after the request expired gets approval_expired. A caller key gets
// approver_required. A decision is sent again only when the connection
// was refused; after a lost answer, read the request (ApprovalRequest) to
// learn whether it was decided.
func (c *Client) Approve(ctx context.Context, id string, remember toolgatetype.StandingMode) (*toolgatetype.ApprovalRequest, error) {
	var body toolgatetype.DecisionBody
	if remember != "" {
		body.Remember = &remember
	}
	return c.decide(ctx, id, "approve", body)
}

// Deny denies approval request id, for a client holding an approver key,
// and returns the request as decided. It is final as Approve is.
func (c *Client) Deny(ctx context.Context, id string) (*toolgatetype.ApprovalRequest, error) {
	return c.decide(ctx, id, "deny", toolgatetype.DecisionBody{})
}

func (c *Client) decide(ctx context.Context, id, verb string, d toolgatetype.DecisionBody) (*toolgatetype.ApprovalRequest, error) {
	seg, err := approvalSegment(id)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("client: encode the decision: %w", err)
	}
	return doJSON[toolgatetype.ApprovalRequest](ctx, c, request{method: http.MethodPost, path: approvalRequestsPath + "/" + seg + "/" + verb, body: body})
}

// approvalSegment is an approval request's id as a path segment. An id
// that would name another route (the listing, or a path the router
// cleans away) is refused here as the gateway refuses an id it does not
// know.
func approvalSegment(id string) (string, error) {
	switch id {
	case "", ".", "..":
		return "", &toolgatetype.Error{Code: toolgatetype.CodeApprovalRequestNotFound, Message: fmt.Sprintf("no approval request %q exists for you", id)}
	}
	return url.PathEscape(id), nil
}
