package registry_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetype"
)

func TestRegisterRejectsInvalidTools(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(*registry.Tool)
	}{
		{"empty slug", func(tl *registry.Tool) { tl.Slug = "" }},
		{"upper-case slug", func(tl *registry.Tool) { tl.Slug = "Echo" }},
		{"slug with underscore", func(tl *registry.Tool) { tl.Slug = "e_cho" }},
		{"slug with space", func(tl *registry.Tool) { tl.Slug = "e cho" }},
		{"slug with leading dash", func(tl *registry.Tool) { tl.Slug = "-echo" }},
		{"slug with trailing dash", func(tl *registry.Tool) { tl.Slug = "echo-" }},
		{"slug of 65 characters", func(tl *registry.Tool) { tl.Slug = strings.Repeat("a", 65) }},
		{"slug with a path", func(tl *registry.Tool) { tl.Slug = "../echo" }},
		{"missing name", func(tl *registry.Tool) { tl.Name = "" }},
		{"blank name", func(tl *registry.Tool) { tl.Name = " \t " }},
		{"version 0", func(tl *registry.Tool) { tl.Version = 0 }},
		{"negative version", func(tl *registry.Tool) { tl.Version = -1 }},
		{"missing input schema", func(tl *registry.Tool) { tl.InputSchema = nil }},
		{"input schema not an object", func(tl *registry.Tool) { tl.InputSchema = json.RawMessage(`[]`) }},
		{"input schema with a remote ref", func(tl *registry.Tool) {
			tl.InputSchema = json.RawMessage(`{"$ref":"https://schemas.example.com/in.json"}`)
		}},
		{"output schema with a remote ref", func(tl *registry.Tool) {
			tl.OutputSchema = json.RawMessage(`{"$ref":"https://schemas.example.com/out.json"}`)
		}},
		{"nil BuildRequest", func(tl *registry.Tool) { tl.BuildRequest = nil }},
		{"nil Normalize", func(tl *registry.Tool) { tl.Normalize = nil }},
		{"empty pricing type", func(tl *registry.Tool) { tl.Pricing.Type = "" }},
		{"unknown pricing type", func(tl *registry.Tool) { tl.Pricing.Type = "monthly" }},
		{"free with a price", func(tl *registry.Tool) { tl.Pricing.Amount = decimal.RequireFromString("0.01") }},
		{"negative price", func(tl *registry.Tool) {
			tl.Pricing = registry.Pricing{Type: registry.PricingPerCall, Amount: decimal.RequireFromString("-0.01")}
		}},
		{"price of 21 digits", func(tl *registry.Tool) {
			tl.Pricing = registry.Pricing{Type: registry.PricingPerCall, Amount: decimal.RequireFromString("100000000000000000000")}
		}},
		{"price of a trillion, more than the stores' totals hold", func(tl *registry.Tool) {
			tl.Pricing = registry.Pricing{Type: registry.PricingPerCall, Amount: decimal.RequireFromString("1000000000000")}
		}},
		{"price with 5 decimals", func(tl *registry.Tool) {
			tl.Pricing = registry.Pricing{Type: registry.PricingPerCall, Amount: decimal.RequireFromString("0.00001")}
		}},
		{"non-USD currency", func(tl *registry.Tool) {
			tl.Pricing = registry.Pricing{Type: registry.PricingPerCall, Amount: decimal.RequireFromString("0.01"), Currency: "EUR"}
		}},
		{"empty origin", func(tl *registry.Tool) { tl.Endpoint.Origin = "" }},
		{"origin without scheme", func(tl *registry.Tool) { tl.Endpoint.Origin = "api.example.com" }},
		{"origin with non-http scheme", func(tl *registry.Tool) { tl.Endpoint.Origin = "ftp://api.example.com" }},
		{"origin with file scheme", func(tl *registry.Tool) { tl.Endpoint.Origin = "file:///etc/passwd" }},
		{"origin with a path", func(tl *registry.Tool) { tl.Endpoint.Origin = "https://api.example.com/v1" }},
		{"origin with a query", func(tl *registry.Tool) { tl.Endpoint.Origin = "https://api.example.com?key=1" }},
		{"origin with an empty query", func(tl *registry.Tool) { tl.Endpoint.Origin = "https://api.example.com?" }},
		{"origin with a fragment", func(tl *registry.Tool) { tl.Endpoint.Origin = "https://api.example.com#x" }},
		{"origin with an empty fragment", func(tl *registry.Tool) { tl.Endpoint.Origin = "https://api.example.com#" }},
		{"origin with user info", func(tl *registry.Tool) { tl.Endpoint.Origin = "https://user:pw@api.example.com" }},
		{"origin with a user name", func(tl *registry.Tool) { tl.Endpoint.Origin = "https://user@api.example.com" }},
		{"origin without a host name", func(tl *registry.Tool) { tl.Endpoint.Origin = "https://:443" }},
		{"id not a UUID", func(tl *registry.Tool) { tl.ID = "echo-1" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := registry.New()
			tool := newTool("echo")
			c.change(tool)
			err := r.Register(tool)
			require.ErrorIs(t, err, registry.ErrInvalidTool)
			_, err = r.Lookup(tool.Slug)
			assert.ErrorIs(t, err, registry.ErrNotFound, "an invalid tool must not be registered")
			list, total := r.List("", 100, 0)
			assert.Empty(t, list)
			assert.Zero(t, total)
		})
	}
	t.Run("nil tool", func(t *testing.T) {
		t.Parallel()
		assert.ErrorIs(t, registry.New().Register(nil), registry.ErrInvalidTool)
	})
}

func TestRegisterAcceptsValidVariants(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		change     func(*registry.Tool)
		wantOrigin string
	}{
		{"one-character slug", func(tl *registry.Tool) { tl.Slug = "a" }, testOrigin},
		{"64-character slug", func(tl *registry.Tool) { tl.Slug = strings.Repeat("a", 64) }, testOrigin},
		{"slug with digits and dashes", func(tl *registry.Tool) { tl.Slug = "geo-2-lookup" }, testOrigin},
		{"http origin with port", func(tl *registry.Tool) { tl.Endpoint.Origin = "http://127.0.0.1:8080" }, "http://127.0.0.1:8080"},
		{"origin with trailing slash", func(tl *registry.Tool) { tl.Endpoint.Origin = testOrigin + "/" }, testOrigin},
		{"paid in USD", func(tl *registry.Tool) {
			tl.Pricing = registry.Pricing{Type: registry.PricingPerCall, Amount: decimal.RequireFromString("0.05"), Currency: "USD"}
		}, testOrigin},
		{"explicit UUID id", func(tl *registry.Tool) { tl.ID = "3b241101-e2bb-4255-8caf-4136c566a962" }, testOrigin},
		{"no output schema", func(tl *registry.Tool) { tl.OutputSchema = nil }, testOrigin},
		{"undeclared capabilities", func(tl *registry.Tool) { tl.Capabilities = nil }, testOrigin},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tool := newTool("echo")
			c.change(tool)
			v := register(t, registry.New(), tool)
			assert.Equal(t, c.wantOrigin, v.Origin)
			assert.False(t, v.OperatorOrigin)
		})
	}
}

func TestRegisterVersionFacts(t *testing.T) {
	t.Parallel()
	r := registry.New()
	before := time.Now().UTC()
	v := register(t, r, newTool("echo"))
	after := time.Now().UTC()

	assert.Equal(t, "USD", v.Tool.Pricing.Currency, "currency defaults to USD")
	assert.False(t, v.Tool.UpdatedAt.Before(before) || v.Tool.UpdatedAt.After(after), "UpdatedAt %v defaults to now", v.Tool.UpdatedAt)
	assert.Equal(t, time.UTC, v.Tool.UpdatedAt.Location())
	assert.Regexp(t, digestPattern, v.Digest)
	assert.Equal(t, []string{"api.example.com", "cdn.example.com"}, v.Capabilities.AllowedOutboundDomains)
	assert.True(t, v.Capabilities.Declared)
	assert.True(t, v.Capabilities.ReadOnly)

	require.NotNil(t, v.Input)
	assert.Nil(t, v.Input.Validate([]byte(`{"q":"x"}`), "input"))
	assert.Equal(t, []toolgatetype.FieldError{{Path: "input.q", Message: "is required"}}, v.Input.Validate([]byte(`{}`), "input"))
	require.NotNil(t, v.Output)
	assert.NotEmpty(t, v.Output.Validate([]byte(`{"answer":1}`), "output"))

	t.Run("explicit UpdatedAt kept", func(t *testing.T) {
		t.Parallel()
		tool := newTool("echo")
		tool.UpdatedAt = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
		v := register(t, registry.New(), tool)
		assert.Equal(t, tool.UpdatedAt, v.Tool.UpdatedAt)
	})
	t.Run("not immutable has no digest", func(t *testing.T) {
		t.Parallel()
		tool := newTool("echo")
		tool.Immutable = false
		v := register(t, registry.New(), tool)
		assert.Empty(t, v.Digest)
	})
	t.Run("no output schema", func(t *testing.T) {
		t.Parallel()
		for _, out := range []json.RawMessage{nil, json.RawMessage("null")} {
			tool := newTool("echo")
			tool.OutputSchema = out
			v := register(t, registry.New(), tool)
			assert.Nil(t, v.Output, "output schema %q", out)
			assert.Regexp(t, digestPattern, v.Digest)
		}
	})
	t.Run("trailing slash on the origin does not change the digest", func(t *testing.T) {
		t.Parallel()
		slash := newTool("echo")
		slash.Endpoint.Origin = testOrigin + "/"
		assert.Equal(t, v.Digest, register(t, registry.New(), slash).Digest)
	})
}

func TestRegisterVersions(t *testing.T) {
	t.Parallel()
	r := registry.New()
	v1 := register(t, r, newTool("echo"))

	again := newTool("echo")
	again.Name = "Echo again"
	require.ErrorIs(t, r.Register(again), registry.ErrDuplicate, "same version")

	two := newTool("echo")
	two.Version = 2
	two.Name = "Echo v2"
	v2 := register(t, r, two)
	assert.Equal(t, 2, v2.Tool.Version)
	assert.Equal(t, "Echo v2", v2.Tool.Name)
	assert.Equal(t, v1.Tool.ID, v2.Tool.ID, "the id is the tool's, not the version's")
	assert.NotEqual(t, v1.Digest, v2.Digest)

	older := newTool("echo")
	older.Version = 1
	older.Name = "Echo rewritten"
	require.ErrorIs(t, r.Register(older), registry.ErrDuplicate, "lower version")
	require.ErrorIs(t, r.Register(two), registry.ErrDuplicate, "current version again")

	cur, err := r.Lookup("echo")
	require.NoError(t, err)
	assert.Same(t, v2, cur)

	versions, err := r.Versions(v1.Tool.ID)
	require.NoError(t, err)
	require.Len(t, versions, 2)
	assert.Same(t, v1, versions[0])
	assert.Same(t, v2, versions[1])
	assert.Equal(t, "Tool echo", versions[0].Tool.Name, "the earlier version is kept as it was")

	list, total := r.List("", 10, 0)
	assert.Equal(t, 1, total, "only the current version is listed")
	require.Len(t, list, 1)
	assert.Same(t, v2, list[0])
}

func TestRegisterRejectsIDConflicts(t *testing.T) {
	t.Parallel()
	t.Run("id changes between versions", func(t *testing.T) {
		t.Parallel()
		r := registry.New()
		register(t, r, newTool("echo"))
		two := newTool("echo")
		two.Version = 2
		two.ID = "3b241101-e2bb-4255-8caf-4136c566a962"
		require.ErrorIs(t, r.Register(two), registry.ErrInvalidTool)
		v, err := r.Lookup("echo")
		require.NoError(t, err)
		assert.Equal(t, 1, v.Tool.Version)
	})
	t.Run("id taken by another slug", func(t *testing.T) {
		t.Parallel()
		r := registry.New()
		first := newTool("echo")
		first.ID = "3b241101-e2bb-4255-8caf-4136c566a962"
		register(t, r, first)
		second := newTool("other")
		second.ID = first.ID
		require.ErrorIs(t, r.Register(second), registry.ErrInvalidTool)
		_, err := r.Lookup("other")
		assert.ErrorIs(t, err, registry.ErrNotFound)
		v, err := r.Lookup(first.ID)
		require.NoError(t, err)
		assert.Equal(t, "echo", v.Tool.Slug)
	})
}

func TestStableIDs(t *testing.T) {
	t.Parallel()
	// Ids derived from slugs are UUIDv5 and must not change between releases
	// or gateway instances: clients store them.
	assert.Equal(t, "88f6cb9a-fbe4-5425-8331-17268c5e2922", registry.StableID("tool:echo"))
	assert.Equal(t, registry.StableID("x"), registry.StableID("x"))
	assert.NotEqual(t, registry.StableID("tool:echo"), registry.StableID("tool:echo2"))

	a := register(t, registry.New(), newTool("echo"))
	b := register(t, registry.New(), newTool("echo"))
	assert.Equal(t, a.Tool.ID, b.Tool.ID, "same slug, same id on every registry")
	assert.Equal(t, "88f6cb9a-fbe4-5425-8331-17268c5e2922", a.Tool.ID)
	parsed, err := uuid.Parse(a.Tool.ID)
	require.NoError(t, err)
	assert.Equal(t, uuid.Version(5), parsed.Version())

	other := register(t, registry.New(), newTool("other"))
	assert.NotEqual(t, a.Tool.ID, other.Tool.ID)
	assert.Equal(t, a.Tool.Provider.ID, other.Tool.Provider.ID, "provider id derives from the provider name")
	assert.Equal(t, "708c602d-fe90-5288-a0c3-b6602333c728", a.Tool.Provider.ID)

	explicit := newTool("explicit")
	explicit.ID = "3b241101-e2bb-4255-8caf-4136c566a962"
	explicit.Provider.ID = "0c0b7a8e-4c1d-4b7e-9a57-2d8f1b7f0a10"
	v := register(t, registry.New(), explicit)
	assert.Equal(t, explicit.ID, v.Tool.ID)
	assert.Equal(t, explicit.Provider.ID, v.Tool.Provider.ID)
}

func TestLookupBySlugAndID(t *testing.T) {
	t.Parallel()
	r := registry.New()
	v := register(t, r, newTool("echo"))
	register(t, r, newTool("other"))

	byID, err := r.Lookup(v.Tool.ID)
	require.NoError(t, err)
	assert.Same(t, v, byID)

	for _, unknown := range []string{"nope", "", "ECHO", registry.StableID("tool:nope")} {
		_, err := r.Lookup(unknown)
		assert.ErrorIs(t, err, registry.ErrNotFound, "Lookup(%q)", unknown)
		_, err = r.Versions(unknown)
		assert.ErrorIs(t, err, registry.ErrNotFound, "Versions(%q)", unknown)
		assert.ErrorIs(t, r.SetTrust(unknown, registry.Trust{EndpointVerified: registry.Bool(true)}), registry.ErrNotFound)
		assert.ErrorIs(t, r.SetOrigin(unknown, "https://mirror.example.com"), registry.ErrNotFound)
	}
}

func TestRegisterCopiesDefinition(t *testing.T) {
	t.Parallel()
	const mirror = "http://127.0.0.1:9000"
	r := registry.New()
	readOnly := true
	tool := newTool("echo")
	tool.Capabilities.ReadOnly = &readOnly
	logo := "https://api.example.com/logo.png"
	tool.LogoURL = &logo
	v := register(t, r, tool)
	digest := v.Digest

	// The caller goes on changing everything it still holds.
	tool.Name = "Changed"
	tool.Tags[0] = "changed"
	tool.Tags = append(tool.Tags, "more")
	i := strings.Index(string(tool.InputSchema), `"string"`)
	require.Positive(t, i)
	copy(tool.InputSchema[i:], `"number"`)
	j := strings.Index(string(tool.OutputSchema), `"string"`)
	require.Positive(t, j)
	copy(tool.OutputSchema[j:], `"number"`)
	readOnly = false
	tool.Capabilities.DataRetention = registry.RetentionStored
	tool.Capabilities.AllowedOutboundDomains[0] = "evil.example.com"
	logo = "https://evil.example.com/logo.png"
	tool.Endpoint.Origin = "https://evil.example.com"

	got, err := r.Lookup("echo")
	require.NoError(t, err)
	assert.Same(t, v, got)
	assert.Equal(t, "Tool echo", got.Tool.Name)
	assert.Equal(t, []string{"alpha", "beta"}, got.Tool.Tags)
	assert.JSONEq(t, `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`, string(got.Tool.InputSchema))
	assert.JSONEq(t, `{"type":"object","properties":{"answer":{"type":"string"}}}`, string(got.Tool.OutputSchema))
	assert.Nil(t, got.Input.Validate([]byte(`{"q":"text"}`), "input"), "the compiled schema is the registered one")
	require.NotNil(t, got.Tool.Capabilities.ReadOnly)
	assert.True(t, *got.Tool.Capabilities.ReadOnly)
	assert.Empty(t, got.Tool.Capabilities.DataRetention)
	assert.Equal(t, []string{"cdn.example.com"}, got.Tool.Capabilities.AllowedOutboundDomains)
	assert.Equal(t, "https://api.example.com/logo.png", *got.Tool.LogoURL)
	assert.Equal(t, testOrigin, got.Tool.Endpoint.Origin)
	assert.Equal(t, digest, got.Digest)
	assert.Equal(t, digest, digestOf(t, got.Tool, testOrigin), "the registered definition still hashes to its digest")

	// A rebuild (here by an origin override) hashes the registered definition,
	// never what the caller changed since: it matches an untouched twin.
	require.NoError(t, r.SetOrigin("echo", mirror))
	twin := registry.New()
	register(t, twin, newTool("echo"))
	require.NoError(t, twin.SetOrigin("echo", mirror))
	moved, err := r.Lookup("echo")
	require.NoError(t, err)
	want, err := twin.Lookup("echo")
	require.NoError(t, err)
	assert.Equal(t, want.Digest, moved.Digest)
	assert.Equal(t, want.Capabilities, moved.Capabilities)
}

func TestList(t *testing.T) {
	t.Parallel()
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	add := func(t *testing.T, r *registry.Registry, slug, name, description, category string, verified bool, age time.Duration) {
		tool := newTool(slug)
		tool.Name, tool.Description, tool.Category = name, description, category
		tool.Endpoint.Verified = verified
		tool.UpdatedAt = base.Add(-age)
		register(t, r, tool)
	}
	r := registry.New()
	add(t, r, "delta", "Weather Now", "Current conditions", "forecasts", false, 0)
	add(t, r, "alpha", "Stock quote", "Prices, not WEATHER", "finance", false, 0) // same time as delta
	add(t, r, "bravo", "Translator", "Translates text", "language", true, 2*time.Hour)
	add(t, r, "charlie", "Storm alerts", "Alerts", "Weather", true, time.Hour)
	add(t, r, "echo", "Geocoder", "Places to coordinates", "maps", false, 3*time.Hour)

	slugs := func(vs []*registry.Version) []string {
		out := []string{}
		for _, v := range vs {
			out = append(out, v.Tool.Slug)
		}
		return out
	}

	t.Run("order: verified first, then newest, then slug", func(t *testing.T) {
		t.Parallel()
		got, total := r.List("", 100, 0)
		assert.Equal(t, 5, total)
		assert.Equal(t, []string{"charlie", "bravo", "alpha", "delta", "echo"}, slugs(got))
	})
	t.Run("paging", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			limit, offset int
			want          []string
		}{
			{2, 0, []string{"charlie", "bravo"}},
			{2, 2, []string{"alpha", "delta"}},
			{2, 4, []string{"echo"}},
			{2, 5, []string{}},
			{10, 99, []string{}},
			{0, 0, []string{}},
			{1, 3, []string{"delta"}},
		}
		for _, c := range cases {
			got, total := r.List("", c.limit, c.offset)
			assert.Equal(t, 5, total, "limit %d offset %d", c.limit, c.offset)
			assert.Equal(t, c.want, slugs(got), "limit %d offset %d", c.limit, c.offset)
		}
	})
	t.Run("search", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			q     string
			limit int
			want  []string
			total int
		}{
			{"weather", 10, []string{"charlie", "alpha", "delta"}, 3}, // category, description, name
			{"  WeAtHeR ", 10, []string{"charlie", "alpha", "delta"}, 3},
			{"weather", 1, []string{"charlie"}, 3},
			{"translates", 10, []string{"bravo"}, 1},
			{"maps", 10, []string{"echo"}, 1},
			{"nothing like this", 10, []string{}, 0},
		}
		for _, c := range cases {
			got, total := r.List(c.q, c.limit, 0)
			assert.Equal(t, c.total, total, "q %q", c.q)
			assert.Equal(t, c.want, slugs(got), "q %q", c.q)
		}
	})
	t.Run("verifying a tool moves it up", func(t *testing.T) {
		t.Parallel()
		r := registry.New()
		add(t, r, "old", "Old", "old tool", "x", false, time.Hour)
		add(t, r, "new", "New", "new tool", "x", false, 0)
		got, _ := r.List("", 10, 0)
		require.Equal(t, []string{"new", "old"}, slugs(got))
		require.NoError(t, r.SetTrust("old", registry.Trust{EndpointVerified: registry.Bool(true)}))
		got, _ = r.List("", 10, 0)
		assert.Equal(t, []string{"old", "new"}, slugs(got))
	})
}

func TestSetTrust(t *testing.T) {
	t.Parallel()
	r := registry.New()
	v0 := register(t, r, newTool("echo"))
	require.False(t, v0.Tool.Endpoint.Verified)

	before := time.Now().UTC()
	require.NoError(t, r.SetTrust("echo", registry.Trust{EndpointVerified: registry.Bool(true)}))
	after := time.Now().UTC()
	v1, err := r.Lookup("echo")
	require.NoError(t, err)
	require.NotSame(t, v0, v1, "an override publishes a new version")
	assert.True(t, v1.Tool.Endpoint.Verified)
	require.NotNil(t, v1.Tool.Endpoint.VerifiedAt)
	assert.False(t, v1.Tool.Endpoint.VerifiedAt.Before(before) || v1.Tool.Endpoint.VerifiedAt.After(after))
	assert.False(t, v1.Tool.Provider.PaymentVerified, "a nil field keeps its value")
	assert.Equal(t, v0.Digest, v1.Digest, "trust is not part of the manifest")
	assert.Equal(t, v0.Origin, v1.Origin)
	assert.Equal(t, v0.Capabilities, v1.Capabilities)
	// Readers holding the earlier version never see it change.
	assert.False(t, v0.Tool.Endpoint.Verified)
	assert.Nil(t, v0.Tool.Endpoint.VerifiedAt)

	require.NoError(t, r.SetTrust(v0.Tool.ID, registry.Trust{PaymentVerified: registry.Bool(true)}))
	v2, err := r.Lookup("echo")
	require.NoError(t, err)
	assert.True(t, v2.Tool.Provider.PaymentVerified)
	assert.True(t, v2.Tool.Endpoint.Verified)
	assert.Equal(t, v1.Tool.Endpoint.VerifiedAt, v2.Tool.Endpoint.VerifiedAt)
	assert.False(t, v1.Tool.Provider.PaymentVerified)
	assert.Equal(t, v0.Digest, v2.Digest)

	versions, err := r.Versions("echo")
	require.NoError(t, err)
	require.Len(t, versions, 1, "an override is not a new tool version")
	assert.Same(t, v2, versions[0])

	require.NoError(t, r.SetTrust("echo", registry.Trust{
		EndpointVerified: registry.Bool(false),
		PaymentVerified:  registry.Bool(false),
	}))
	v3, err := r.Lookup("echo")
	require.NoError(t, err)
	assert.False(t, v3.Tool.Endpoint.Verified)
	assert.Nil(t, v3.Tool.Endpoint.VerifiedAt, "unverifying clears VerifiedAt")
	assert.False(t, v3.Tool.Provider.PaymentVerified)
	assert.Equal(t, v0.Digest, v3.Digest)
	assert.True(t, v2.Tool.Endpoint.Verified)
	assert.True(t, v2.Tool.Provider.PaymentVerified)
}

func TestSetOrigin(t *testing.T) {
	t.Parallel()
	r := registry.New()
	v0 := register(t, r, newTool("echo"))

	for _, bad := range []string{
		"", "mirror.example.com", "ftp://mirror.example.com", "https://mirror.example.com/v1",
		"https://mirror.example.com?x=1", "https://mirror.example.com#x", "https://u:p@mirror.example.com",
	} {
		assert.ErrorIs(t, r.SetOrigin("echo", bad), registry.ErrInvalidTool, "origin %q", bad)
		cur, err := r.Lookup("echo")
		require.NoError(t, err)
		assert.Same(t, v0, cur, "a refused origin changes nothing")
	}

	require.NoError(t, r.SetOrigin(v0.Tool.ID, "http://127.0.0.1:8080/"))
	v1, err := r.Lookup("echo")
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:8080", v1.Origin)
	assert.True(t, v1.OperatorOrigin)
	assert.NotEqual(t, v0.Digest, v1.Digest, "the endpoint is part of the manifest")
	assert.Equal(t, digestOf(t, v0.Tool, "http://127.0.0.1:8080"), v1.Digest)
	assert.Equal(t, []string{"127.0.0.1", "cdn.example.com"}, v1.Capabilities.AllowedOutboundDomains,
		"the new origin's host is allowed, the old one no longer")
	// The earlier version is untouched.
	assert.Equal(t, testOrigin, v0.Origin)
	assert.False(t, v0.OperatorOrigin)
	assert.Equal(t, []string{"api.example.com", "cdn.example.com"}, v0.Capabilities.AllowedOutboundDomains)

	// A later version of the tool keeps going to the operator's origin.
	two := newTool("echo")
	two.Version = 2
	v2 := register(t, r, two)
	assert.Equal(t, "http://127.0.0.1:8080", v2.Origin)
	assert.True(t, v2.OperatorOrigin)
	assert.Contains(t, v2.Capabilities.AllowedOutboundDomains, "127.0.0.1")
	assert.Equal(t, digestOf(t, v2.Tool, "http://127.0.0.1:8080"), v2.Digest)
}

func TestConcurrentLookupAndSetTrust(t *testing.T) {
	t.Parallel()
	r := registry.New()
	v0 := register(t, r, newTool("echo"))
	register(t, r, newTool("other"))

	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				v, err := r.Lookup("echo")
				if !assert.NoError(t, err) {
					return
				}
				// A version is a consistent snapshot: the flag and its time agree.
				assert.Equal(t, v.Tool.Endpoint.Verified, v.Tool.Endpoint.VerifiedAt != nil)
				assert.Equal(t, v0.Digest, v.Digest)
				list, total := r.List("", 10, 0)
				assert.Equal(t, 2, total)
				assert.Len(t, list, 2)
				_, err = r.Versions(v0.Tool.ID)
				assert.NoError(t, err)
			}
		}()
	}
	for i := range 300 {
		require.NoError(t, r.SetTrust("echo", registry.Trust{
			EndpointVerified: registry.Bool(i%2 == 0),
			PaymentVerified:  registry.Bool(i%3 == 0),
		}))
	}
	close(done)
	wg.Wait()
	assert.False(t, v0.Tool.Endpoint.Verified, "the first published version never changed")
	assert.False(t, v0.Tool.Provider.PaymentVerified)
}

func TestMustRegisterPanicsOnInvalidTool(t *testing.T) {
	t.Parallel()
	// Invalid, so Default is left as it was.
	assert.Panics(t, func() { registry.MustRegister(&registry.Tool{Slug: "Not A Slug"}) })
}

// TestTheLargestPriceRegisters: a price just under a trillion, with four
// decimals, is every store's to hold, and registers.
func TestTheLargestPriceRegisters(t *testing.T) {
	t.Parallel()
	require.NoError(t, registry.CheckPrice(decimal.RequireFromString("999999999999.9999")))
	require.ErrorIs(t, registry.CheckPrice(decimal.RequireFromString("1000000000000")), registry.ErrPriceTooLarge)
}
