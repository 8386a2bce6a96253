package registry_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func paidTool(slug string) *registry.Tool {
	tool := newTool(slug)
	tool.Provider.ID = "11111111-2222-4333-8444-555555555555"
	tool.Pricing = registry.Pricing{Type: registry.PricingPerCall, Amount: decimal.RequireFromString("0.01"), Currency: "USD"}
	return tool
}

// The digest is a published format: approvals stored by users bind to it, so
// the exact manifest bytes hashed must not drift between releases.
func TestManifestDigestGolden(t *testing.T) {
	t.Parallel()
	canonical := `{"capabilities":{"allowedOutboundDomains":["api.example.com","cdn.example.com"],` +
		`"dataRetention":"unknown","declared":true,"destructive":false,"executesCode":false,"idempotent":false,` +
		`"openWorld":true,"readOnly":true,"readsPrivateData":false,"requiresUserCredential":false,` +
		`"seesUntrustedContent":true,"sendsMessages":false,"spendsMoney":false,"writesExternalData":false},` +
		`"category":"testing","description":"Looks things up for echo",` +
		`"endpoint":{"method":"GET","origin":"https://api.example.com","path":"/v1/lookup"},` +
		`"inputSchema":{"properties":{"q":{"type":"string"}},"required":["q"],"type":"object"},` +
		`"name":"Tool echo",` +
		`"outputSchema":{"properties":{"answer":{"type":"string"}},"type":"object"},` +
		`"pricing":{"amount":"0.0100","currency":"USD","type":"per_call"},` +
		`"provider":{"id":"11111111-2222-4333-8444-555555555555","name":"Acme"},` +
		`"schemaVersion":"toolgate.tool-version/v1","slug":"echo","tags":["alpha","beta"]}`
	sum := sha256.Sum256([]byte(canonical))
	want := "sha256:" + hex.EncodeToString(sum[:])

	tool := paidTool("echo")
	assert.Equal(t, want, digestOf(t, tool, testOrigin))

	// The registry pins the same digest on the version it publishes.
	v := register(t, registry.New(), tool)
	assert.Equal(t, want, v.Digest)
	assert.Regexp(t, digestPattern, v.Digest)
}

func TestManifestDigestIgnoresSchemaKeyOrderAndSpacing(t *testing.T) {
	t.Parallel()
	a := paidTool("echo")
	b := paidTool("echo")
	b.InputSchema = json.RawMessage("{\n  \"required\": [\"q\"],\n  \"type\": \"object\",\n  \"properties\": {\"q\": {\"type\": \"string\"}}\n}")
	b.OutputSchema = json.RawMessage(`{ "type" : "object", "properties" : { "answer" : { "type" : "string" } } }`)
	assert.Equal(t, digestOf(t, a, testOrigin), digestOf(t, b, testOrigin))
}

func TestManifestDigestCoversManifestFields(t *testing.T) {
	t.Parallel()
	base := digestOf(t, paidTool("echo"), testOrigin)
	cases := []struct {
		name   string
		change func(*registry.Tool)
	}{
		{"slug", func(tl *registry.Tool) { tl.Slug = "echo2" }},
		{"name", func(tl *registry.Tool) { tl.Name = "Echo!" }},
		{"description", func(tl *registry.Tool) { tl.Description += "." }},
		{"category", func(tl *registry.Tool) { tl.Category = "other" }},
		{"tag added", func(tl *registry.Tool) { tl.Tags = append(tl.Tags, "gamma") }},
		{"tags reordered", func(tl *registry.Tool) { tl.Tags = []string{"beta", "alpha"} }},
		{"provider id", func(tl *registry.Tool) { tl.Provider.ID = "22222222-2222-4333-8444-555555555555" }},
		{"provider name", func(tl *registry.Tool) { tl.Provider.Name = "Acme Inc" }},
		{"endpoint method", func(tl *registry.Tool) { tl.Endpoint.Method = http.MethodPost }},
		{"endpoint path", func(tl *registry.Tool) { tl.Endpoint.Path = "/v2/lookup" }},
		{"price", func(tl *registry.Tool) { tl.Pricing.Amount = decimal.RequireFromString("0.02") }},
		{"pricing type", func(tl *registry.Tool) { tl.Pricing = registry.Pricing{Type: registry.PricingFree, Currency: "USD"} }},
		{"input schema", func(tl *registry.Tool) {
			tl.InputSchema = json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","maxLength":10}},"required":["q"]}`)
		}},
		{"output schema", func(tl *registry.Tool) { tl.OutputSchema = json.RawMessage(`{"type":"object"}`) }},
		{"output schema removed", func(tl *registry.Tool) { tl.OutputSchema = nil }},
		{"capability flag", func(tl *registry.Tool) { tl.Capabilities.ReadOnly = registry.Bool(false) }},
		{"capability default made explicit false", func(tl *registry.Tool) { tl.Capabilities.OpenWorld = registry.Bool(false) }},
		{"data retention", func(tl *registry.Tool) { tl.Capabilities.DataRetention = registry.RetentionStored }},
		{"outbound domain", func(tl *registry.Tool) {
			tl.Capabilities.AllowedOutboundDomains = append(tl.Capabilities.AllowedOutboundDomains, "img.example.com")
		}},
		{"capabilities undeclared", func(tl *registry.Tool) { tl.Capabilities = nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tool := paidTool("echo")
			c.change(tool)
			got := digestOf(t, tool, testOrigin)
			assert.Regexp(t, digestPattern, got)
			assert.NotEqual(t, base, got)
		})
	}
	t.Run("origin", func(t *testing.T) {
		t.Parallel()
		assert.NotEqual(t, base, digestOf(t, paidTool("echo"), "https://mirror.example.com"))
		assert.NotEqual(t, base, digestOf(t, paidTool("echo"), "https://api.example.com:8443"))
	})
}

func TestManifestDigestIgnoresTrustAndEquivalentForms(t *testing.T) {
	t.Parallel()
	base := digestOf(t, paidTool("echo"), testOrigin)
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name   string
		change func(*registry.Tool)
	}{
		{"payment verified", func(tl *registry.Tool) { tl.Provider.PaymentVerified = true }},
		{"endpoint verified", func(tl *registry.Tool) { tl.Endpoint.Verified, tl.Endpoint.VerifiedAt = true, &at }},
		{"same price written differently", func(tl *registry.Tool) { tl.Pricing.Amount = decimal.RequireFromString("0.0100") }},
		{"outbound domains in another case, order and with duplicates", func(tl *registry.Tool) {
			tl.Capabilities.AllowedOutboundDomains = []string{" CDN.Example.com. ", "api.example.com", "cdn.example.com"}
		}},
		{"default capability made explicit", func(tl *registry.Tool) { tl.Capabilities.OpenWorld = registry.Bool(true) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tool := paidTool("echo")
			c.change(tool)
			assert.Equal(t, base, digestOf(t, tool, testOrigin))
		})
	}
}

func TestManifestNilOutputSchemaIsNull(t *testing.T) {
	t.Parallel()
	tool := paidTool("echo")
	tool.OutputSchema = nil
	raw, err := json.Marshal(registry.ManifestOf(tool, testOrigin))
	require.NoError(t, err)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	assert.Equal(t, "null", string(m["outputSchema"]))

	explicit := paidTool("echo")
	explicit.OutputSchema = json.RawMessage("null")
	assert.Equal(t, digestOf(t, explicit, testOrigin), digestOf(t, tool, testOrigin))
}

func TestManifestNilTagsAreEmptyArray(t *testing.T) {
	t.Parallel()
	tool := paidTool("echo")
	tool.Tags = nil
	raw, err := json.Marshal(registry.ManifestOf(tool, testOrigin))
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"tags":[]`)

	empty := paidTool("echo")
	empty.Tags = []string{}
	assert.Equal(t, digestOf(t, empty, testOrigin), digestOf(t, tool, testOrigin))
}

func TestManifestOfUsesGivenOrigin(t *testing.T) {
	t.Parallel()
	m := registry.ManifestOf(paidTool("echo"), "http://127.0.0.1:9000")
	assert.Equal(t, registry.ManifestSchemaVersion, m.SchemaVersion)
	assert.Equal(t, "http://127.0.0.1:9000", m.Endpoint.Origin)
	assert.Contains(t, m.Capabilities.AllowedOutboundDomains, "127.0.0.1")
	assert.NotContains(t, m.Capabilities.AllowedOutboundDomains, "api.example.com")
}
