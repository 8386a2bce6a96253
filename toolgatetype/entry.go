package toolgatetype

import (
	"encoding/json"
	"time"
)

// RegistryEntry is a tool as the registry shows it: identity, trust, risk,
// policy, usage, pricing, schemas, how to call it and where its documentation
// lives. It carries the policy for any caller, before standing approvals.
//
// Access.Endpoint and Documentation name routes, which only the layer that
// serves them knows: the HTTP layers fill them in; from the library they are empty.
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
	// Upstream is present only for a tool an upstream MCP server serves.
	Upstream *EntryUpstream `json:"upstream,omitempty"`
	// Rules are the organization's rules that may decide a call of the
	// tool, for some caller or input; absent when none may.
	Rules []ToolRule `json:"rules,omitempty"`
}

// EntryUpstream is where a tool served by an upstream MCP server comes
// from. Annotations are the provider's claims about the tool, as served
// (readOnlyHint, destructiveHint, ...): shown, never trusted, so they never
// change its risk or policy, which come from the operator's configuration.
type EntryUpstream struct {
	Server    string          `json:"server"`
	Transport string          `json:"transport"`
	Name      string          `json:"name"` // the tool's name on the upstream
	Claims    json.RawMessage `json:"annotations"`
	// Pinned says the operator pins this server's tools; PinnedDigest is
	// the digest pinned for this tool, null when none is. The digest now
	// served is version.manifestDigest.
	Pinned       bool    `json:"pinned"`
	PinnedDigest *string `json:"pinnedDigest"`
}

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
	Level        RiskLevel              `json:"level"`
	Capabilities NormalizedCapabilities `json:"capabilities"`
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
	// Principal, when set, lists the tools as this caller sees them: a
	// tool a rule hides from it is absent (its token claims ride in the
	// context, rules.WithClaims).
	Principal string
}
