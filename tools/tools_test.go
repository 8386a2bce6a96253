package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

var slugs = []string{"earthquake-search", "exchange-rates", "public-holidays", "goal-data", "current-weather"}

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func TestAllRegistersIntoANewRegistry(t *testing.T) {
	t.Parallel()
	r := registry.New()
	for _, tool := range tools.All() {
		require.NoError(t, r.Register(tool), tool.Slug)
	}
	for _, slug := range slugs {
		v, err := r.Lookup(slug)
		require.NoError(t, err)
		if slug == "current-weather" {
			assert.Empty(t, v.Digest, "current-weather has no immutable version")
			assert.Nil(t, v.Output)
		} else {
			assert.Regexp(t, digestPattern, v.Digest, slug)
			assert.NotNil(t, v.Output, slug)
		}
	}
	_, total := r.List("", 100, 0)
	assert.Equal(t, len(slugs), total)
}

func TestRegisterAll(t *testing.T) {
	t.Parallel()
	r := registry.New()
	require.NoError(t, tools.RegisterAll(r))
	for _, slug := range slugs {
		_, err := r.Lookup(slug)
		assert.NoError(t, err, slug)
	}
	// A second time is a duplicate, reported through the registry's sentinel.
	assert.ErrorIs(t, tools.RegisterAll(r), registry.ErrDuplicate)
}

func TestImportRegistersIntoDefault(t *testing.T) {
	t.Parallel()
	for _, slug := range slugs {
		v, err := registry.Default.Lookup(slug)
		require.NoError(t, err, slug)
		assert.Equal(t, slug, v.Tool.Slug)
	}
}

func TestAllReturnsFreshDefinitions(t *testing.T) {
	t.Parallel()
	first := tools.All()
	first[0].Tags[0] = "changed"
	first[0].InputSchema[0] = ' '
	*first[0].Capabilities.ReadOnly = false
	*first[3].Endpoint.VerifiedAt = first[3].Endpoint.VerifiedAt.AddDate(1, 0, 0)

	second := tools.All()
	assert.Equal(t, "earthquakes", second[0].Tags[0])
	assert.Equal(t, byte('{'), second[0].InputSchema[0])
	assert.True(t, *second[0].Capabilities.ReadOnly)
	assert.Equal(t, 2026, second[3].Endpoint.VerifiedAt.Year())
}

// TestManifestDigestsArePinned fails when anything in a tool's manifest
// changes. That is a new version of the tool: bump its Version (and then
// update the digest here), because users approved the old digest.
func TestManifestDigestsArePinned(t *testing.T) {
	t.Parallel()
	r := registry.New()
	require.NoError(t, tools.RegisterAll(r))
	want := map[string]string{
		"earthquake-search": "sha256:b199b5f5d067301047583d020d59b6342378d7212885e5459a57c82912d0e7d9",
		"exchange-rates":    "sha256:85c0448593a147f0750f0c24b93bffdd72bb6f27d7e4e078767aca7e7e402e47",
		"public-holidays":   "sha256:05bb79eb026806b20dd5b76fc3aa0e2cc83d07f5a811ec45d14d39c1d003a224",
		"goal-data":         "sha256:d28dd32818ff8016bc1b1b1d82a4e483f6c77b9687a211e5ac37e6def918f896",
		"current-weather":   "", // no immutable version
	}
	for slug, digest := range want {
		v, err := r.Lookup(slug)
		require.NoError(t, err)
		assert.Equal(t, digest, v.Digest, slug)
	}
}

func TestDigestsAreStable(t *testing.T) {
	t.Parallel()
	a, b := registry.New(), registry.New()
	require.NoError(t, tools.RegisterAll(a))
	require.NoError(t, tools.RegisterAll(b))
	for _, slug := range slugs {
		va, err := a.Lookup(slug)
		require.NoError(t, err)
		vb, err := b.Lookup(slug)
		require.NoError(t, err)
		assert.Equal(t, va.Digest, vb.Digest, slug)
		assert.Equal(t, va.Tool.UpdatedAt, vb.Tool.UpdatedAt, slug)
		assert.Equal(t, va.Tool.ID, vb.Tool.ID, slug)
	}
}

func TestToolFacts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		slug, name, category, pricing, amount, tier, origin string
		immutable, endpointVerified                         bool
	}{
		{"earthquake-search", "Earthquake Search", "Data", registry.PricingFree, "0.0000", "unverified", recorded.USGSOrigin, true, false},
		{"exchange-rates", "Live Exchange Rates", "Finance", registry.PricingFree, "0.0000", "unverified", recorded.FrankfurterOrigin, true, false},
		{"public-holidays", "Public Holidays", "Productivity", registry.PricingFree, "0.0000", "unverified", recorded.NagerOrigin, true, false},
		{"goal-data", "Goal Data", "developer-tools", registry.PricingPerCall, "0.1000", "basic", recorded.GoalDataOrigin, true, true},
		{"current-weather", "Current Weather", "weather", registry.PricingPerCall, "0.0010", "unverified", recorded.OpenMeteoOrigin, false, false},
	}
	r := registry.New()
	require.NoError(t, tools.RegisterAll(r))
	for _, tc := range cases {
		t.Run(tc.slug, func(t *testing.T) {
			t.Parallel()
			v, err := r.Lookup(tc.slug)
			require.NoError(t, err)
			tool := v.Tool
			assert.Equal(t, tc.name, tool.Name)
			assert.NotEmpty(t, tool.Description)
			assert.NotEmpty(t, tool.Tags)
			assert.Equal(t, tc.category, tool.Category)
			assert.Equal(t, 1, tool.Version)
			assert.Equal(t, tc.immutable, tool.Immutable)
			assert.Equal(t, tc.pricing, tool.Pricing.Type)
			assert.Equal(t, tc.amount, tool.Pricing.Amount.StringFixed(4))
			assert.Equal(t, "USD", tool.Pricing.Currency)
			assert.Equal(t, tc.tier, tool.Provider.TrustTier)
			assert.False(t, tool.Provider.PaymentVerified)
			assert.Equal(t, tc.origin, tool.Endpoint.Origin)
			assert.Equal(t, tc.origin, v.Origin)
			assert.Equal(t, tc.endpointVerified, tool.Endpoint.Verified)
			assert.Equal(t, tc.endpointVerified, tool.Endpoint.VerifiedAt != nil)
			assert.NotEmpty(t, tool.Endpoint.Method)
			assert.NotEmpty(t, tool.Endpoint.Path)
			assert.False(t, tool.UpdatedAt.IsZero())
			host, err := url.Parse(tc.origin)
			require.NoError(t, err)
			assert.Equal(t, []string{host.Hostname()}, v.Capabilities.AllowedOutboundDomains)
		})
	}
}

func TestDeclaredCapabilities(t *testing.T) {
	t.Parallel()
	readOnly := func(openWorld bool, host string) toolgatetype.NormalizedCapabilities {
		return toolgatetype.NormalizedCapabilities{
			Declared: true, ReadOnly: true, Idempotent: true, OpenWorld: openWorld, SeesUntrustedContent: true,
			AllowedOutboundDomains: []string{host}, DataRetention: registry.RetentionNone,
		}
	}
	want := map[string]toolgatetype.NormalizedCapabilities{
		"earthquake-search": readOnly(true, "earthquake.usgs.gov"),
		"exchange-rates":    readOnly(true, "api.frankfurter.dev"),
		"public-holidays":   readOnly(true, "date.nager.at"),
		"goal-data":         readOnly(false, "goal-data.example"),
		"current-weather": {
			OpenWorld: true, SeesUntrustedContent: true,
			AllowedOutboundDomains: []string{"api.open-meteo.com"}, DataRetention: registry.RetentionUnknown,
		},
	}
	r := registry.New()
	require.NoError(t, tools.RegisterAll(r))
	for slug, caps := range want {
		v, err := r.Lookup(slug)
		require.NoError(t, err)
		assert.Equal(t, caps, v.Capabilities, slug)
	}
}

func TestExamplesMatchSchemas(t *testing.T) {
	t.Parallel()
	for _, tool := range tools.All() {
		require.NotEmpty(t, tool.ExampleInput, tool.Slug)
		assert.Empty(t, schemaOf(t, tool.InputSchema).Validate(tool.ExampleInput, "input"), tool.Slug)
		if tool.OutputSchema == nil {
			assert.Nil(t, tool.ExampleOutput, tool.Slug)
			continue
		}
		assert.Empty(t, schemaOf(t, tool.OutputSchema).Validate(tool.ExampleOutput, "output"), tool.Slug)
	}
}

func TestOutputSchemasRefuseUndeclaredFields(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tool *registry.Tool
		doc  string
	}{
		{tools.EarthquakeSearch(), `{"type":"FeatureCollection","metadata":{"count":0,"title":"t","status":200},"features":[],"bbox":[]}`},
		{tools.EarthquakeSearch(), `{"type":"FeatureCollection","metadata":{"count":0,"title":"t","status":200,"approved":true},"features":[]}`},
		{tools.EarthquakeSearch(), `{"type":"Feature","metadata":{"count":0,"title":"t","status":200},"features":[]}`},
		{tools.ExchangeRates(), `[{"date":"2026-03-25","base":"USD","quote":"EUR","rate":0.9,"priceUsd":"0"}]`},
		{tools.PublicHolidays(), `[{"date":"2027-01-01","name":"n","countryCode":"PT","nationalHoliday":true,"holidayTypes":[],"localName":"Ano Novo"}]`},
		{tools.GoalData(), `{"goal":"g","step":1,"datum":"d","goalAchieved":false,"instructions":"x"}`},
	}
	for _, tc := range cases {
		assert.NotEmpty(t, schemaOf(t, tc.tool.OutputSchema).Validate([]byte(tc.doc), "output"), tc.doc)
	}
}

// TestRecordedTransportAnswersEveryTool runs each tool end to end offline:
// its own request, against its own origin or an operator's, through the
// recorded transport, normalized and checked against its output schema.
func TestRecordedTransportAnswersEveryTool(t *testing.T) {
	t.Parallel()
	client := &http.Client{Transport: recorded.Transport()}
	cases := []struct {
		tool  *registry.Tool
		input string
	}{
		{tools.EarthquakeSearch(), `{"starttime":"2024-09-29","endtime":"2024-09-30"}`},
		{tools.ExchangeRates(), `{"base":"USD","quotes":"EUR,GBP"}`},
		{tools.PublicHolidays(), `{"countryCode":"PT","year":2027}`},
		{tools.GoalData(), `{"goal":"reach the summit","step":3}`},
		{tools.CurrentWeather(), `{"latitude":52.52,"longitude":13.41}`},
	}
	for _, tc := range cases {
		for _, origin := range []string{tc.tool.Endpoint.Origin, "http://127.0.0.1:9009"} {
			t.Run(tc.tool.Slug+" at "+origin, func(t *testing.T) {
				t.Parallel()
				req := buildRequest(t, tc.tool, origin, tc.input)
				resp, err := client.Do(req)
				require.NoError(t, err)
				raw, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))

				out, err := tc.tool.Normalize(registry.UpstreamResponse{StatusCode: resp.StatusCode, Header: resp.Header, Body: raw})
				require.NoError(t, err)
				if tc.tool.OutputSchema != nil {
					requireMatchesOutputSchema(t, tc.tool, out)
				}
			})
		}
	}
}

func TestRecordedTransportErrorsReachTheCaller(t *testing.T) {
	t.Parallel()
	client := &http.Client{Transport: recorded.Transport()}
	cases := []struct {
		tool     *registry.Tool
		input    string
		contains string
	}{
		{tools.ExchangeRates(), `{"base":"USD","quotes":"EUR,FOO"}`, "invalid currency: FOO"},
		{tools.PublicHolidays(), `{"countryCode":"ZZ","year":2027}`, "HTTP 404"},
	}
	for _, tc := range cases {
		t.Run(tc.tool.Slug, func(t *testing.T) {
			t.Parallel()
			resp, err := client.Do(buildRequest(t, tc.tool, tc.tool.Endpoint.Origin, tc.input))
			require.NoError(t, err)
			raw, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			_, err = tc.tool.Normalize(registry.UpstreamResponse{StatusCode: resp.StatusCode, Header: resp.Header, Body: raw})
			ue := upstreamErr(t, err)
			assert.Equal(t, registry.CodeUpstreamError, ue.Code)
			assert.Contains(t, ue.Message, tc.contains)
		})
	}
}

func TestBuildRequestHonoursCancellation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, err := tools.ExchangeRates().BuildRequest(ctx, recorded.FrankfurterOrigin, json.RawMessage(`{"base":"USD","quotes":"EUR"}`))
	require.NoError(t, err)
	_, err = recorded.Transport().RoundTrip(req)
	assert.True(t, errors.Is(err, context.Canceled), "got %v", err)
}
