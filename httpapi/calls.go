package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// quote answers POST /v1/tools/{tool}/quote. The body is optional: none
// or {} quotes with the input unknown, {"input": {...}} has the rules that
// read the input decided in the quote. It is read as strictly as every
// other body (an unknown member is refused), but needs no Content-Type:
// it needed none when it could hold no member, and clients rely on that.
func (h *Handler) quote(w http.ResponseWriter, r *http.Request) {
	body, err := h.readBody(w, r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var in toolgatetype.QuoteBody
	if len(bytes.TrimSpace(body)) > 0 {
		if !json.Valid(body) {
			h.writeError(w, r, httpx.Errorf(toolgatetype.CodeInvalidRequest, "the request body is not valid JSON"))
			return
		}
		// A member twice is named as such, at any depth, before one
		// unknown is.
		if err := checkMembers(body, nil); err != nil {
			h.writeError(w, r, err)
			return
		}
		if err := decodeStrict(body, &in); err != nil {
			h.writeError(w, r, err)
			return
		}
	}
	if bytes.Equal(bytes.TrimSpace(in.Input), []byte("null")) {
		in.Input = nil // as if left out
	}
	q, err := h.gw.QuoteWith(r.Context(), principalOf(r), r.PathValue("tool"), toolgatetype.QuoteOptions{Input: in.Input})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusCreated, q)
}

func (h *Handler) call(w http.ResponseWriter, r *http.Request) {
	keys := r.Header.Values("Idempotency-Key")
	if len(keys) > 1 {
		h.writeError(w, r, httpx.Errorf(toolgatetype.CodeIdempotencyKeyInvalid, "send exactly one Idempotency-Key header"))
		return
	}
	key := ""
	if len(keys) == 1 {
		key = keys[0]
	}
	if err := toolgatetype.ValidateIdempotencyKey(key); err != nil {
		h.writeError(w, r, err)
		return
	}
	if err := requireJSONContentType(r); err != nil {
		h.writeError(w, r, err)
		return
	}
	raw, err := h.readBody(w, r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var body toolgatetype.CallBody
	if err := decodeStrict(raw, &body); err != nil {
		h.writeError(w, r, err)
		return
	}
	if body.QuoteID == nil {
		h.writeError(w, r, httpx.Errorf(toolgatetype.CodeInvalidRequest, "quoteId is required"))
		return
	}
	req := toolgatetype.CallRequest{
		Tool:           r.PathValue("tool"),
		QuoteID:        *body.QuoteID,
		Input:          body.Input,
		IdempotencyKey: key,
	}
	if body.Approval != nil && body.Approval.ManifestDigest != nil {
		req.ApprovalDigest = *body.Approval.ManifestDigest
		if req.ApprovalDigest == "" {
			h.writeError(w, r, httpx.Errorf(toolgatetype.CodeInvalidRequest, "approval.manifestDigest must not be empty"))
			return
		}
	}
	if body.Approval != nil && body.Approval.GrantID != nil {
		req.ApprovalGrant = *body.Approval.GrantID
		if req.ApprovalGrant == "" {
			h.writeError(w, r, httpx.Errorf(toolgatetype.CodeInvalidRequest, "approval.grantId must not be empty"))
			return
		}
	}
	if bytes.Equal(bytes.TrimSpace(req.Input), []byte("null")) {
		req.Input = nil // "input": null is as missing as no input at all
	}
	res, err := h.gw.Call(r.Context(), principalOf(r), req)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set("Toolgate-Execution-Id", res.Execution.ID)
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	} else if e := res.Execution.Error; e != nil && e.RetryAfterSeconds > 0 {
		// The circuit breaker held the call back: when to call again.
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfterSeconds))
	}
	httpx.WriteRaw(w, http.StatusOK, res.Body)
}

func (h *Handler) execution(w http.ResponseWriter, r *http.Request) {
	res, err := h.gw.GetExecution(r.Context(), principalOf(r), r.PathValue("id"))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set("Toolgate-Execution-Id", res.Execution.ID)
	httpx.WriteRaw(w, http.StatusOK, res.Body)
}

// resolveExecution answers POST /v1/executions/{id}/resolve (approver key):
// a person's finding about an ambiguous execution, {"outcome": "completed"
// | "failed", "note": "..."}. It answers with the resolved execution.
func (h *Handler) resolveExecution(w http.ResponseWriter, r *http.Request) {
	var in toolgatetype.ResolveRequest
	if err := h.readJSON(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	res, err := h.gw.ResolveExecution(r.Context(), approverOf(r), r.PathValue("id"), in)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set("Toolgate-Execution-Id", res.Execution.ID)
	httpx.WriteRaw(w, http.StatusOK, res.Body)
}
