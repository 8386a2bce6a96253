package recorded

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/tools/recorded/internal/geo"
)

// The simulated Open-Meteo forecast service answers /v1/forecast with the
// recorded current conditions of the grid cell nearest the coordinates.

// openMeteoReachKm is how near a recorded grid cell a request must be to
// be answered from it.
const openMeteoReachKm = 25

var placesData = &dataset[[]weatherCell]{file: "openmeteo_places.json.gz", decode: decodeWeatherCells}

// weatherCell is one recorded grid cell's answer; numbers keep the text
// the service wrote them in.
type weatherCell struct {
	Latitude             json.Number                `json:"latitude"`
	Longitude            json.Number                `json:"longitude"`
	GenerationTimeMS     json.Number                `json:"generationtime_ms"`
	UTCOffsetSeconds     json.Number                `json:"utc_offset_seconds"`
	Timezone             string                     `json:"timezone"`
	TimezoneAbbreviation string                     `json:"timezone_abbreviation"`
	Elevation            json.Number                `json:"elevation"`
	Current              map[string]json.RawMessage `json:"current"`

	lat, lon float64
}

func decodeWeatherCells(raw []byte) ([]weatherCell, error) {
	var cells []weatherCell
	if err := json.Unmarshal(raw, &cells); err != nil {
		return nil, err
	}
	for i := range cells {
		c := &cells[i]
		var err error
		if c.lat, err = c.Latitude.Float64(); err != nil {
			return nil, err
		}
		if c.lon, err = c.Longitude.Float64(); err != nil {
			return nil, err
		}
	}
	return cells, nil
}

// The variables recorded for each cell, with their units.
var weatherUnits = map[string]string{"temperature_2m": "°C", "wind_speed_10m": "km/h"}

// weatherDefaults are the parameter values the recorded answers are for;
// a request for other values, or for anything beyond current conditions,
// gets the service's answer for data it does not have.
var weatherDefaults = map[string][]string{
	"timezone":         {"GMT", "UTC"},
	"timeformat":       {"iso8601"},
	"temperature_unit": {"celsius"},
	"wind_speed_unit":  {"kmh"},
	"windspeed_unit":   {"kmh"},
	"format":           {"json"},
	"hourly":           nil,
	"daily":            nil,
	"minutely_15":      nil,
	"current_weather":  nil,
	"past_days":        {"0"},
	"forecast_days":    nil,
	"past_hours":       nil,
	"forecast_hours":   nil,
	"start_date":       nil,
	"end_date":         nil,
	"start_hour":       nil,
	"end_hour":         nil,
	"models":           nil,
	"elevation":        nil,
	"cell_selection":   {"land", "nearest"},
}

const noWeatherData = "No data is available for this location"

// serveOpenMeteo answers GET /v1/forecast as the service does, for the
// current conditions recorded.
func serveOpenMeteo(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lats, lons := commaList(q["latitude"]), commaList(q["longitude"])
	switch {
	case len(lats) != len(lons):
		writeOpenMeteoError(w, "Parameter 'latitude' and 'longitude' must have the same number of elements")
		return
	case len(lats) == 0:
		writeOpenMeteoError(w, "Parameter 'latitude' and 'longitude' must not be empty")
		return
	}
	coords := make([][2]float32, len(lats))
	for i := range lats {
		lat, lon := parseFloat32(lats[i]), parseFloat32(lons[i])
		if lat > 90 || lat < -90 || lat != lat {
			writeOpenMeteoError(w, "Latitude must be in range of -90 to 90°. Given: "+swiftFloat(lat)+".")
			return
		}
		if lon > 180 || lon < -180 || lon != lon {
			writeOpenMeteoError(w, "Longitude must be in range of -180 to 180°. Given: "+swiftFloat(lon)+".")
			return
		}
		coords[i] = [2]float32{lat, lon}
	}
	for name, allowed := range weatherDefaults {
		if v, ok := q[name]; ok && !slices.Contains(allowed, strings.Join(v, ",")) {
			writeOpenMeteoError(w, noWeatherData)
			return
		}
	}
	variables := commaList(q["current"])
	for _, v := range variables {
		if _, ok := weatherUnits[v]; !ok {
			writeOpenMeteoError(w, noWeatherData)
			return
		}
	}
	var answers []json.RawMessage
	for _, c := range coords {
		cell, ok := nearestCell(placesData.get(), float64(c[0]), float64(c[1]))
		if !ok {
			writeOpenMeteoError(w, noWeatherData)
			return
		}
		answers = append(answers, cell.answer(variables))
	}
	body := []byte(answers[0])
	if len(answers) > 1 {
		body = jsonArray(answers)
	}
	writeBody(w, http.StatusOK, contentJSONUTF, body)
}

func commaList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// parseFloat32 reads a coordinate; what is not a number reads as NaN, which
// no range holds.
func parseFloat32(s string) float32 {
	f, err := strconv.ParseFloat(s, 32)
	if err != nil {
		return float32(math.NaN())
	}
	return float32(f)
}

func nearestCell(cells []weatherCell, lat, lon float64) (weatherCell, bool) {
	best, bestKm := -1, math.Inf(1)
	for i, c := range cells {
		if km := geo.DistanceKm(lat, lon, c.lat, c.lon); km < bestKm {
			best, bestKm = i, km
		}
	}
	if best < 0 || bestKm > openMeteoReachKm {
		return weatherCell{}, false
	}
	return cells[best], true
}

// answer writes the cell's answer with the requested current variables,
// in the order asked, as the service does.
func (c weatherCell) answer(variables []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"latitude":%s,"longitude":%s,"generationtime_ms":%s,"utc_offset_seconds":%s,"timezone":%q,"timezone_abbreviation":%q,"elevation":%s`,
		c.Latitude, c.Longitude, c.GenerationTimeMS, c.UTCOffsetSeconds, c.Timezone, c.TimezoneAbbreviation, c.Elevation)
	if len(variables) > 0 {
		b.WriteString(`,"current_units":{"time":"iso8601","interval":"seconds"`)
		for _, v := range variables {
			fmt.Fprintf(&b, `,%q:%q`, v, weatherUnits[v])
		}
		fmt.Fprintf(&b, `},"current":{"time":%s,"interval":%s`, c.Current["time"], c.Current["interval"])
		for _, v := range variables {
			fmt.Fprintf(&b, `,%q:%s`, v, c.Current[v])
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.Bytes()
}

// swiftFloat writes a single-precision number as the service's Swift
// encoder does: the shortest form that reads back, ".0" when whole,
// exponents for very large and very small values.
func swiftFloat(f float32) string {
	switch v := float64(f); {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case v != 0 && (math.Abs(v) >= 1<<24 || math.Abs(v) < 1e-4):
		return strconv.FormatFloat(v, 'e', -1, 32)
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 1, 32)
	default:
		return strconv.FormatFloat(v, 'f', -1, 32)
	}
}

// writeOpenMeteoError writes the service's error body, always with 400.
func writeOpenMeteoError(w http.ResponseWriter, reason string) {
	body, _ := json.Marshal(struct {
		Error  bool   `json:"error"`
		Reason string `json:"reason"`
	}{true, reason})
	writeBody(w, http.StatusBadRequest, contentJSONUTF, body)
}
