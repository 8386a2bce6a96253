package toolgate

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/storage"
)

// RegistryEntry is a tool as the registry shows it: identity, trust, risk,
// policy, usage, pricing, schemas, how to call it and where its documentation
// lives. It carries the policy for any caller, before standing approvals.
//
// Access.Endpoint and Documentation name routes, which only the layer that
// serves them knows: httpapi fills them in; from the library they are empty.
type RegistryEntry struct {
	Kind          string          `json:"kind"`
	ID            string          `json:"id"`
	Slug          string          `json:"slug"`
	Name          string          `json:"name"`
	LogoURL       *string         `json:"logoUrl"`
	Description   string          `json:"description"`
	Category      string          `json:"category"`
	Tags          []string        `json:"tags"`
	Provider      EntryProvider   `json:"provider"`
	Version       EntryVersion    `json:"version"`
	Trust         EntryTrust      `json:"trust"`
	Risk          EntryRisk       `json:"risk"`
	Policy        Policy          `json:"policy"`
	Usage         Usage           `json:"usage"`
	Pricing       EntryPricing    `json:"pricing"`
	InputSchema   json.RawMessage `json:"inputSchema"`
	OutputSchema  json.RawMessage `json:"outputSchema"`
	Access        EntryAccess     `json:"access"`
	Documentation EntryDocs       `json:"documentation"`
	UpdatedAt     time.Time       `json:"updatedAt"`

	version *registry.Version
	cost    Cost
}

// ToolVersion is the registered version the entry describes, so that
// everything shown beside an entry (schemas, examples) comes from the same
// version even when a new one is published meanwhile.
func (e *RegistryEntry) ToolVersion() *registry.Version { return e.version }

// CallCost is what one call of the tool costs under this gateway: the
// price, the gateway fee and the total, as a quote states them.
func (e *RegistryEntry) CallCost() Cost { return e.cost }

// EntryProvider is the provider of a registry entry.
type EntryProvider struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	TrustTier string `json:"trustTier"`
}

// EntryVersion is the version of a registry entry.
type EntryVersion struct {
	Number         int     `json:"number"`
	ManifestDigest *string `json:"manifestDigest"`
	Immutable      bool    `json:"immutable"`
}

// EntryTrust gathers what is known about a tool's trustworthiness.
type EntryTrust struct {
	Provider struct {
		Tier            string `json:"tier"`
		PaymentVerified bool   `json:"paymentVerified"`
	} `json:"provider"`
	Endpoint struct {
		Status     string     `json:"status"`
		Origin     string     `json:"origin"`
		VerifiedAt *time.Time `json:"verifiedAt"`
	} `json:"endpoint"`
	Version struct {
		Status         string  `json:"status"`
		ManifestDigest *string `json:"manifestDigest"`
	} `json:"version"`
	Behavior struct {
		Status   string `json:"status"`
		Evidence string `json:"evidence"`
	} `json:"behavior"`
}

// EntryRisk is the risk of a registry entry.
type EntryRisk struct {
	Level        RiskLevel                       `json:"level"`
	Capabilities registry.NormalizedCapabilities `json:"capabilities"`
}

// EntryPricing is the price of a registry entry, before the gateway fee.
type EntryPricing struct {
	Type     string `json:"type"`
	Currency string `json:"currency"`
	Amount   string `json:"amount"`
}

// EntryAccess says how a tool is called: through the gateway, at the call
// route of the layer that serves it.
type EntryAccess struct {
	Mode     string `json:"mode"`
	Endpoint struct {
		Method string `json:"method"`
		Path   string `json:"path"`
	} `json:"endpoint"`
}

// EntryDocs are where a tool's documentation is served, set by the layer
// that serves it.
type EntryDocs struct {
	JSON    string `json:"json"`
	OpenAPI string `json:"openapi"`
	LLMs    string `json:"llms"`
	Human   string `json:"human"`
}

// RegistryList is a page of registry entries.
type RegistryList struct {
	Tools []RegistryEntry `json:"tools"`
	Total int             `json:"total"`
}

// EntryOptions tune how entries are shown.
type EntryOptions struct {
	// ExposeUsageCounts shows exact usage counts next to the coarse labels.
	ExposeUsageCounts bool
}

// Entry returns the registry entry of a tool by slug or id.
func (g *Gateway) Entry(ctx context.Context, tool string, opts EntryOptions) (*RegistryEntry, error) {
	v, err := g.lookup(tool)
	if err != nil {
		return nil, err
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
// limit is clamped to 1..100 (0 means 20) and offset to 0 or more.
func (g *Gateway) List(ctx context.Context, q string, limit, offset int, opts EntryOptions) (*RegistryList, error) {
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
	versions, total := g.registry.List(q, limit, offset)
	usage, err := g.usageOf(ctx, versions)
	if err != nil {
		return nil, internalError(err)
	}
	out := &RegistryList{Tools: make([]RegistryEntry, 0, len(versions)), Total: total}
	for _, v := range versions {
		out.Tools = append(out.Tools, g.entryOf(v, usage[v.Tool.ID], opts))
	}
	return out, nil
}

// usageOf returns the usage of the listed versions' tools.
func (g *Gateway) usageOf(ctx context.Context, versions []*registry.Version) (map[string]storage.Usage, error) {
	ids := make([]string, len(versions))
	for i, v := range versions {
		ids[i] = v.Tool.ID
	}
	return storage.UsageOf(ctx, g.store, ids)
}

// entryOf builds the entry of a tool version with its usage.
func (g *Gateway) entryOf(v *registry.Version, u storage.Usage, opts EntryOptions) RegistryEntry {
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
	e := RegistryEntry{
		Kind:         "tool",
		ID:           t.ID,
		Slug:         t.Slug,
		Name:         t.Name,
		LogoURL:      t.LogoURL,
		Description:  t.Description,
		Category:     t.Category,
		Tags:         tags,
		Provider:     EntryProvider{ID: t.Provider.ID, Name: t.Provider.Name, TrustTier: t.Provider.TrustTier},
		Version:      EntryVersion{Number: t.Version, ManifestDigest: digest, Immutable: digest != nil},
		Risk:         EntryRisk{Level: policy.RiskLevel, Capabilities: v.Capabilities},
		Policy:       policy,
		Usage:        usageOf(u, opts.ExposeUsageCounts),
		Pricing:      EntryPricing{Type: t.Pricing.Type, Currency: t.Pricing.Currency, Amount: usd(t.Pricing.Amount)},
		InputSchema:  t.InputSchema,
		OutputSchema: out,
		UpdatedAt:    t.UpdatedAt,
		version:      v,
	}
	amt := priceWithFee(t.Pricing.Amount, g.feeRate)
	e.cost = Cost{PriceUSD: usd(amt.Price), FeeUSD: usd(amt.Fee), TotalUSD: usd(amt.Total), Currency: "USD"}
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
	e.Trust.Behavior.Status = behaviorStatus(u)
	e.Trust.Behavior.Evidence = "gateway_calls"
	e.Access.Mode = "gateway"
	return e
}
