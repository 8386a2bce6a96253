package toolgate

import (
	"context"
	"encoding/json"
	"math"

	"github.com/toolgate/toolgate/internal/pricing"
	"github.com/toolgate/toolgate/internal/usagelabel"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
	"github.com/toolgate/toolgate/toolgatetype"
)

// Entry is a tool's registry entry as this gateway built it, with the
// version it describes and what one call of it costs, so that everything
// shown beside it comes from one version. It encodes as the entry alone.
type Entry struct {
	toolgatetype.RegistryEntry
	version *registry.Version
	cost    toolgatetype.Cost
}

// ToolVersion is the registered version the entry describes.
func (e *Entry) ToolVersion() *registry.Version { return e.version }

// CallCost is what one call of the tool costs under this gateway: the
// price, the gateway fee and the total, as a quote states them.
func (e *Entry) CallCost() toolgatetype.Cost { return e.cost }

// Entry returns the registry entry of a tool by slug or id.
func (g *Gateway) Entry(ctx context.Context, tool string, opts toolgatetype.EntryOptions) (*Entry, error) {
	v, err := g.lookup(tool)
	if err != nil {
		return nil, err
	}
	if opts.Principal != "" {
		if hide, _ := g.hidden(ctx, opts.Principal, v, false); hide {
			return nil, errToolNotFound(tool)
		}
	}
	u, err := g.store.Usage(ctx, v.Tool.ID)
	if err != nil {
		return nil, internalError(err)
	}
	e := g.entryOf(v, u, opts)
	return &e, nil
}

// List returns the tools matching q (a case-insensitive substring of name,
// description or category), verified endpoints first, then the newest.
// limit is clamped to 1..100 (0 means 20) and offset to 0 or more. total
// counts every match, not only this page's.
func (g *Gateway) List(ctx context.Context, q string, limit, offset int, opts toolgatetype.EntryOptions) (entries []Entry, total int, err error) {
	switch {
	case limit == 0:
		limit = 20
	case limit < 1:
		limit = 1
	case limit > 100:
		limit = 100
	}
	if offset < 0 {
		offset = 0
	}
	var versions []*registry.Version
	if opts.Principal != "" && g.rules.Load().Hides() {
		versions, total = g.visible(ctx, opts.Principal, q, limit, offset)
	} else {
		versions, total = g.registry.List(q, limit, offset)
	}
	usage, err := g.usageOf(ctx, versions)
	if err != nil {
		return nil, 0, internalError(err)
	}
	entries = make([]Entry, 0, len(versions))
	for _, v := range versions {
		entries = append(entries, g.entryOf(v, usage[v.Tool.ID], opts))
	}
	return entries, total, nil
}

// visible is registry.List of the tools principal sees: those no rule
// hides from it, paged after they are left out, so that pages and total
// count only what it sees.
func (g *Gateway) visible(ctx context.Context, principal, q string, limit, offset int) ([]*registry.Version, int) {
	all, _ := g.registry.List(q, math.MaxInt, 0)
	seen := all[:0:0]
	for _, v := range all {
		if hide, _ := g.hidden(ctx, principal, v, false); !hide {
			seen = append(seen, v)
		}
	}
	total := len(seen)
	if offset >= total {
		return nil, total
	}
	return seen[offset:min(offset+limit, total)], total
}

// usageOf returns the usage of the listed versions' tools.
func (g *Gateway) usageOf(ctx context.Context, versions []*registry.Version) (map[string]storage.Usage, error) {
	ids := make([]string, len(versions))
	for i, v := range versions {
		ids[i] = v.Tool.ID
	}
	return g.store.UsageOf(ctx, ids)
}

// entryOf builds the entry of a tool version with its usage.
func (g *Gateway) entryOf(v *registry.Version, u storage.Usage, opts toolgatetype.EntryOptions) Entry {
	t := v.Tool
	policy := EvaluatePolicy(v)
	var digest *string
	if v.Digest != "" {
		d := v.Digest
		digest = &d
	}
	tags := t.Tags
	if tags == nil {
		tags = []string{}
	}
	out := t.OutputSchema
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	e := toolgatetype.RegistryEntry{
		Kind:         "tool",
		ID:           t.ID,
		Slug:         t.Slug,
		Name:         t.Name,
		LogoURL:      t.LogoURL,
		Description:  t.Description,
		Category:     t.Category,
		Tags:         tags,
		Provider:     toolgatetype.EntryProvider{ID: t.Provider.ID, Name: t.Provider.Name, TrustTier: t.Provider.TrustTier},
		Version:      toolgatetype.EntryVersion{Number: t.Version, ManifestDigest: digest, Immutable: digest != nil},
		Risk:         toolgatetype.EntryRisk{Level: policy.RiskLevel, Capabilities: v.Capabilities},
		Policy:       policy,
		Usage:        usagelabel.Of(u, opts.ExposeUsageCounts),
		Pricing:      toolgatetype.EntryPricing{Type: t.Pricing.Type, Currency: t.Pricing.Currency, Amount: toolgatetype.FormatUSD(t.Pricing.Amount)},
		InputSchema:  t.InputSchema,
		OutputSchema: out,
		UpdatedAt:    t.UpdatedAt,
	}
	amt := pricing.WithFee(t.Pricing.Amount, g.feeRate)
	cost := toolgatetype.Cost{PriceUSD: toolgatetype.FormatUSD(amt.Price), FeeUSD: toolgatetype.FormatUSD(amt.Fee), TotalUSD: toolgatetype.FormatUSD(amt.Total), Currency: "USD"}
	e.Trust.Provider.Tier = t.Provider.TrustTier
	e.Trust.Provider.PaymentVerified = t.Provider.PaymentVerified
	e.Trust.Endpoint.Status = "unverified"
	if t.Endpoint.Verified {
		e.Trust.Endpoint.Status = "verified"
		e.Trust.Endpoint.VerifiedAt = t.Endpoint.VerifiedAt
	}
	e.Trust.Endpoint.Origin = v.Origin
	e.Trust.Version.Status = "legacy_unversioned"
	if digest != nil {
		e.Trust.Version.Status = "versioned"
	}
	e.Trust.Version.ManifestDigest = digest
	e.Trust.Behavior.Status = usagelabel.BehaviorStatus(u)
	e.Trust.Behavior.Evidence = "gateway_calls"
	e.Access.Mode = "gateway"
	e.Upstream = upstreamOf(t.Upstream)
	e.Rules = g.ruleTools.Applying(g.rules.Load(), v, policy.RiskLevel, g.ruleCost(v))
	return Entry{RegistryEntry: e, version: v, cost: cost}
}

// upstreamOf is the upstream part of the entry of a tool an upstream MCP
// server serves; nil for other tools.
func upstreamOf(u *registry.MCPUpstream) *toolgatetype.EntryUpstream {
	if u == nil {
		return nil
	}
	var def struct {
		Name        string          `json:"name"`
		Annotations json.RawMessage `json:"annotations"`
	}
	_ = json.Unmarshal(u.Definition, &def) // the registry's own encoding; absent fields stay empty
	claims := def.Annotations
	if len(claims) == 0 {
		claims = json.RawMessage("null")
	}
	e := &toolgatetype.EntryUpstream{Server: u.Server, Transport: u.Transport, Name: def.Name, Claims: claims, Pinned: u.PinRequired}
	if u.PinnedDigest != "" {
		d := u.PinnedDigest
		e.PinnedDigest = &d
	}
	return e
}
