package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

func sha256Hex(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// contractExample is the example configuration of the server's specification, with a real digest in
// place of its placeholder.
var contractExample = `{
  "listen": "127.0.0.1:8080",
  "storage": "memory",
  "quoteTTL": "5m",
  "feeRate": "0.10",
  "exposeUsageCounts": false,
  "principals": [
    {"id": "alice",
     "apiKeys": ["tg_dev_alice"],
     "apiKeySha256": ["` + sha256Hex("tg_kept_elsewhere") + `"],
     "spendControls": {"maxPerCallUsd": "25.0000", "dailyLimitUsd": "100.0000", "monthlyLimitUsd": "1000.0000",
                       "rateLimitPerMinute": 60, "rateLimitPerHour": 1000,
                       "tools": {"goal-data": {"allowed": true, "dailyLimitUsd": "0.2000"}}}}
  ],
  "upstreams": {"earthquake-search": "http://127.0.0.1:9001"},
  "trust": {"goal-data": {"paymentVerified": true, "endpointVerified": true}}
}`

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func TestParseConfigContractExample(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig([]byte(contractExample))
	require.NoError(t, err)

	assert.Equal(t, "127.0.0.1:8080", cfg.Listen)
	assert.Equal(t, "memory", cfg.Storage)
	assert.Equal(t, 5*time.Minute, cfg.QuoteTTL)
	require.NotNil(t, cfg.FeeRate)
	assert.True(t, cfg.FeeRate.Equal(dec("0.10")))
	assert.False(t, cfg.ExposeUsageCounts)

	require.Len(t, cfg.Principals, 1)
	p := cfg.Principals[0]
	assert.Equal(t, "alice", p.ID)
	assert.Equal(t, []string{"tg_dev_alice"}, p.APIKeys)
	assert.Equal(t, [][sha256.Size]byte{sha256.Sum256([]byte("tg_kept_elsewhere"))}, p.APIKeyDigests)
	sc := p.SpendControls
	assert.True(t, sc.MaxPerCallUSD.Equal(dec("25")))
	assert.True(t, sc.DailyLimitUSD.Equal(dec("100")))
	assert.True(t, sc.MonthlyLimitUSD.Equal(dec("1000")))
	assert.Equal(t, 60, *sc.RateLimitPerMinute)
	assert.Equal(t, 1000, *sc.RateLimitPerHour)
	require.Contains(t, sc.Tools, "goal-data")
	goal := sc.Tools["goal-data"]
	assert.True(t, *goal.Allowed)
	assert.True(t, goal.DailyLimitUSD.Equal(dec("0.2")))
	assert.Nil(t, goal.MaxPerCallUSD, "unset tool limits stay unset")
	assert.Nil(t, goal.RateLimitPerMinute)

	assert.Equal(t, map[string]string{"earthquake-search": "http://127.0.0.1:9001"}, cfg.Upstreams)
	require.Contains(t, cfg.Trust, "goal-data")
	assert.True(t, *cfg.Trust["goal-data"].PaymentVerified)
	assert.True(t, *cfg.Trust["goal-data"].EndpointVerified)
}

func TestParseConfigDefaults(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{`{}`, `{"listen": null, "principals": null}`} {
		cfg, err := ParseConfig([]byte(doc))
		require.NoError(t, err, doc)
		assert.Equal(t, "127.0.0.1:8080", cfg.Listen, doc)
		assert.Equal(t, "memory", cfg.Storage, doc)
		assert.False(t, cfg.postgres(), doc)
		assert.Zero(t, cfg.QuoteTTL, "zero means the gateway's default")
		assert.Zero(t, cfg.ApprovalTTL, "zero means the gateway's 30 minutes")
		assert.Nil(t, cfg.FeeRate, "nil means the gateway's default")
		assert.Empty(t, cfg.Principals)
		assert.Empty(t, cfg.MetricsListen, "no metrics unless asked")
		assert.Zero(t, cfg.Retention, "zero means the gateway's 24 hours")
	}
}

func TestParseConfigAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		doc   string
		check func(t *testing.T, cfg *Config)
	}{
		{"postgres URL", `{"storage": "postgres://toolgate:secret@db:5432/toolgate?sslmode=disable"}`,
			func(t *testing.T, cfg *Config) { assert.True(t, cfg.postgres()) }},
		{"postgres URL, admissions waiting for the disk", `{"storage": "postgres://toolgate@db/toolgate", "synchronousAdmission": true}`,
			func(t *testing.T, cfg *Config) { assert.True(t, cfg.SynchronousAdmission) }},
		{"synchronousAdmission false with any storage", `{"storage": "sqlite:toolgate.db", "synchronousAdmission": false}`,
			func(t *testing.T, cfg *Config) { assert.False(t, cfg.SynchronousAdmission) }},
		{"postgresql URL", `{"storage": "postgresql:///toolgate?host=/var/run/postgresql"}`,
			func(t *testing.T, cfg *Config) { assert.True(t, cfg.postgres()) }},
		{"postgres URL with several hosts", `{"storage": "postgres://toolgate@db1:5432,db2:5432/toolgate"}`,
			func(t *testing.T, cfg *Config) { assert.True(t, cfg.postgres()) }},
		{"approvalTTL", `{"approvalTTL": "45m"}`,
			func(t *testing.T, cfg *Config) { assert.Equal(t, 45*time.Minute, cfg.ApprovalTTL) }},
		{"names /mcp answers to", `{"allowedHosts": ["mcp.example.com", "10.0.0.5:8080", "[::1]:9"]}`,
			func(t *testing.T, cfg *Config) {
				assert.Equal(t, []string{"mcp.example.com", "10.0.0.5:8080", "[::1]:9"}, cfg.AllowedHosts)
			}},
		{"every interface, any port", `{"listen": ":0"}`,
			func(t *testing.T, cfg *Config) { assert.Equal(t, ":0", cfg.Listen) }},
		{"amount as a JSON number, taken by its text", `{"principals": [{"id": "a", "apiKeys": ["k"], "spendControls": {"dailyLimitUsd": 0.1}}]}`,
			func(t *testing.T, cfg *Config) {
				assert.Equal(t, "0.1", cfg.Principals[0].SpendControls.DailyLimitUSD.String())
			}},
		{"uppercase digest", `{"principals": [{"id": "a", "apiKeySha256": ["` + strings.ToUpper(sha256Hex("k")) + `"]}]}`,
			func(t *testing.T, cfg *Config) {
				assert.Equal(t, sha256.Sum256([]byte("k")), cfg.Principals[0].APIKeyDigests[0])
			}},
		{"trailing slash on an origin", `{"upstreams": {"goal-data": "https://goal.internal:8443/"}}`,
			func(t *testing.T, cfg *Config) {
				assert.Equal(t, "https://goal.internal:8443", cfg.Upstreams["goal-data"])
			}},
		{"a tool blocked for a principal", `{"principals": [{"id": "a", "apiKeys": ["k"], "spendControls": {"tools": {"goal-data": {"allowed": false}}}}]}`,
			func(t *testing.T, cfg *Config) {
				assert.False(t, *cfg.Principals[0].SpendControls.Tools["goal-data"].Allowed)
			}},
		{"a free fee", `{"feeRate": "0"}`,
			func(t *testing.T, cfg *Config) { assert.True(t, cfg.FeeRate.IsZero()) }},
		{"sqlite file", `{"storage": "sqlite:/var/lib/toolgate/toolgate.db"}`,
			func(t *testing.T, cfg *Config) {
				assert.Equal(t, "sqlite", cfg.StorageKind())
				assert.False(t, cfg.postgres())
				assert.Equal(t, "/var/lib/toolgate/toolgate.db", cfg.sqlitePath())
			}},
		{"sqlite file with a relative path, resolved when the file is loaded", `{"storage": "sqlite:data/toolgate.db"}`,
			func(t *testing.T, cfg *Config) { assert.Equal(t, "data/toolgate.db", cfg.sqlitePath()) }},
		{"lease and upstream timeout", `{"idempotencyLease": "3s", "upstreamTimeout": "1500ms"}`,
			func(t *testing.T, cfg *Config) {
				assert.Equal(t, 3*time.Second, cfg.IdempotencyLease)
				assert.Equal(t, 1500*time.Millisecond, cfg.UpstreamTimeout)
				assert.Equal(t, 1500*time.Millisecond, cfg.upstreamTimeout())
			}},
		{"a longer lease for slow providers", `{"idempotencyLease": "5m", "upstreamTimeout": "2m"}`,
			func(t *testing.T, cfg *Config) { assert.Equal(t, 2*time.Minute, cfg.upstreamTimeout()) }},
		{"metrics on an address of their own", `{"metricsListen": "127.0.0.1:9464"}`,
			func(t *testing.T, cfg *Config) { assert.Equal(t, "127.0.0.1:9464", cfg.MetricsListen) }},
		{"retention of a month", `{"retention": "720h"}`,
			func(t *testing.T, cfg *Config) { assert.Equal(t, 720*time.Hour, cfg.Retention) }},
		{"retention of exactly a day", `{"retention": "24h"}`,
			func(t *testing.T, cfg *Config) { assert.Equal(t, 24*time.Hour, cfg.Retention) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := ParseConfig([]byte(tt.doc))
			require.NoError(t, err)
			tt.check(t, cfg)
		})
	}
}

// TestParseConfigErrors checks that every mistake is refused with a message
// that names the field, so an operator knows where to look.
func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	principal := func(fields string) string {
		return `{"principals": [{"id": "alice", "apiKeys": ["tg_alice"]` + fields + `}]}`
	}
	tests := []struct {
		name string
		doc  string
		want string // the whole message, or its start when it ends in "..."
	}{
		{"unknown top-level field", `{"listn": "127.0.0.1:8080"}`,
			`config: unknown field "listn": did you mean "listen"?`},
		{"unknown field in a principal", `{"principals": [{"id": "a", "apikeys": ["k"]}]}`,
			`config: principals[0]: unknown field "apikeys": did you mean "apiKeys"?`},
		{"unknown field in spend controls", principal(`, "spendControls": {"maxPerCall": "1"}`),
			`config: principals[0].spendControls: unknown field "maxPerCall": did you mean "maxPerCallUsd"?`},
		{"unknown field in tool controls", principal(`, "spendControls": {"tools": {"goal-data": {"allow": true}}}`),
			`config: principals[0].spendControls.tools.goal-data: unknown field "allow": did you mean "allowed"?`},
		{"unknown field in trust", `{"trust": {"goal-data": {"paid": true}}}`,
			`config: trust.goal-data: unknown field "paid"`},

		{"receipts without a key", `{"receipts": {"keyId": "k"}}`,
			`config: receipts: needs "signingKeyFile": without it, leave "receipts" out and a development key is generated at start`},
		{"unknown field in receipts", `{"receipts": {"signingKeyFile": "k.pem", "key": "x"}}`,
			`config: receipts: unknown field "key": did you mean "keyId"?`},
		{"a retired key without its file", `{"receipts": {"signingKeyFile": "k.pem", "retiredKeys": [{"keyId": "old"}]}}`,
			`config: receipts.retiredKeys[0]: needs "publicKeyFile": the retired key's public half in PEM`},

		{"a URL among the allowed hosts", `{"allowedHosts": ["https://mcp.example.com"]}`,
			`config: allowedHosts[0]: "https://mcp.example.com" is not a host name or IP address with an optional port ("mcp.example.com", "10.0.0.5:8080"); give no scheme or path`},
		{"not JSON", "{\n  \"listen\": \"x\",\n  oops\n}",
			`config: invalid JSON at line 3, column 3: ...`},
		{"empty file", ``, `config: the file is empty; it must hold a JSON object`},
		{"two documents", `{} {}`, `config: the file holds more than one JSON value`},
		{"not an object", `["listen"]`, `config: must be an object, not an array`},
		{"a field twice", `{"listen": "127.0.0.1:1", "listen": "127.0.0.1:2"}`,
			`config: field "listen" is given twice`},

		{"listen not host:port", `{"listen": "localhost"}`,
			`config: listen: "localhost" is not a host:port address`},
		{"listen port out of range", `{"listen": "127.0.0.1:99999"}`,
			`config: listen: "127.0.0.1:99999" has no port number from 0 to 65535`},
		{"listen not a string", `{"listen": 8080}`,
			`config: listen: must be a string, not a number`},

		{"storage a broken postgres URL", `{"storage": "postgres://root:hunter2@db:port/x"}`,
			`config: storage: is not a valid PostgreSQL URL (postgres://user:password@host:5432/db)`},
		{"storage neither memory nor postgres nor sqlite", `{"storage": "mysql://root:hunter2@db/x"}`,
			`config: storage: must be "memory", a PostgreSQL URL (postgres://user:password@host:5432/db) or "sqlite:" and a file path`},
		{"sqlite without a path", `{"storage": "sqlite:"}`,
			`config: storage: "sqlite:" must be followed by the database file's path (sqlite:/var/lib/toolgate/toolgate.db)`},
		{"sqlite in memory", `{"storage": "sqlite::memory:"}`,
			`config: storage: "sqlite::memory:": after "sqlite:" comes a file path (for a store kept in memory, use "memory")`},
		{"sqlite URI", `{"storage": "sqlite:file:toolgate.db?mode=memory"}`,
			`config: storage: "sqlite:file:toolgate.db?mode=memory": after "sqlite:" comes a file path ...`},

		{"idempotencyLease not a duration", `{"idempotencyLease": "a minute"}`,
			`config: idempotencyLease: "a minute" is not a duration (use a form such as "5m" or "90s")`},
		{"upstreamTimeout zero", `{"upstreamTimeout": "0s"}`, `config: upstreamTimeout: "0s" must be longer than zero`},
		{"lease shorter than the default upstream timeout", `{"idempotencyLease": "5s"}`,
			`config: idempotencyLease: 5s must be longer than upstreamTimeout (10s), or a retry could take over a call still waiting on its upstream`},
		{"lease equal to the upstream timeout", `{"idempotencyLease": "2s", "upstreamTimeout": "2s"}`,
			`config: idempotencyLease: 2s must be longer than upstreamTimeout (2s), ...`},
		{"upstream timeout past the default lease", `{"upstreamTimeout": "90s"}`,
			`config: upstreamTimeout: 1m30s must be shorter than idempotencyLease (1m0s), or a retry could take over a call still waiting on its upstream`},

		{"quoteTTL not a duration", `{"quoteTTL": "5 minutes"}`,
			`config: quoteTTL: "5 minutes" is not a duration (use a form such as "5m" or "90s")`},
		{"quoteTTL a number", `{"quoteTTL": 300}`,
			`config: quoteTTL: must be a duration such as "5m", not a number`},
		{"quoteTTL zero", `{"quoteTTL": "0s"}`, `config: quoteTTL: "0s" must be longer than zero`},
		{"approvalTTL not a duration", `{"approvalTTL": "half an hour"}`,
			`config: approvalTTL: "half an hour" is not a duration (use a form such as "5m" or "90s")`},
		{"approvalTTL negative", `{"approvalTTL": "-30m"}`, `config: approvalTTL: "-30m" must be longer than zero`},
		{"retention under a day", `{"retention": "12h"}`,
			`config: retention: 12h0m0s is shorter than the minimum of 24h: finished calls stay replayable for a day`},
		{"retention not a duration", `{"retention": "a month"}`,
			`config: retention: "a month" is not a duration (use a form such as "5m" or "90s")`},
		{"metricsListen not host:port", `{"metricsListen": "9464"}`,
			`config: metricsListen: "9464" is not a host:port address`},

		{"feeRate not a decimal", `{"feeRate": "ten percent"}`, `config: feeRate: "ten percent" is not a decimal amount`},
		{"feeRate above 1", `{"feeRate": "1.5"}`, `config: feeRate: 1.5 must be from 0 to 1 (0.10 is a 10% fee)`},
		{"feeRate negative", `{"feeRate": "-0.1"}`, `config: feeRate: "-0.1" must be a non-negative amount with at most 4 decimals`},
		{"exposeUsageCounts not a boolean", `{"exposeUsageCounts": "yes"}`,
			`config: exposeUsageCounts: must be true or false, not a string`},
		{"synchronousAdmission without PostgreSQL", `{"synchronousAdmission": true}`,
			`config: synchronousAdmission: applies only to a PostgreSQL storage, not memory`},
		{"synchronousAdmission not a boolean", `{"storage": "postgres://db/x", "synchronousAdmission": "on"}`,
			`config: synchronousAdmission: must be true or false, not a string`},

		{"principals not an array", `{"principals": {"id": "a"}}`, `config: principals: must be an array, not an object`},
		{"principal without id", `{"principals": [{"apiKeys": ["k"]}]}`, `config: principals[0]: id is required`},
		{"principal with empty id", `{"principals": [{"id": "", "apiKeys": ["k"]}]}`,
			`config: principals[0].id: must be 1 to 255 characters`},
		{"principal twice", `{"principals": [{"id": "a", "apiKeys": ["k1"]}, {"id": "a", "apiKeys": ["k2"]}]}`,
			`config: principals[1].id: principal "a" is given twice`},
		{"principal without keys", `{"principals": [{"id": "a"}]}`,
			`config: principals[0]: principal "a" has no apiKeys or apiKeySha256, so it could never call`},
		{"empty key", `{"principals": [{"id": "a", "apiKeys": [""]}]}`,
			`config: principals[0].apiKeys[0]: an API key must be 1 to 512 visible ASCII characters (no spaces)`},
		{"key with a space", `{"principals": [{"id": "a", "apiKeys": ["ok", "tg secret"]}]}`,
			`config: principals[0].apiKeys[1]: an API key must be 1 to 512 visible ASCII characters (no spaces)`},
		{"key not a string", `{"principals": [{"id": "a", "apiKeys": [42]}]}`,
			`config: principals[0].apiKeys[0]: must be a string, not a number`},
		{"one key for two principals", `{"principals": [{"id": "a", "apiKeys": ["tg_shared"]}, {"id": "b", "apiKeys": ["tg_shared"]}]}`,
			`config: principals[1].apiKeys[0]: this key already belongs to principal "a"`},
		{"a key and its digest for two principals", `{"principals": [{"id": "a", "apiKeys": ["tg_shared"]}, {"id": "b", "apiKeySha256": ["` + sha256Hex("tg_shared") + `"]}]}`,
			`config: principals[1].apiKeySha256[0]: this key already belongs to principal "a"`},
		{"digest not hex", `{"principals": [{"id": "a", "apiKeySha256": ["tg_pasted_the_key_here"]}]}`,
			`config: principals[0].apiKeySha256[0]: must be the SHA-256 of a key as 64 hex digits`},
		{"digest too short", `{"principals": [{"id": "a", "apiKeySha256": ["abcd"]}]}`,
			`config: principals[0].apiKeySha256[0]: must be the SHA-256 of a key as 64 hex digits`},

		{"daily limit not a decimal", principal(`, "spendControls": {"dailyLimitUsd": "abc"}`),
			`config: principals[0].spendControls.dailyLimitUsd: "abc" is not a decimal amount`},
		{"limit with 5 decimals", principal(`, "spendControls": {"maxPerCallUsd": "0.00001"}`),
			`config: principals[0].spendControls.maxPerCallUsd: "0.00001" must be a non-negative amount with at most 4 decimals`},
		{"limit of 21 digits", principal(`, "spendControls": {"dailyLimitUsd": "123456789012345678901.5"}`),
			`config: principals[0].spendControls.dailyLimitUsd: must have at most 20 digits before the point`},
		{"limit of 900,000 digits", principal(`, "spendControls": {"tools": {"goal-data": {"monthlyLimitUsd": ` + strings.Repeat("9", 900_000) + `}}}`),
			`config: principals[0].spendControls.tools.goal-data.monthlyLimitUsd: must have at most 20 digits before the point`},
		{"rate limit of 900,000 digits", principal(`, "spendControls": {"rateLimitPerHour": ` + strings.Repeat("9", 900_000) + `}`),
			`config: principals[0].spendControls.rateLimitPerHour: is not a whole number from 0 to 2147483647`},
		{"limit a boolean", principal(`, "spendControls": {"monthlyLimitUsd": true}`),
			`config: principals[0].spendControls.monthlyLimitUsd: must be a decimal amount such as "25.0000", not a boolean`},
		{"negative rate limit", principal(`, "spendControls": {"rateLimitPerMinute": -1}`),
			`config: principals[0].spendControls.rateLimitPerMinute: -1 is not a whole number from 0 to 2147483647`},
		{"fractional rate limit", principal(`, "spendControls": {"rateLimitPerHour": 1.5}`),
			`config: principals[0].spendControls.rateLimitPerHour: 1.5 is not a whole number from 0 to 2147483647`},
		{"rate limit as a string", principal(`, "spendControls": {"rateLimitPerHour": "60"}`),
			`config: principals[0].spendControls.rateLimitPerHour: must be a whole number, not a string`},
		{"controls for no such tool", principal(`, "spendControls": {"tools": {"nope": {"allowed": false}}}`),
			`config: principals[0].spendControls.tools: no tool "nope" (the tools are current-weather, earthquake-search, exchange-rates, goal-data, public-holidays)`},
		{"tool allowed not a boolean", principal(`, "spendControls": {"tools": {"goal-data": {"allowed": "yes"}}}`),
			`config: principals[0].spendControls.tools.goal-data.allowed: must be true or false, not a string`},
		{"tool limit not a decimal", principal(`, "spendControls": {"tools": {"goal-data": {"dailyLimitUsd": "lots"}}}`),
			`config: principals[0].spendControls.tools.goal-data.dailyLimitUsd: "lots" is not a decimal amount`},

		{"upstream for no such tool", `{"upstreams": {"nope": "http://127.0.0.1:9001"}}`,
			`config: upstreams: no tool "nope" ...`},
		{"upstream by tool id, not slug", `{"upstreams": {"` + registry.StableID("tool:goal-data") + `": "http://127.0.0.1:9001"}}`,
			`config: upstreams: no tool "` + registry.StableID("tool:goal-data") + `" ...`},
		{"upstream with a path", `{"upstreams": {"earthquake-search": "http://127.0.0.1:9001/usgs"}}`,
			`config: upstreams.earthquake-search: "http://127.0.0.1:9001/usgs" is not an origin: use scheme://host[:port] with http or https and no path`},
		{"upstream another scheme", `{"upstreams": {"earthquake-search": "ftp://mirror"}}`,
			`config: upstreams.earthquake-search: "ftp://mirror" is not an origin: ...`},
		{"upstream without scheme", `{"upstreams": {"earthquake-search": "127.0.0.1:9001"}}`,
			`config: upstreams.earthquake-search: "127.0.0.1:9001" is not an origin: ...`},
		{"upstreams not an object", `{"upstreams": ["http://127.0.0.1:9001"]}`,
			`config: upstreams: must be an object, not an array`},

		{"trust for no such tool", `{"trust": {"nope": {"paymentVerified": true}}}`,
			`config: trust: no tool "nope" ...`},
		{"trust not a boolean", `{"trust": {"goal-data": {"paymentVerified": "true"}}}`,
			`config: trust.goal-data.paymentVerified: must be true or false, not a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := ParseConfig([]byte(tt.doc))
			require.Error(t, err)
			assert.Nil(t, cfg)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			if prefix, ok := strings.CutSuffix(tt.want, "..."); ok {
				assert.True(t, strings.HasPrefix(err.Error(), prefix), "got %q, want it to start with %q", err, prefix)
			} else {
				assert.Equal(t, tt.want, err.Error())
			}
			// Secrets given in the config never come back in a message.
			for _, secret := range []string{"hunter2", "tg_shared", "tg secret", "tg_pasted_the_key_here"} {
				assert.NotContains(t, err.Error(), secret)
			}
		})
	}
}

func TestLoadConfigMissingFile(t *testing.T) {
	t.Parallel()
	_, err := LoadConfig(t.TempDir() + "/nope.json")
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), "config: cannot read the config file: open ")
}

// TestLoadConfigSQLitePath: a relative SQLite path is the config file's
// neighbour, wherever the server is started from; an absolute one stays.
func TestLoadConfigSQLitePath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		storage string
		want    string
	}{
		{"sqlite:toolgate.db", filepath.Join(dir, "toolgate.db")},
		{"sqlite:data/toolgate.db", filepath.Join(dir, "data", "toolgate.db")},
		{"sqlite:../toolgate.db", filepath.Join(filepath.Dir(dir), "toolgate.db")},
		{"sqlite:/var/lib/toolgate/toolgate.db", "/var/lib/toolgate/toolgate.db"},
	}
	for i, tc := range cases {
		path := filepath.Join(dir, fmt.Sprintf("config-%d.json", i))
		require.NoError(t, os.WriteFile(path, []byte(`{"storage": "`+tc.storage+`"}`), 0o600))
		cfg, err := LoadConfig(path)
		require.NoError(t, err, tc.storage)
		assert.Equal(t, "sqlite:"+tc.want, cfg.Storage, tc.storage)
	}
}

// TestREADMEConfigExample keeps the README's config example valid.
func TestREADMEConfigExample(t *testing.T) {
	t.Parallel()
	cfg, err := ParseConfig(readmeConfigExample(t, "The server"))
	require.NoError(t, err)
	assert.Len(t, cfg.Principals, 1)
}

// TestLoadConfigBuiltinTools: the built-in tools are served unless
// "builtinTools" is false; then the config may not name one.
func TestLoadConfigBuiltinTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, doc string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
		return path
	}
	cfg, err := LoadConfig(write("default.json", `{}`))
	require.NoError(t, err)
	reg := cfg.Registry
	assert.True(t, cfg.BuiltinTools)
	_, err = reg.Lookup("earthquake-search")
	assert.NoError(t, err, "served by default")

	cfg, err = LoadConfig(write("off.json", `{"builtinTools": false}`))
	require.NoError(t, err)
	reg = cfg.Registry
	assert.False(t, cfg.BuiltinTools)
	_, total := reg.List("", 10, 0)
	assert.Zero(t, total, "no built-in tool")

	_, err = LoadConfig(write("named.json", `{"builtinTools": false, "upstreams": {"earthquake-search": "https://quakes.example"}}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "earthquake-search")

	_, err = LoadConfig(write("bad.json", `{"builtinTools": "no"}`))
	assert.EqualError(t, err, "config: builtinTools: must be true or false, not a string")
}

// readmeConfigExample is the first JSON example of the README's section
// under "## heading": a config a reader copies, which must parse.
func readmeConfigExample(t *testing.T, heading string) []byte {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	_, section, found := strings.Cut(string(readme), "\n## "+heading+"\n")
	require.True(t, found, "the README has a section %q", heading)
	_, example, found := strings.Cut(section, "```json\n")
	require.True(t, found, "the section %q has a config example", heading)
	example, _, _ = strings.Cut(example, "```")
	return []byte(example)
}
