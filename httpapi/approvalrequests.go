package httpapi

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// createApprovalRequest answers POST /v1/approval-requests (caller key):
// the caller asks its approvers to approve one call.
func (h *Handler) createApprovalRequest(w http.ResponseWriter, r *http.Request) {
	var in toolgatetype.ApprovalRequestBody
	if err := h.readJSON(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	if in.QuoteID == nil {
		h.writeError(w, r, httpx.Errorf(toolgatetype.CodeInvalidRequest, "quoteId is required"))
		return
	}
	if bytes.Equal(bytes.TrimSpace(in.Input), []byte("null")) {
		in.Input = nil // "input": null is as missing as no input at all
	}
	req, err := h.gw.RequestApproval(r.Context(), principalOf(r), toolgatetype.ApprovalInput{QuoteID: *in.QuoteID, Input: in.Input})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeApprovalRequest(w, r, http.StatusCreated, req)
}

// getApprovalRequest answers GET /v1/approval-requests/{id}: the caller's
// own request, or one of an approver's principals.
func (h *Handler) getApprovalRequest(w http.ResponseWriter, r *http.Request) {
	var (
		req *toolgatetype.ApprovalRequest
		err error
	)
	if approver := approverOf(r); approver != "" {
		req, err = h.gw.ApprovalRequestFor(r.Context(), approver, r.PathValue("id"))
	} else {
		req, err = h.gw.ApprovalRequest(r.Context(), principalOf(r), r.PathValue("id"))
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeApprovalRequest(w, r, http.StatusOK, req)
}

// listApprovalRequests answers GET /v1/approval-requests?status=&cursor=&limit=
// (approver key): the requests of the principals the approver approves for.
func (h *Handler) listApprovalRequests(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	opts := toolgatetype.ApprovalListOptions{Status: toolgatetype.ApprovalStatus(q.Get("status")), Cursor: q.Get("cursor")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			h.writeError(w, r, httpx.Errorf(toolgatetype.CodeInvalidRequest, "limit must be a whole number from 1 to 100"))
			return
		}
		opts.Limit = n
	}
	list, err := h.gw.ListApprovalRequests(r.Context(), approverOf(r), opts)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	for i := range list.ApprovalRequests {
		withApproveURL(r, &list.ApprovalRequests[i])
	}
	httpx.VaryOnForwarded(w)
	httpx.WriteJSON(w, http.StatusOK, list)
}

// approveRequest answers POST /v1/approval-requests/{id}/approve, with an
// optional body {"remember": "once" | "first_use" | "never_ask" |
// "ask_charged_calls"}. No body, {} and "once" approve this call only; the
// request then reads "remember": "once" (see toolgate.Gateway.DecideApproval).
func (h *Handler) approveRequest(w http.ResponseWriter, r *http.Request) {
	var in toolgatetype.DecisionBody
	if err := h.readOptionalJSON(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	d := toolgatetype.Decision{Approve: true}
	if in.Remember != nil {
		if *in.Remember == "" {
			h.writeError(w, r, httpx.Errorf(toolgatetype.CodeInvalidRequest, "remember must be %s, %s, %s or %s, or left out (this call only)",
				toolgatetype.ApprovalOnce, toolgatetype.ApprovalFirstUse, toolgatetype.ApprovalNeverAsk, toolgatetype.ApprovalAskChargedCalls))
			return
		}
		d.Remember = *in.Remember
	}
	h.decide(w, r, d)
}

// denyRequest answers POST /v1/approval-requests/{id}/deny.
func (h *Handler) denyRequest(w http.ResponseWriter, r *http.Request) {
	var in struct{}
	if err := h.readOptionalJSON(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	h.decide(w, r, toolgatetype.Decision{})
}

func (h *Handler) decide(w http.ResponseWriter, r *http.Request, d toolgatetype.Decision) {
	req, err := h.gw.DecideApproval(r.Context(), approverOf(r), r.PathValue("id"), d)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeApprovalRequest(w, r, http.StatusOK, req)
}

// readOptionalJSON is readJSON for a body that may be left out: an empty
// body leaves dst as it is, anything else must be JSON that fits it.
func (h *Handler) readOptionalJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := h.readBody(w, r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := requireJSONContentType(r); err != nil {
		return err
	}
	return decodeStrict(body, dst)
}

// writeApprovalRequest answers with one request and its approveUrl.
func writeApprovalRequest(w http.ResponseWriter, r *http.Request, status int, req *toolgatetype.ApprovalRequest) {
	withApproveURL(r, req)
	httpx.VaryOnForwarded(w)
	httpx.WriteJSON(w, status, req)
}

// withApproveURL sets where a person decides the request: the approval
// page on the address the request reached the gateway at.
func withApproveURL(r *http.Request, req *toolgatetype.ApprovalRequest) {
	req.ApproveURL = httpx.BaseURL(r) + httpx.ApprovalPagePath(req.ID)
}
