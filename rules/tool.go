package rules

import (
	"encoding/json"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetype"
)

// ToolOf is version v of a tool as a rule sees it, with its risk as the
// gateway's policy classifies it. A Tool is built once per version by
// those who decide many calls of it.
func ToolOf(v *registry.Version, risk toolgatetype.RiskLevel) *Tool {
	t := v.Tool
	out := &Tool{
		Slug:         t.Slug,
		Name:         t.Name,
		Provider:     t.Provider.ID,
		Risk:         string(risk),
		Tags:         t.Tags,
		Capabilities: capabilities(v.Capabilities),
		PriceUSD:     t.Pricing.Amount.InexactFloat64(),
	}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	if t.Upstream != nil {
		out.Server = t.Upstream.Server
	}
	return out
}

// capabilities are c by their JSON names, as the docs show them.
func capabilities(c toolgatetype.NormalizedCapabilities) map[string]any {
	b, err := json.Marshal(c)
	m := map[string]any{}
	if err == nil {
		_ = json.Unmarshal(b, &m) // a struct marshalled is an object
	}
	return m
}
