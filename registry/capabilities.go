package registry

import (
	"net/url"
	"sort"
	"strings"

	"github.com/toolgate/toolgate/toolgatetype"
)

// Capabilities is what a provider declares its tool may do. Nil fields are
// left to the defaults of Normalize.
type Capabilities struct {
	ReadOnly               *bool    `json:"readOnly,omitempty"`
	Destructive            *bool    `json:"destructive,omitempty"`
	Idempotent             *bool    `json:"idempotent,omitempty"`
	OpenWorld              *bool    `json:"openWorld,omitempty"`
	ReadsPrivateData       *bool    `json:"readsPrivateData,omitempty"`
	SeesUntrustedContent   *bool    `json:"seesUntrustedContent,omitempty"`
	WritesExternalData     *bool    `json:"writesExternalData,omitempty"`
	SendsMessages          *bool    `json:"sendsMessages,omitempty"`
	SpendsMoney            *bool    `json:"spendsMoney,omitempty"`
	ExecutesCode           *bool    `json:"executesCode,omitempty"`
	RequiresUserCredential *bool    `json:"requiresUserCredential,omitempty"`
	AllowedOutboundDomains []string `json:"allowedOutboundDomains,omitempty"`
	// DataRetention is "none", "stored" or "unknown" (the default).
	DataRetention string `json:"dataRetention,omitempty"`
}

// Data retention values.
const (
	RetentionNone    = "none"
	RetentionStored  = "stored"
	RetentionUnknown = "unknown"
)

// NormalizeCapabilities applies the cautious defaults: an undeclared set is
// declared false with the cautious defaults; in a declared one openWorld and
// seesUntrustedContent default to true, dataRetention to "unknown" and the
// rest to false. Outbound domains are lowercased, deduplicated, sorted, and
// always include the host of origin, since the tool must at least reach it.
func NormalizeCapabilities(c *Capabilities, origin string) toolgatetype.NormalizedCapabilities {
	n := toolgatetype.NormalizedCapabilities{
		OpenWorld:            true,
		SeesUntrustedContent: true,
		DataRetention:        RetentionUnknown,
	}
	var domains []string
	if c != nil {
		n.Declared = true
		set := func(dst *bool, src *bool) {
			if src != nil {
				*dst = *src
			}
		}
		set(&n.ReadOnly, c.ReadOnly)
		set(&n.Destructive, c.Destructive)
		set(&n.Idempotent, c.Idempotent)
		set(&n.OpenWorld, c.OpenWorld)
		set(&n.ReadsPrivateData, c.ReadsPrivateData)
		set(&n.SeesUntrustedContent, c.SeesUntrustedContent)
		set(&n.WritesExternalData, c.WritesExternalData)
		set(&n.SendsMessages, c.SendsMessages)
		set(&n.SpendsMoney, c.SpendsMoney)
		set(&n.ExecutesCode, c.ExecutesCode)
		set(&n.RequiresUserCredential, c.RequiresUserCredential)
		if c.DataRetention != "" {
			n.DataRetention = c.DataRetention
		}
		domains = append(domains, c.AllowedOutboundDomains...)
	}
	if u, err := url.Parse(origin); err == nil && u.Hostname() != "" {
		domains = append(domains, u.Hostname())
	}
	n.AllowedOutboundDomains = normalizeDomains(domains)
	return n
}

func normalizeDomains(in []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, d := range in {
		d = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
		if d == "" || seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// Bool returns a pointer to b, for declaring capabilities in literals.
func Bool(b bool) *bool { return &b }
