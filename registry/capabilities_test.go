package registry_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetype"
)

func TestNormalizeCapabilities(t *testing.T) {
	t.Parallel()
	defaults := func(declared bool, domains ...string) toolgatetype.NormalizedCapabilities {
		return toolgatetype.NormalizedCapabilities{
			Declared:               declared,
			OpenWorld:              true,
			SeesUntrustedContent:   true,
			DataRetention:          registry.RetentionUnknown,
			AllowedOutboundDomains: domains,
		}
	}
	cases := []struct {
		name   string
		caps   *registry.Capabilities
		origin string
		want   toolgatetype.NormalizedCapabilities
	}{
		{
			name:   "undeclared gets cautious defaults",
			caps:   nil,
			origin: "https://api.example.com",
			want:   defaults(false, "api.example.com"),
		},
		{
			name:   "declared empty gets the same defaults, declared",
			caps:   &registry.Capabilities{},
			origin: "https://api.example.com",
			want:   defaults(true, "api.example.com"),
		},
		{
			name: "every declared value wins over the defaults",
			caps: &registry.Capabilities{
				ReadOnly:               registry.Bool(true),
				Destructive:            registry.Bool(true),
				Idempotent:             registry.Bool(true),
				OpenWorld:              registry.Bool(false),
				ReadsPrivateData:       registry.Bool(true),
				SeesUntrustedContent:   registry.Bool(false),
				WritesExternalData:     registry.Bool(true),
				SendsMessages:          registry.Bool(true),
				SpendsMoney:            registry.Bool(true),
				ExecutesCode:           registry.Bool(true),
				RequiresUserCredential: registry.Bool(true),
				DataRetention:          registry.RetentionStored,
			},
			origin: "https://api.example.com",
			want: toolgatetype.NormalizedCapabilities{
				Declared: true, ReadOnly: true, Destructive: true, Idempotent: true, OpenWorld: false,
				ReadsPrivateData: true, SeesUntrustedContent: false, WritesExternalData: true,
				SendsMessages: true, SpendsMoney: true, ExecutesCode: true, RequiresUserCredential: true,
				DataRetention:          registry.RetentionStored,
				AllowedOutboundDomains: []string{"api.example.com"},
			},
		},
		{
			name: "domains lowercased, trimmed, trailing dot dropped, deduplicated, sorted, origin host added",
			caps: &registry.Capabilities{AllowedOutboundDomains: []string{
				" Zeta.Example.COM. ", "zeta.example.com", "", "  ", "b.example", "API.example.com.",
			}},
			origin: "https://API.Example.com:8443",
			want:   defaults(true, "api.example.com", "b.example", "zeta.example.com"),
		},
		{
			name:   "origin host only, without scheme, port or path",
			caps:   nil,
			origin: "http://127.0.0.1:8080/",
			want:   defaults(false, "127.0.0.1"),
		},
		{
			name:   "IPv6 origin host",
			caps:   nil,
			origin: "http://[::1]:8080",
			want:   defaults(false, "::1"),
		},
		{
			name:   "no origin host adds nothing",
			caps:   &registry.Capabilities{AllowedOutboundDomains: []string{"a.example"}},
			origin: "",
			want:   defaults(true, "a.example"),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.want, registry.NormalizeCapabilities(c.caps, c.origin))
		})
	}
}

func TestNormalizeCapabilitiesEmptyDomainsEncodeAsArray(t *testing.T) {
	t.Parallel()
	raw, err := json.Marshal(registry.NormalizeCapabilities(nil, ""))
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"allowedOutboundDomains":[]`)
	assert.Contains(t, string(raw), `"declared":false`)
}

func TestNormalizeCapabilitiesLeavesInputAlone(t *testing.T) {
	t.Parallel()
	caps := &registry.Capabilities{AllowedOutboundDomains: []string{"B.example", "a.example"}}
	registry.NormalizeCapabilities(caps, "https://c.example")
	assert.Equal(t, []string{"B.example", "a.example"}, caps.AllowedOutboundDomains)
}
