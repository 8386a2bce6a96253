package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/mcpupstream"
)

// mcpExample is the example of "mcpServers" in the specification, with trust
// and spend controls naming a slug of one of its tools.
const mcpExample = `{
  "principals": [{"id": "alice", "apiKeys": ["tg_alice"],
                  "spendControls": {"tools": {"files.write-file": {"dailyLimitUsd": "1.0000"}}}}],
  "trust": {"files.write-file": {"paymentVerified": true, "endpointVerified": true}},
  "pins": "toolgate.pins.json",
  "mcpServers": [
    {"id": "files",
     "command": ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/shared"],
     "env": {"LOG_LEVEL": "warn", "API_TOKEN": {"env": "FILES_TOKEN"}},
     "provider": {"name": "Shared files", "trustTier": "basic"},
     "defaults": {"pricing": {"type": "per_call", "amount": "0.0000"},
                  "capabilities": {"readOnly": true, "openWorld": false, "dataRetention": "none"}},
     "tools": {"write_file": {"pricing": {"type": "per_call", "amount": "0.0100"},
                              "capabilities": {"readOnly": false, "writesExternalData": true, "destructive": true}},
               "move_file": {"enabled": false}},
     "include": ["*"],
     "callTimeout": "30s"},
    {"id": "tickets",
     "url": "https://mcp.tickets.example/mcp",
     "credential": {"header": "Authorization", "scheme": "Bearer", "env": "TICKETS_TOKEN"}}
  ]
}`

func TestParseConfigMCPServers(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(mcpExample))
	require.NoError(t, err)
	require.Len(t, cfg.MCPServers, 2)
	files, tickets := cfg.MCPServers[0], cfg.MCPServers[1]
	assert.Equal(t, "files", files.ID)
	assert.Equal(t, []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/shared"}, files.Command)
	assert.Equal(t, map[string]mcpupstream.Value{"LOG_LEVEL": {Literal: "warn"}, "API_TOKEN": {Env: "FILES_TOKEN"}}, files.Env)
	assert.Equal(t, mcpupstream.Provider{Name: "Shared files", TrustTier: "basic"}, files.Provider)
	assert.Equal(t, "0.0000", files.Defaults.Pricing.Amount.StringFixed(4))
	assert.True(t, *files.Defaults.Capabilities.ReadOnly)
	assert.Equal(t, "none", files.Defaults.Capabilities.DataRetention)
	assert.Equal(t, "0.0100", files.Tools["write_file"].Pricing.Amount.StringFixed(4))
	assert.True(t, *files.Tools["write_file"].Capabilities.Destructive)
	assert.False(t, *files.Tools["move_file"].Enabled)
	assert.Equal(t, []string{"*"}, files.Include)
	assert.Equal(t, 30*time.Second, files.CallTimeout)
	assert.Equal(t, "https://mcp.tickets.example/mcp", tickets.URL)
	assert.Equal(t, &mcpupstream.Credential{Header: "Authorization", Scheme: "Bearer", Value: mcpupstream.Value{Env: "TICKETS_TOKEN"}}, tickets.Credential)
	assert.Equal(t, "toolgate.pins.json", cfg.PinsFile)
	assert.True(t, *cfg.Trust["files.write-file"].EndpointVerified)
	assert.Equal(t, "1.0000", cfg.Principals[0].SpendControls.Tools["files.write-file"].DailyLimitUSD.StringFixed(4))

	// The trust of a server's tool goes to the server, by slug.
	servers := cfg.MCPUpstreams()
	assert.True(t, *servers[0].Trust["files.write-file"].PaymentVerified)
	assert.Nil(t, cfg.MCPServers[0].Trust, "the config itself is left as it was")
}

func TestLoadConfigMCPPathsAreTheConfigFilesNeighbours(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "toolgate.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"pins": "pins/toolgate.pins.json", "mcpServers": [
		{"id": "a", "command": ["srv"], "env": {"T": {"file": "secrets/t"}, "U": {"file": "/abs/u"}}},
		{"id": "b", "url": "https://x.example/mcp", "credential": {"header": "X-Key", "file": "k"}}]}`), 0o600))
	cfg, err := LoadConfig(path)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "pins", "toolgate.pins.json"), cfg.PinsFile)
	assert.Equal(t, filepath.Join(dir, "secrets", "t"), cfg.MCPServers[0].Env["T"].File)
	assert.Equal(t, "/abs/u", cfg.MCPServers[0].Env["U"].File)
	assert.Equal(t, filepath.Join(dir, "k"), cfg.MCPServers[1].Credential.Value.File)
}

// A command's program named by a path is the config file's neighbour too;
// one named bare is PATH's, and arguments are the program's own.
func TestLoadConfigMCPCommandPathsAreTheConfigFilesNeighbours(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "toolgate.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"mcpServers": [
		{"id": "a", "command": ["bin/notes-server", "data/notes"]},
		{"id": "b", "command": ["./server"]},
		{"id": "c", "command": ["npx", "-y", "some-server"]},
		{"id": "d", "command": ["/usr/local/bin/server"]}]}`), 0o600))
	cfg, err := LoadConfig(path)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "bin", "notes-server"), "data/notes"}, cfg.MCPServers[0].Command)
	assert.Equal(t, []string{filepath.Join(dir, "server")}, cfg.MCPServers[1].Command)
	assert.Equal(t, []string{"npx", "-y", "some-server"}, cfg.MCPServers[2].Command)
	assert.Equal(t, []string{"/usr/local/bin/server"}, cfg.MCPServers[3].Command)
}

func TestParseConfigMCPServersErrors(t *testing.T) {
	t.Parallel()
	server := func(fields string) string { return `{"mcpServers": [{"id": "files"` + fields + `}]}` }
	tests := []struct{ name, doc, want string }{
		{"unknown field", server(`, "command": ["x"], "cmd": ["x"]`), `config: mcpServers[0]: unknown field "cmd"`},
		{"no id", `{"mcpServers": [{"command": ["x"]}]}`, `config: mcpServers[0]: id is required`},
		{"bad id", `{"mcpServers": [{"id": "Files_1", "command": ["x"]}]}`, `config: mcpServers[0].id: "Files_1" must be 1 to 24 lowercase letters and digits, with single dashes between them`},
		{"long id", `{"mcpServers": [{"id": "a234567890123456789012345", "command": ["x"]}]}`, `config: mcpServers[0].id: ...`},
		{"twice", `{"mcpServers": [{"id": "a", "command": ["x"]}, {"id": "a", "url": "https://x.example"}]}`, `config: mcpServers[1].id: "a" names two servers`},
		{"neither", server(``), `config: mcpServers[0]: give exactly one of command (a program the gateway starts) and url (a streamable HTTP server)`},
		{"both", server(`, "command": ["x"], "url": "https://x.example"`), `config: mcpServers[0]: give exactly one of ...`},
		{"command as a string", server(`, "command": "npx server"`), `config: mcpServers[0].command: must be an array: ...`},
		{"empty command", server(`, "command": []`), `config: mcpServers[0].command: must name the program to start`},
		{"bad env value", server(`, "command": ["x"], "env": {"T": 3}`), `config: mcpServers[0].env.T: must be a string, {"env": "NAME"} or {"file": "/path"}, not a number`},
		{"env of two sources", server(`, "command": ["x"], "env": {"T": {"env": "A", "file": "b"}}`), `config: mcpServers[0].env.T: give exactly one of env and file`},
		{"env for a url", server(`, "url": "https://x.example", "env": {"T": "v"}`), `config: mcpServers[0].env: applies only to a command; a url's server gets a credential`},
		{"credential for a command", server(`, "command": ["x"], "credential": {"header": "Authorization", "env": "T"}`), `config: mcpServers[0].credential: applies only to a url: it is sent to the url's origin and nowhere else`},
		{"credential in clear", server(`, "url": "https://x.example", "credential": {"header": "Authorization", "value": "hunter2"}`), `config: mcpServers[0].credential: unknown field "value"`},
		{"credential without a source", server(`, "url": "https://x.example", "credential": {"header": "Authorization"}`), `config: mcpServers[0].credential: give exactly one of env and file: ...`},
		{"url with a password", server(`, "url": "https://me:hunter2@x.example"`), `config: mcpServers[0].url: must be an http or https URL with a host, ...`},
		{"ftp url", server(`, "url": "ftp://x.example"`), `config: mcpServers[0].url: must be an http or https URL with a host, ...`},
		{"bad glob", server(`, "command": ["x"], "include": ["[a"]`), `config: mcpServers[0].include[0]: "[a" is not a valid pattern ...`},
		{"bad price", server(`, "command": ["x"], "tools": {"t": {"pricing": {"type": "per_call", "amount": "-1"}}}`), `config: mcpServers[0].tools.t.pricing.amount: "-1" must be a non-negative amount with at most 4 decimals`},
		{"price of 21 digits", server(`, "command": ["x"], "tools": {"t": {"pricing": {"type": "per_call", "amount": "100000000000000000000"}}}`), `config: mcpServers[0].tools.t.pricing.amount: must have at most 20 digits before the point`},
		{"price of 900,000 digits", server(`, "command": ["x"], "defaults": {"pricing": {"type": "per_call", "amount": "` + strings.Repeat("9", 900_000) + `"}}`), `config: mcpServers[0].defaults.pricing.amount: must have at most 20 digits before the point`},
		{"free with a price", server(`, "command": ["x"], "defaults": {"pricing": {"type": "free", "amount": "1"}}`), `config: mcpServers[0].defaults.pricing.amount: a free tool has no amount`},
		{"enabled in defaults", server(`, "command": ["x"], "defaults": {"enabled": false}`), `config: mcpServers[0].defaults: unknown field "enabled"`},
		{"bad capability", server(`, "command": ["x"], "defaults": {"capabilities": {"readOnly": "yes"}}`), `config: mcpServers[0].defaults.capabilities.readOnly: must be true or false, not a string`},
		{"unknown capability", server(`, "command": ["x"], "defaults": {"capabilities": {"readonly": true}}`), `config: mcpServers[0].defaults.capabilities: unknown field "readonly": did you mean "readOnly"?`},
		{"call timeout past the lease", server(`, "command": ["x"], "callTimeout": "90s"`), `config: mcpServers[0].callTimeout: 1m30s must be shorter than idempotencyLease (1m0s), ...`},
		{"default call timeout past a short lease", `{"idempotencyLease": "20s", "upstreamTimeout": "5s", "mcpServers": [{"id": "a", "command": ["x"]}]}`, `config: mcpServers[0].callTimeout: 30s must be shorter than idempotencyLease (20s), ...`},
		{"pins without servers", `{"pins": "toolgate.pins.json"}`, `config: pins: pins the tools of mcpServers, and there are none`},
		{"trust of another server's tool", `{"trust": {"other.tool": {"endpointVerified": true}}}`, `config: trust: no tool "other.tool" ...`},
		{"trust of a bad slug", `{"trust": {"files.Bad_Name": {"endpointVerified": true}}, "mcpServers": [{"id": "files", "command": ["x"]}]}`, `config: trust: "files.Bad_Name" is not the slug of an MCP server's tool ...`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig([]byte(tt.doc))
			require.Error(t, err)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			if prefix, ok := strings.CutSuffix(tt.want, "..."); ok {
				assert.True(t, strings.HasPrefix(err.Error(), prefix), "got %q, want it to start with %q", err, prefix)
			} else {
				assert.Equal(t, tt.want, err.Error())
			}
			assert.NotContains(t, err.Error(), "hunter2")
		})
	}
}

// TestREADMEMCPServersExample keeps the README's config for gating MCP
// servers valid.
func TestREADMEMCPServersExample(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig(readmeConfigExample(t, "Gating your MCP servers"))
	require.NoError(t, err)
	require.Len(t, cfg.MCPServers, 1)
	assert.Equal(t, "files", cfg.MCPServers[0].ID)
}
