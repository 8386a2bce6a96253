package tools_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tools"
	"github.com/toolgate/toolgate/tools/recorded"
)

func TestCurrentWeatherBuildRequest(t *testing.T) {
	t.Parallel()
	const current = "current=temperature_2m%2Cwind_speed_10m"
	cases := []struct {
		name, origin, input, want string
	}{
		{"Berlin", recorded.OpenMeteoOrigin, `{"latitude":52.52,"longitude":13.41}`, "https://api.open-meteo.com/v1/forecast?" + current + "&latitude=52.52&longitude=13.41"},
		{"southern and western", recorded.OpenMeteoOrigin, `{"latitude":-33.8688,"longitude":-151.2093}`, "https://api.open-meteo.com/v1/forecast?" + current + "&latitude=-33.8688&longitude=-151.2093"},
		{"bounds and zero", recorded.OpenMeteoOrigin, `{"latitude":90,"longitude":0}`, "https://api.open-meteo.com/v1/forecast?" + current + "&latitude=90&longitude=0"},
		{"operator origin", "http://127.0.0.1:9005", `{"latitude":1.5,"longitude":-180}`, "http://127.0.0.1:9005/v1/forecast?" + current + "&latitude=1.5&longitude=-180"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := buildRequest(t, tools.CurrentWeather(), tc.origin, tc.input)
			assert.Equal(t, http.MethodGet, req.Method)
			assert.Equal(t, tc.want, req.URL.String())
			assert.Equal(t, "application/json", req.Header.Get("Accept"))
		})
	}
}

func TestCurrentWeatherInputSchema(t *testing.T) {
	t.Parallel()
	checkInputs(t, tools.CurrentWeather(), []inputCase{
		{"valid", `{"latitude":52.52,"longitude":13.41}`, true},
		{"bounds", `{"latitude":-90,"longitude":180}`, true},
		{"latitude 90.1", `{"latitude":90.1,"longitude":0}`, false},
		{"longitude -180.5", `{"latitude":0,"longitude":-180.5}`, false},
		{"missing longitude", `{"latitude":0}`, false},
		{"as text", `{"latitude":"52.52","longitude":"13.41"}`, false},
		{"unknown property", `{"latitude":0,"longitude":0,"hourly":"rain"}`, false},
	})
}

func TestCurrentWeatherDeclaresNoOutputSchema(t *testing.T) {
	t.Parallel()
	tool := tools.CurrentWeather()
	assert.Nil(t, tool.OutputSchema)
	assert.Nil(t, tool.Capabilities)
	assert.False(t, tool.Immutable)
}

func TestCurrentWeatherNormalizeRecording(t *testing.T) {
	t.Parallel()
	out, err := tools.CurrentWeather().Normalize(recorded.Response(recorded.OpenMeteoCurrent))
	require.NoError(t, err)
	require.Equal(t, tools.CurrentWeatherReport{
		Latitude:     52.52,
		Longitude:    13.419998,
		CurrentUnits: tools.CurrentWeatherUnits{Time: "iso8601", Temperature2m: "°C", WindSpeed10m: "km/h"},
		Current:      tools.CurrentWeatherValue{Time: "2024-11-23T18:15", Temperature2m: ptr(2.3), WindSpeed10m: ptr(10.7)},
	}, out)
	doc, err := json.Marshal(out)
	require.NoError(t, err)
	for _, dropped := range []string{"generationtime_ms", "elevation", "timezone", "utc_offset_seconds", "interval"} {
		assert.NotContains(t, string(doc), dropped)
	}
}

func TestCurrentWeatherNormalizeFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		resp     registry.UpstreamResponse
		code     string
		contains string
	}{
		{"400 reason", recorded.Response(recorded.OpenMeteoBadLatitude), registry.CodeUpstreamError, "Latitude must be in range of -90 to 90°. Given: 999.0."},
		{"429 text", body(429, "Daily API request limit exceeded"), registry.CodeUpstreamError, "HTTP 429 Too Many Requests; provider message: Daily API request limit exceeded"},
		{"no current block", body(200, `{"latitude":52.52,"longitude":13.41}`), registry.CodeUpstreamInvalidResponse, "current conditions"},
		{"empty", body(200, ""), registry.CodeUpstreamInvalidResponse, "empty body"},
	}
	tool := tools.CurrentWeather()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := tool.Normalize(tc.resp)
			require.Nil(t, out)
			ue := upstreamErr(t, err)
			assert.Equal(t, tc.code, ue.Code)
			assert.Contains(t, ue.Message, tc.contains)
		})
	}
}
