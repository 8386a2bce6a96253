package httpapi

import (
	"net/http"

	"github.com/shopspring/decimal"
	"github.com/toolgate/toolgate"
	"github.com/toolgate/toolgate/storage"
)

// SpendControlsBody is a caller's own spend controls on the wire, the body
// of GET and PUT /v1/spend-controls. Amounts are decimal text; null or
// absent means "not set". Tools, when sent with PUT, replaces the per-tool
// controls (an empty object removes them all); absent, it keeps them.
type SpendControlsBody struct {
	MaxPerCallUSD      *string                          `json:"maxPerCallUsd"`
	DailyLimitUSD      *string                          `json:"dailyLimitUsd"`
	MonthlyLimitUSD    *string                          `json:"monthlyLimitUsd"`
	RateLimitPerMinute *int                             `json:"rateLimitPerMinute"`
	RateLimitPerHour   *int                             `json:"rateLimitPerHour"`
	Tools              map[string]ToolSpendControlsBody `json:"tools,omitzero"`
}

// ToolSpendControlsBody is a caller's own spend controls of one tool on the
// wire, the body of GET and PUT /v1/spend-controls/tools/{tool}.
type ToolSpendControlsBody struct {
	Allowed            *bool   `json:"allowed"`
	MaxPerCallUSD      *string `json:"maxPerCallUsd"`
	DailyLimitUSD      *string `json:"dailyLimitUsd"`
	MonthlyLimitUSD    *string `json:"monthlyLimitUsd"`
	RateLimitPerMinute *int    `json:"rateLimitPerMinute"`
	RateLimitPerHour   *int    `json:"rateLimitPerHour"`
}

func amountOut(d *decimal.Decimal) *string {
	if d == nil {
		return nil
	}
	s := d.StringFixed(4)
	return &s
}

func amountIn(s *string, field string) (*decimal.Decimal, error) {
	if s == nil {
		return nil, nil
	}
	d, err := decimal.NewFromString(*s)
	if err != nil {
		return nil, apiError(toolgate.CodeInvalidRequest, "%s must be a decimal amount as text, e.g. \"10.0000\"", field)
	}
	return &d, nil
}

// NewToolSpendControlsBody is t on the wire.
func NewToolSpendControlsBody(t storage.ToolSpendControls) ToolSpendControlsBody {
	return ToolSpendControlsBody{
		Allowed:            t.Allowed,
		MaxPerCallUSD:      amountOut(t.MaxPerCallUSD),
		DailyLimitUSD:      amountOut(t.DailyLimitUSD),
		MonthlyLimitUSD:    amountOut(t.MonthlyLimitUSD),
		RateLimitPerMinute: t.RateLimitPerMinute,
		RateLimitPerHour:   t.RateLimitPerHour,
	}
}

// ToolSpendControls reads b into the library's type; an amount that is not
// a decimal is invalid_request, naming the field.
func (b ToolSpendControlsBody) ToolSpendControls() (storage.ToolSpendControls, error) {
	return toolControlsIn(b, "")
}

func toolControlsIn(j ToolSpendControlsBody, prefix string) (storage.ToolSpendControls, error) {
	var t storage.ToolSpendControls
	var err error
	if t.MaxPerCallUSD, err = amountIn(j.MaxPerCallUSD, prefix+"maxPerCallUsd"); err != nil {
		return t, err
	}
	if t.DailyLimitUSD, err = amountIn(j.DailyLimitUSD, prefix+"dailyLimitUsd"); err != nil {
		return t, err
	}
	if t.MonthlyLimitUSD, err = amountIn(j.MonthlyLimitUSD, prefix+"monthlyLimitUsd"); err != nil {
		return t, err
	}
	t.Allowed, t.RateLimitPerMinute, t.RateLimitPerHour = j.Allowed, j.RateLimitPerMinute, j.RateLimitPerHour
	return t, nil
}

// NewSpendControlsBody is c on the wire. Tools is nil exactly when
// c.Tools is, so that a body sent with PUT keeps the per-tool controls
// when c has none to give.
func NewSpendControlsBody(c storage.SpendControls) SpendControlsBody {
	out := SpendControlsBody{
		MaxPerCallUSD:      amountOut(c.MaxPerCallUSD),
		DailyLimitUSD:      amountOut(c.DailyLimitUSD),
		MonthlyLimitUSD:    amountOut(c.MonthlyLimitUSD),
		RateLimitPerMinute: c.RateLimitPerMinute,
		RateLimitPerHour:   c.RateLimitPerHour,
	}
	if c.Tools != nil {
		out.Tools = make(map[string]ToolSpendControlsBody, len(c.Tools))
		for slug, t := range c.Tools {
			out.Tools[slug] = NewToolSpendControlsBody(t)
		}
	}
	return out
}

// SpendControls reads b into the library's type; an amount that is not a
// decimal is invalid_request, naming the field.
func (b SpendControlsBody) SpendControls() (storage.SpendControls, error) {
	global, err := toolControlsIn(ToolSpendControlsBody{
		MaxPerCallUSD: b.MaxPerCallUSD, DailyLimitUSD: b.DailyLimitUSD, MonthlyLimitUSD: b.MonthlyLimitUSD,
		RateLimitPerMinute: b.RateLimitPerMinute, RateLimitPerHour: b.RateLimitPerHour,
	}, "")
	if err != nil {
		return storage.SpendControls{}, err
	}
	c := storage.SpendControls{
		MaxPerCallUSD: global.MaxPerCallUSD, DailyLimitUSD: global.DailyLimitUSD, MonthlyLimitUSD: global.MonthlyLimitUSD,
		RateLimitPerMinute: global.RateLimitPerMinute, RateLimitPerHour: global.RateLimitPerHour,
	}
	if b.Tools != nil {
		c.Tools = make(map[string]storage.ToolSpendControls, len(b.Tools))
		for slug, t := range b.Tools {
			if c.Tools[slug], err = toolControlsIn(t, "tools."+slug+"."); err != nil {
				return storage.SpendControls{}, err
			}
		}
	}
	return c, nil
}

// controlsOut is what the API answers with: no tools member when there are
// none, whether the store keeps an empty map or none.
func controlsOut(c storage.SpendControls) SpendControlsBody {
	out := NewSpendControlsBody(c)
	if len(out.Tools) == 0 {
		out.Tools = nil
	}
	return out
}

// readJSON reads and strictly decodes a JSON request body.
func (h *handler) readJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if err := requireJSONContentType(r); err != nil {
		return err
	}
	body, err := h.readBody(w, r)
	if err != nil {
		return err
	}
	return decodeStrict(body, dst)
}

func (h *handler) getSpendControls(w http.ResponseWriter, r *http.Request) {
	c, err := h.gw.SpendControls(r.Context(), principalOf(r))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, controlsOut(c))
}

// putSpendControls replaces the caller's limits over all tools. The
// per-tool map is replaced when sent and kept when absent, in one atomic
// step of the store, so a concurrent change of one tool's limits survives.
func (h *handler) putSpendControls(w http.ResponseWriter, r *http.Request) {
	var in SpendControlsBody
	if err := h.readJSON(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	set, err := in.SpendControls()
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	for slug := range set.Tools {
		if _, err := h.gw.Registry().Lookup(slug); err != nil {
			h.writeError(w, r, apiError(toolgate.CodeToolNotFound, "no tool %q is registered", slug))
			return
		}
	}
	stored, err := h.gw.UpdateSpendControls(r.Context(), principalOf(r), func(c *storage.SpendControls) error {
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
	writeJSON(w, http.StatusOK, controlsOut(stored))
}

// toolSlug resolves the {tool} path value to a registered slug.
func (h *handler) toolSlug(r *http.Request) (string, error) {
	v, err := h.gw.Registry().Lookup(r.PathValue("tool"))
	if err != nil {
		return "", apiError(toolgate.CodeToolNotFound, "no tool %q is registered", r.PathValue("tool"))
	}
	return v.Tool.Slug, nil
}

func (h *handler) getToolSpendControls(w http.ResponseWriter, r *http.Request) {
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
		h.writeError(w, r, apiError(toolgate.CodeNotFound, "you have set no spend controls for %s", slug))
		return
	}
	writeJSON(w, http.StatusOK, NewToolSpendControlsBody(t))
}

func (h *handler) putToolSpendControls(w http.ResponseWriter, r *http.Request) {
	slug, err := h.toolSlug(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var in ToolSpendControlsBody
	if err := h.readJSON(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	t, err := in.ToolSpendControls()
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	h.updateToolControls(w, r, slug, &t)
}

func (h *handler) deleteToolSpendControls(w http.ResponseWriter, r *http.Request) {
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
func (h *handler) updateToolControls(w http.ResponseWriter, r *http.Request, slug string, t *storage.ToolSpendControls) {
	_, err := h.gw.UpdateSpendControls(r.Context(), principalOf(r), func(c *storage.SpendControls) error {
		if t == nil {
			if _, ok := c.Tools[slug]; !ok {
				return apiError(toolgate.CodeNotFound, "you have set no spend controls for %s", slug)
			}
			delete(c.Tools, slug)
			return nil
		}
		if c.Tools == nil {
			c.Tools = map[string]storage.ToolSpendControls{}
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
	writeJSON(w, http.StatusOK, NewToolSpendControlsBody(*t))
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
		return "", "", apiError(toolgate.CodeInvalidRequest, "an approver names the principal whose standing approvals these are: ?principal=ID")
	}
	return approver, principal, nil
}

func (h *handler) listApprovals(w http.ResponseWriter, r *http.Request) {
	approver, principal, err := standingOwner(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	var list []toolgate.ToolApproval
	if approver != "" {
		list, err = h.gw.ApprovalsFor(r.Context(), approver, principal)
	} else {
		list, err = h.gw.Approvals(r.Context(), principal)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": list})
}

// ApprovalBody is the body of PUT /v1/approvals/{tool}: the standing
// approval's mode and the manifest digest it approves.
type ApprovalBody struct {
	Mode           *storage.ApprovalMode `json:"mode"`
	ManifestDigest *string               `json:"manifestDigest"`
}

func (h *handler) putApproval(w http.ResponseWriter, r *http.Request) {
	var in ApprovalBody
	if err := h.readJSON(w, r, &in); err != nil {
		h.writeError(w, r, err)
		return
	}
	if in.Mode == nil {
		h.writeError(w, r, apiError(toolgate.CodeInvalidRequest, "mode is required: %s, %s or %s",
			storage.ApprovalAskEveryCall, storage.ApprovalAskChargedCalls, storage.ApprovalNeverAsk))
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
	var a *toolgate.StandingApproval
	if approver != "" {
		a, err = h.gw.SetApprovalFor(r.Context(), approver, principal, r.PathValue("tool"), *in.Mode, digest)
	} else {
		a, err = h.gw.SetApproval(r.Context(), principal, r.PathValue("tool"), *in.Mode, digest)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (h *handler) deleteApproval(w http.ResponseWriter, r *http.Request) {
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
