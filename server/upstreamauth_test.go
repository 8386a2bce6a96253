package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseConfigTokenExchange(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(`{"mcpServers": [{"id": "people", "url": "https://people.example/mcp",
		"auth": {"tokenExchange": {"tokenUrl": "https://idp.example/token", "audience": "https://people.example",
			"scope": "people:read", "resource": "https://people.example/mcp", "clientId": "gateway", "clientSecret": {"env": "PEOPLE_EXCHANGE_SECRET"}}}}]}`))
	require.NoError(t, err)
	te := cfg.MCPServers[0].TokenExchange
	require.NotNil(t, te)
	assert.Equal(t, "https://idp.example/token", te.TokenURL)
	assert.Equal(t, "https://people.example", te.Audience)
	assert.Equal(t, "people:read", te.Scope)
	assert.Equal(t, "https://people.example/mcp", te.Resource)
	assert.Equal(t, "gateway", te.ClientID)
	assert.Equal(t, "PEOPLE_EXCHANGE_SECRET", te.ClientSecret.Env)
}

// Mistakes in a token exchange are refused at start, naming the field.
func TestParseConfigTokenExchangeErrors(t *testing.T) {
	t.Parallel()
	const secret = `"clientId": "gateway", "clientSecret": {"env": "S"}`
	for _, c := range []struct {
		name, exchange, want string
		command              bool
	}{
		{"no tokenUrl", `{"audience": "https://people.example", ` + secret + `}`,
			"config: mcpServers[0].auth.tokenExchange.tokenUrl: is required: the identity provider's token endpoint", false},
		{"no audience", `{"tokenUrl": "https://idp.example/token", ` + secret + `}`,
			"config: mcpServers[0].auth.tokenExchange.audience: is required: who the exchanged token is for", false},
		{"a tokenUrl that is no URL", `{"tokenUrl": "idp.example/token", "audience": "https://people.example", ` + secret + `}`,
			"config: mcpServers[0].auth.tokenExchange.tokenUrl: must be an http or https URL with a host, and no credentials", false},
		{"no client secret", `{"tokenUrl": "https://idp.example/token", "audience": "https://people.example", "clientId": "gateway"}`,
			`config: mcpServers[0].auth.tokenExchange.clientSecret: is required: a string, {"env": NAME} or {"file": PATH}`, false},
		{"a stdio server", `{"tokenUrl": "https://idp.example/token", "audience": "https://people.example", ` + secret + `}`,
			"config: mcpServers[0].auth.tokenExchange: applies only to a url: a command's server cannot be sent a caller's token", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			where := `"url": "https://people.example/mcp"`
			if c.command {
				where = `"command": ["people-server"]`
			}
			_, err := ParseConfig([]byte(`{"mcpServers": [{"id": "people", ` + where + `, "auth": {"tokenExchange": ` + c.exchange + `}}]}`))
			require.Error(t, err)
			assert.Equal(t, c.want, err.Error())
		})
	}
}
