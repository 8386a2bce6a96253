package registry_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

const testOrigin = "https://api.example.com"

// newTool returns a minimal valid, immutable, free tool. Every call returns
// fresh slices and pointers, so tests can change it freely.
func newTool(slug string) *registry.Tool {
	return &registry.Tool{
		Slug:        slug,
		Name:        "Tool " + slug,
		Description: "Looks things up for " + slug,
		Category:    "testing",
		Tags:        []string{"alpha", "beta"},
		Provider:    registry.Provider{Name: "Acme", TrustTier: "basic"},
		Endpoint:    registry.Endpoint{Origin: testOrigin, Method: http.MethodGet, Path: "/v1/lookup"},
		Version:     1,
		Immutable:   true,
		Capabilities: &registry.Capabilities{
			ReadOnly:               registry.Bool(true),
			AllowedOutboundDomains: []string{"cdn.example.com"},
		},
		Pricing:      registry.Pricing{Type: registry.PricingFree},
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`),
		BuildRequest: func(ctx context.Context, origin string, _ json.RawMessage) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodGet, origin+"/v1/lookup", nil)
		},
		Normalize: func(registry.UpstreamResponse) (any, error) {
			return map[string]any{"answer": "42"}, nil
		},
	}
}

// register registers t into r and returns its current version.
func register(t *testing.T, r *registry.Registry, tool *registry.Tool) *registry.Version {
	t.Helper()
	require.NoError(t, r.Register(tool))
	v, err := r.Lookup(tool.Slug)
	require.NoError(t, err)
	return v
}

// digestOf is the manifest digest of tool served from origin.
func digestOf(t *testing.T, tool *registry.Tool, origin string) string {
	t.Helper()
	d, err := registry.ManifestOf(tool, origin).Digest()
	require.NoError(t, err)
	return d
}
