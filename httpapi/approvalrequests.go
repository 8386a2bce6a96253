package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage"
)

// ApprovalRequestBody is the body of POST /v1/approval-requests.
type ApprovalRequestBody struct {
	QuoteID *string         `json:"quoteId"`
	Input   json.RawMessage `json:"input"`
}

// NewApprovalRequestBody is the body that asks approval of in, for clients.
func NewApprovalRequestBody(in toolgate.ApprovalInput) ApprovalRequestBody {
	return ApprovalRequestBody{QuoteID: &in.QuoteID, Input: in.Input}
}

// DecisionBody is the optional body of .../approve; .../deny takes none,
// or an empty object.
type DecisionBody struct {
	Remember *storage.ApprovalMode `json:"remember,omitempty"`
}

// createApprovalRequest answers POST /v1/approval-requests (caller key):
// the caller asks its approvers to approve one call.
func (h *handler) createApprovalRequest(w http.ResponseWriter, r *http.Request) {
	var in ApprovalRequestBody
	if err := h.readJSON(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	if in.QuoteID == nil {
		h.writeError(w, r, apiError(toolgate.CodeInvalidRequest, "quoteId is required"))
		return
	}
	if bytes.Equal(bytes.TrimSpace(in.Input), []byte("null")) {
		in.Input = nil // "input": null is as missing as no input at all
	}
	req, err := h.gw.RequestApproval(r.Context(), principalOf(r), toolgate.ApprovalInput{QuoteID: *in.QuoteID, Input: in.Input})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeApprovalRequest(w, r, http.StatusCreated, req)
}

// getApprovalRequest answers GET /v1/approval-requests/{id}: the caller's
// own request, or one of an approver's principals.
func (h *handler) getApprovalRequest(w http.ResponseWriter, r *http.Request) {
	var (
		req *toolgate.ApprovalRequest
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
func (h *handler) listApprovalRequests(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	opts := toolgate.ApprovalListOptions{Status: toolgate.ApprovalStatus(q.Get("status")), Cursor: q.Get("cursor")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			h.writeError(w, r, apiError(toolgate.CodeInvalidRequest, "limit must be a whole number from 1 to 100"))
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
	varyOnForwarded(w)
	writeJSON(w, http.StatusOK, list)
}

// approveRequest answers POST /v1/approval-requests/{id}/approve, with an
// optional body {"remember": "never_ask" | "ask_charged_calls"}.
func (h *handler) approveRequest(w http.ResponseWriter, r *http.Request) {
	var in DecisionBody
	if err := h.readOptionalJSON(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	d := toolgate.Decision{Approve: true}
	if in.Remember != nil {
		if *in.Remember == "" {
			h.writeError(w, r, apiError(toolgate.CodeInvalidRequest, "remember must be %s or %s, or left out", storage.ApprovalNeverAsk, storage.ApprovalAskChargedCalls))
			return
		}
		d.Remember = *in.Remember
	}
	h.decide(w, r, d)
}

// denyRequest answers POST /v1/approval-requests/{id}/deny.
func (h *handler) denyRequest(w http.ResponseWriter, r *http.Request) {
	var in struct{}
	if err := h.readOptionalJSON(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	h.decide(w, r, toolgate.Decision{})
}

func (h *handler) decide(w http.ResponseWriter, r *http.Request, d toolgate.Decision) {
	req, err := h.gw.DecideApproval(r.Context(), approverOf(r), r.PathValue("id"), d)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeApprovalRequest(w, r, http.StatusOK, req)
}

// readOptionalJSON is readJSON for a body that may be left out: an empty
// body leaves dst as it is, anything else must be JSON that fits it.
func (h *handler) readOptionalJSON(w http.ResponseWriter, r *http.Request, dst any) error {
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
func writeApprovalRequest(w http.ResponseWriter, r *http.Request, status int, req *toolgate.ApprovalRequest) {
	withApproveURL(r, req)
	varyOnForwarded(w)
	writeJSON(w, status, req)
}

// withApproveURL sets where a person decides the request: the approval
// page on the address the request reached the gateway at.
func withApproveURL(r *http.Request, req *toolgate.ApprovalRequest) {
	req.ApproveURL = baseURL(r) + approvalPagePath(req.ID)
}
