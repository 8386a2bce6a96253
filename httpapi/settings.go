package httpapi

import (
	"net/http"

	"github.com/toolgate/toolgate/internal/httpx"
	"github.com/toolgate/toolgate/toolgatetype"
)

// controlsOut is what the API answers with: no tools member when there are
// none, whether the store keeps an empty map or none.
func controlsOut(c toolgatetype.SpendControls) toolgatetype.SpendControls {
	if len(c.Tools) == 0 {
		c.Tools = nil
	}
	return c
}

// readJSON reads and strictly decodes a JSON request body.
func (h *Handler) readJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if err := requireJSONContentType(r); err != nil {
		return err
	}
	body, err := h.readBody(w, r)
	if err != nil {
		return err
	}
	return decodeStrict(body, dst)
}

func (h *Handler) getSpendControls(w http.ResponseWriter, r *http.Request) {
	c, err := h.gw.SpendControls(r.Context(), principalOf(r))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, controlsOut(c))
}

// putSpendControls replaces the caller's limits over all tools. The
// per-tool map is replaced when sent and kept when absent, in one atomic
// step of the store, so a concurrent change of one tool's limits survives.
func (h *Handler) putSpendControls(w http.ResponseWriter, r *http.Request) {
	var set toolgatetype.SpendControls
	if err := h.readJSON(w, r, &set); err != nil {
		h.writeError(w, r, err)
		return
	}
	for slug := range set.Tools {
		if _, err := h.gw.Registry().Lookup(slug); err != nil {
			h.writeError(w, r, httpx.Errorf(toolgatetype.CodeToolNotFound, "no tool %q is registered", slug))
			return
		}
	}
	stored, err := h.gw.UpdateSpendControls(r.Context(), principalOf(r), func(c *toolgatetype.SpendControls) error {
		keep := c.Tools
		*c = set
		if set.Tools == nil {
			c.Tools = keep
		}
		return nil
	})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, controlsOut(stored))
}

// toolSlug resolves the {tool} path value to a registered slug.
func (h *Handler) toolSlug(r *http.Request) (string, error) {
	v, err := h.gw.Registry().Lookup(r.PathValue("tool"))
	if err != nil {
		return "", httpx.Errorf(toolgatetype.CodeToolNotFound, "no tool %q is registered", r.PathValue("tool"))
	}
	return v.Tool.Slug, nil
}

func (h *Handler) getToolSpendControls(w http.ResponseWriter, r *http.Request) {
	slug, err := h.toolSlug(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	c, err := h.gw.SpendControls(r.Context(), principalOf(r))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	t, ok := c.Tools[slug]
	if !ok {
		h.writeError(w, r, httpx.Errorf(toolgatetype.CodeNotFound, "you have set no spend controls for %s", slug))
		return
	}
	httpx.WriteJSON(w, http.StatusOK, t)
}

func (h *Handler) putToolSpendControls(w http.ResponseWriter, r *http.Request) {
	slug, err := h.toolSlug(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var t toolgatetype.ToolSpendControls
	if err := h.readJSON(w, r, &t); err != nil {
		h.writeError(w, r, err)
		return
	}
	h.updateToolControls(w, r, slug, &t)
}

func (h *Handler) deleteToolSpendControls(w http.ResponseWriter, r *http.Request) {
	slug, err := h.toolSlug(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	h.updateToolControls(w, r, slug, nil)
}

// updateToolControls sets (t non-nil) or removes the caller's controls of
// one tool, in one atomic step of the store, so that changes to two tools'
// controls at once both survive.
func (h *Handler) updateToolControls(w http.ResponseWriter, r *http.Request, slug string, t *toolgatetype.ToolSpendControls) {
	_, err := h.gw.UpdateSpendControls(r.Context(), principalOf(r), func(c *toolgatetype.SpendControls) error {
		if t == nil {
			if _, ok := c.Tools[slug]; !ok {
				return httpx.Errorf(toolgatetype.CodeNotFound, "you have set no spend controls for %s", slug)
			}
			delete(c.Tools, slug)
			return nil
		}
		if c.Tools == nil {
			c.Tools = map[string]toolgatetype.ToolSpendControls{}
		}
		c.Tools[slug] = *t
		return nil
	})
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if t == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, *t)
}

// standingOwner is whose standing approvals a request is about: the
// caller's own, or, for an approver, those of the principal named by
// ?principal=ID (which the gateway checks the approver approves for).
func standingOwner(r *http.Request) (approver, principal string, err error) {
	approver = approverOf(r)
	if approver == "" {
		return "", principalOf(r), nil
	}
	principal = r.URL.Query().Get("principal")
	if principal == "" {
		return "", "", httpx.Errorf(toolgatetype.CodeInvalidRequest, "an approver names the principal whose standing approvals these are: ?principal=ID")
	}
	return approver, principal, nil
}

func (h *Handler) listApprovals(w http.ResponseWriter, r *http.Request) {
	approver, principal, err := standingOwner(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var list []toolgatetype.ToolApproval
	if approver != "" {
		list, err = h.gw.ApprovalsFor(r.Context(), approver, principal)
	} else {
		list, err = h.gw.Approvals(r.Context(), principal)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"approvals": list})
}

func (h *Handler) putApproval(w http.ResponseWriter, r *http.Request) {
	var in toolgatetype.ApprovalBody
	if err := h.readJSON(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	if in.Mode == nil {
		h.writeError(w, r, httpx.Errorf(toolgatetype.CodeInvalidRequest, "mode is required: %s, %s or %s",
			toolgatetype.ApprovalAskEveryCall, toolgatetype.ApprovalAskChargedCalls, toolgatetype.ApprovalNeverAsk))
		return
	}
	digest := ""
	if in.ManifestDigest != nil {
		digest = *in.ManifestDigest
	}
	approver, principal, err := standingOwner(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var a *toolgatetype.StandingApproval
	if approver != "" {
		a, err = h.gw.SetApprovalFor(r.Context(), approver, principal, r.PathValue("tool"), *in.Mode, digest)
	} else {
		a, err = h.gw.SetApproval(r.Context(), principal, r.PathValue("tool"), *in.Mode, digest)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, a)
}

func (h *Handler) deleteApproval(w http.ResponseWriter, r *http.Request) {
	approver, principal, err := standingOwner(r)
	if err == nil && approver != "" {
		err = h.gw.DeleteApprovalFor(r.Context(), approver, principal, r.PathValue("tool"))
	} else if err == nil {
		err = h.gw.DeleteApproval(r.Context(), principal, r.PathValue("tool"))
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
