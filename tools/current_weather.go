package tools

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/toolgate/toolgate/registry"
)

const weatherProvider = "the Open-Meteo forecast service"

// weatherCurrent is the list of current-conditions variables requested.
const weatherCurrent = "temperature_2m,wind_speed_10m"

const weatherInputSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["latitude", "longitude"],
  "additionalProperties": false,
  "properties": {
    "latitude": {"type": "number", "minimum": -90, "maximum": 90},
    "longitude": {"type": "number", "minimum": -180, "maximum": 180}
  }
}`

// CurrentWeather returns the current-weather tool: current temperature and
// wind at a latitude and longitude from Open-Meteo. It ships as the
// service description's example of a tool that is listed but not callable:
// paid (0.0010 USD per call), with no immutable version, no declared
// capabilities, an unverified endpoint and no output schema. Without an
// output schema every execution would fail, so Normalize exists to keep
// the definition complete for the day a provider declares one.
func CurrentWeather() *registry.Tool {
	return &registry.Tool{
		Slug:        "current-weather",
		Name:        "Current Weather",
		Description: "Current weather at a latitude and longitude",
		Category:    "weather",
		Tags:        []string{"weather", "forecast", "temperature", "wind"},
		Provider: registry.Provider{
			Name:      "Open-Meteo",
			TrustTier: "unverified",
		},
		Endpoint: registry.Endpoint{
			Origin: "https://api.open-meteo.com",
			Method: http.MethodGet,
			Path:   "/v1/forecast",
		},
		Version:      1,
		Immutable:    false,
		Capabilities: nil,
		Pricing:      registry.Pricing{Type: registry.PricingPerCall, Amount: decimal.RequireFromString("0.0010"), Currency: "USD"},
		InputSchema:  json.RawMessage(weatherInputSchema),
		OutputSchema: nil,
		BuildRequest: buildWeatherRequest,
		Normalize:    normalizeWeather,
		ExampleInput: json.RawMessage(`{"latitude":52.52,"longitude":13.41}`),
		UpdatedAt:    time.Date(2026, time.January, 12, 9, 20, 0, 0, time.UTC),
	}
}

func init() { registry.MustRegister(CurrentWeather()) }

type weatherInput struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
}

func buildWeatherRequest(ctx context.Context, origin string, input json.RawMessage) (*http.Request, error) {
	var in weatherInput
	if err := decodeInput("current-weather", input, &in); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Set("latitude", strconv.FormatFloat(in.Latitude, 'f', -1, 64))
	q.Set("longitude", strconv.FormatFloat(in.Longitude, 'f', -1, 64))
	q.Set("current", weatherCurrent)
	return newGetRequest(ctx, origin, "/v1/forecast", q)
}

// CurrentWeatherReport is what current-weather's Normalize produces: Open-
// Meteo's answer reduced to the position, the requested current values and
// their units. It is not a declared output (the tool has no output schema).
type CurrentWeatherReport struct {
	Latitude     float64             `json:"latitude"`
	Longitude    float64             `json:"longitude"`
	CurrentUnits CurrentWeatherUnits `json:"current_units"`
	Current      CurrentWeatherValue `json:"current"`
}

// CurrentWeatherUnits are the units Open-Meteo reports for the values.
type CurrentWeatherUnits struct {
	Time          string `json:"time"`
	Temperature2m string `json:"temperature_2m"`
	WindSpeed10m  string `json:"wind_speed_10m"`
}

// CurrentWeatherValue are the current conditions; a value is nil when
// Open-Meteo has none for the place.
type CurrentWeatherValue struct {
	Time          string   `json:"time"`
	Temperature2m *float64 `json:"temperature_2m"`
	WindSpeed10m  *float64 `json:"wind_speed_10m"`
}

type openMeteoForecast struct {
	Latitude     *float64             `json:"latitude"`
	Longitude    *float64             `json:"longitude"`
	CurrentUnits CurrentWeatherUnits  `json:"current_units"`
	Current      *CurrentWeatherValue `json:"current"`
}

// openMeteoError is Open-Meteo's error body, {"error": true, "reason": "..."}.
type openMeteoError struct {
	Reason string `json:"reason"`
}

func normalizeWeather(resp registry.UpstreamResponse) (any, error) {
	if !success(resp.StatusCode) {
		return nil, upstreamFailed(weatherProvider, resp.StatusCode,
			jsonReason(resp.Body, func(e openMeteoError) string { return e.Reason }))
	}
	var raw openMeteoForecast
	if err := decodeBody(weatherProvider, resp.Body, &raw); err != nil {
		return nil, err
	}
	if raw.Latitude == nil || raw.Longitude == nil || raw.Current == nil || raw.Current.Time == "" {
		return nil, invalid(weatherProvider, "the forecast lacks its position or current conditions")
	}
	return CurrentWeatherReport{
		Latitude:     *raw.Latitude,
		Longitude:    *raw.Longitude,
		CurrentUnits: raw.CurrentUnits,
		Current:      *raw.Current,
	}, nil
}
