package mcpupstream_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/mcpupstream"
	"github.com/toolgate/toolgate/registry"
)

func TestStartRefusesMistakesNamingTheField(t *testing.T) {
	t.Parallel()
	noop := func() mcp.Transport { return nil }
	tests := []struct {
		name    string
		servers []mcpupstream.Server
		field   string
	}{
		{"bad id", []mcpupstream.Server{{ID: "Files", Command: []string{"x"}}}, "servers[0].id"},
		{"long id", []mcpupstream.Server{{ID: "a234567890123456789012345", Command: []string{"x"}}}, "servers[0].id"},
		{"two ids", []mcpupstream.Server{{ID: "a", Command: []string{"x"}}, {ID: "a", URL: "https://x.example"}}, "servers[1].id"},
		{"no way", []mcpupstream.Server{{ID: "a"}}, "servers[0].command"},
		{"two ways", []mcpupstream.Server{{ID: "a", Command: []string{"x"}, Transport: noop}}, "servers[0].command"},
		{"env for a url", []mcpupstream.Server{{ID: "a", URL: "https://x.example", Env: map[string]mcpupstream.Value{"A": {Literal: "b"}}}}, "servers[0].env"},
		{"credential for a command", []mcpupstream.Server{{ID: "a", Command: []string{"x"}, Credential: &mcpupstream.Credential{Header: "X"}}}, "servers[0].credential"},
		{"bad header", []mcpupstream.Server{{ID: "a", URL: "https://x.example", Credential: &mcpupstream.Credential{Header: "X Key"}}}, "servers[0].credential.header"},
		{"url with a password", []mcpupstream.Server{{ID: "a", URL: "https://u:p@x.example"}}, "servers[0].url"},
		{"token exchange for a command", []mcpupstream.Server{{ID: "a", Command: []string{"x"}, TokenExchange: &mcpupstream.TokenExchange{
			TokenURL: "https://idp.example/token", Audience: "https://x.example"}}}, "servers[0].auth.tokenExchange"},
		{"token exchange without tokenUrl", []mcpupstream.Server{{ID: "a", URL: "https://x.example", TokenExchange: &mcpupstream.TokenExchange{
			Audience: "https://x.example"}}}, "servers[0].auth.tokenExchange.tokenUrl"},
		{"token exchange without audience", []mcpupstream.Server{{ID: "a", URL: "https://x.example", TokenExchange: &mcpupstream.TokenExchange{
			TokenURL: "https://idp.example/token"}}}, "servers[0].auth.tokenExchange.audience"},
		{"bad glob", []mcpupstream.Server{{ID: "a", Command: []string{"x"}, Include: []string{"["}}}, "servers[0].include[0]"},
		{"bad price", []mcpupstream.Server{{ID: "a", Command: []string{"x"}, Tools: map[string]mcpupstream.ToolConfig{
			"t": {Pricing: &registry.Pricing{Type: registry.PricingFree, Amount: decimal.NewFromInt(1)}}}}}, "servers[0].tools.t.pricing"},
		{"price of 21 digits", []mcpupstream.Server{{ID: "a", Command: []string{"x"}, Defaults: mcpupstream.ToolConfig{
			Pricing: &registry.Pricing{Type: registry.PricingPerCall, Amount: decimal.New(1, 20)}}}}, "servers[0].defaults.pricing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mcpupstream.Start(context.Background(), registry.New(), tt.servers, nil)
			var ce *mcpupstream.ConfigError
			require.True(t, errors.As(err, &ce), "%v", err)
			require.Equal(t, tt.field, ce.Field)
		})
	}
}

func TestValuesPrintNoSecret(t *testing.T) {
	v := mcpupstream.Value{Literal: "hunter2-secret"}
	c := mcpupstream.Credential{Header: "Authorization", Value: v}
	for _, s := range []string{v.String(), v.GoString(), fmtV(c), fmtV(v)} {
		require.NotContains(t, s, "hunter2")
	}
}

func fmtV(v any) string { return fmt.Sprintf("%v %+v %#v", v, v, v) }
