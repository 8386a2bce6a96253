package recorded_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/tools/recorded"
)

func forecast(t *testing.T, query string) answer {
	t.Helper()
	return get(t, recorded.OpenMeteoOrigin+"/v1/forecast?"+query)
}

// TestOpenMeteoGivesThePublishedAnswers: the requests behind the recorded
// answers get them, byte for byte.
func TestOpenMeteoGivesThePublishedAnswers(t *testing.T) {
	t.Parallel()
	for query, recording := range map[string]string{
		"latitude=52.52&longitude=13.41&current=temperature_2m,wind_speed_10m": recorded.OpenMeteoCurrent,
		"latitude=999&longitude=13.41":                                         recorded.OpenMeteoBadLatitude,
	} {
		a := forecast(t, query)
		want := recorded.Response(recording)
		assert.Equal(t, want.StatusCode, a.status, query)
		assert.Equal(t, want.Header.Get("Content-Type"), a.header.Get("Content-Type"), query)
		assert.True(t, sameBody(recording, a.body), "%s: got %s", query, a.body)
	}
}

// TestOpenMeteoForecasts compares answers with Open-Meteo's documented
// behaviour: the nearest grid cell's coordinates and conditions, the
// current variables asked for in the order asked, and its 400 body for
// coordinates out of range or data it does not have.
func TestOpenMeteoForecasts(t *testing.T) {
	t.Parallel()
	const units = `"utc_offset_seconds":0,"timezone":"GMT","timezone_abbreviation":"GMT"`
	cases := []struct {
		name, query string
		status      int
		want        string
	}{
		{"the nearest cell, Paris", "latitude=48.8566&longitude=2.3522&current=temperature_2m,wind_speed_10m", 200,
			`{"latitude":48.86,"longitude":2.36,"generationtime_ms":0.056,` + units + `,"elevation":43.0,"current_units":{"time":"iso8601","interval":"seconds","temperature_2m":"°C","wind_speed_10m":"km/h"},"current":{"time":"2024-11-23T18:15","interval":900,"temperature_2m":9.6,"wind_speed_10m":22.0}}`},
		{"a few kilometres off still finds Paris", "latitude=48.9&longitude=2.4&current=temperature_2m", 200,
			`{"latitude":48.86,"longitude":2.36,"generationtime_ms":0.056,` + units + `,"elevation":43.0,"current_units":{"time":"iso8601","interval":"seconds","temperature_2m":"°C"},"current":{"time":"2024-11-23T18:15","interval":900,"temperature_2m":9.6}}`},
		{"variables in the order asked", "latitude=-33.8688&longitude=151.2093&current=wind_speed_10m,temperature_2m", 200,
			`{"latitude":-33.86,"longitude":151.2,"generationtime_ms":0.036,` + units + `,"elevation":58.0,"current_units":{"time":"iso8601","interval":"seconds","wind_speed_10m":"km/h","temperature_2m":"°C"},"current":{"time":"2024-11-23T18:15","interval":900,"wind_speed_10m":14.2,"temperature_2m":19.8}}`},
		{"no current variables, no current block", "latitude=52.52&longitude=13.41", 200,
			`{"latitude":52.52,"longitude":13.419998,"generationtime_ms":0.034,` + units + `,"elevation":38.0}`},
		{"several places, an array", "latitude=52.52,48.8566&longitude=13.41,2.3522", 200,
			`[{"latitude":52.52,"longitude":13.419998,"generationtime_ms":0.034,` + units + `,"elevation":38.0},{"latitude":48.86,"longitude":2.36,"generationtime_ms":0.056,` + units + `,"elevation":43.0}]`},
		{"latitude out of range", "latitude=-91&longitude=0", 400, `{"error":true,"reason":"Latitude must be in range of -90 to 90°. Given: -91.0."}`},
		{"longitude out of range", "latitude=0&longitude=180.5", 400, `{"error":true,"reason":"Longitude must be in range of -180 to 180°. Given: 180.5."}`},
		{"latitude not a number", "latitude=north&longitude=0", 400, `{"error":true,"reason":"Latitude must be in range of -90 to 90°. Given: nan."}`},
		{"longitude missing", "latitude=52.52", 400, `{"error":true,"reason":"Parameter 'latitude' and 'longitude' must have the same number of elements"}`},
		{"both missing", "current=temperature_2m", 400, `{"error":true,"reason":"Parameter 'latitude' and 'longitude' must not be empty"}`},
		{"far from every recorded place", "latitude=0&longitude=0&current=temperature_2m", 400, `{"error":true,"reason":"No data is available for this location"}`},
		{"a variable not recorded", "latitude=52.52&longitude=13.41&current=precipitation", 400, `{"error":true,"reason":"No data is available for this location"}`},
		{"an hourly forecast", "latitude=52.52&longitude=13.41&hourly=temperature_2m", 400, `{"error":true,"reason":"No data is available for this location"}`},
		{"another time zone", "latitude=52.52&longitude=13.41&timezone=Europe/Berlin", 400, `{"error":true,"reason":"No data is available for this location"}`},
		{"the recorded settings spelled out", "latitude=52.52&longitude=13.41&timezone=GMT&temperature_unit=celsius&current=temperature_2m", 200,
			`{"latitude":52.52,"longitude":13.419998,"generationtime_ms":0.034,` + units + `,"elevation":38.0,"current_units":{"time":"iso8601","interval":"seconds","temperature_2m":"°C"},"current":{"time":"2024-11-23T18:15","interval":900,"temperature_2m":2.3}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := forecast(t, tc.query)
			assert.Equal(t, tc.status, a.status)
			assert.Equal(t, "application/json; charset=utf-8", a.header.Get("Content-Type"))
			assert.Equal(t, tc.want, string(a.body))
		})
	}
}
