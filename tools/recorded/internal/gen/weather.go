package gen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// The time of the current conditions, the sample's: Saturday 23 November
// 2024, 18:15 UTC.
const weatherTime = "2024-11-23T18:15"

// weatherGridStep is the spacing in degrees of the grid the places snap
// to, about two kilometres like the provider's finest models.
const weatherGridStep = 0.02

// place is a city whose grid cell the data set holds, with its elevation
// and plausible conditions for the hour, given its local time and season.
type place struct {
	name      string
	lat, lon  float64
	elevation float64
	temp      float64 // °C
	wind      float64 // km/h at 10 m
}

// The places, besides the sample's Berlin.
var places = []place{
	{"Reykjavík", 64.1466, -21.9426, 30, -2.1, 18.4},
	{"London", 51.5072, -0.1276, 23, 11.8, 31.5},
	{"Lisbon", 38.7223, -9.1393, 45, 15.2, 12.3},
	{"Madrid", 40.4168, -3.7038, 657, 11.4, 9.7},
	{"Paris", 48.8566, 2.3522, 43, 9.6, 22.0},
	{"Amsterdam", 52.3676, 4.9041, 2, 8.7, 34.2},
	{"Oslo", 59.9139, 10.7522, 23, -3.0, 6.1},
	{"Rome", 41.9028, 12.4964, 20, 12.4, 8.3},
	{"Vienna", 48.2082, 16.3738, 190, 4.1, 14.6},
	{"Stockholm", 59.3293, 18.0686, 28, -1.8, 11.2},
	{"Warsaw", 52.2297, 21.0122, 100, 1.2, 9.4},
	{"Helsinki", 60.1699, 24.9384, 16, -2.4, 15.1},
	{"Athens", 37.9838, 23.7275, 107, 14.0, 7.2},
	{"Istanbul", 41.0082, 28.9784, 37, 9.8, 16.9},
	{"Moscow", 55.7558, 37.6173, 144, -4.5, 10.8},
	{"Cairo", 30.0444, 31.2357, 23, 19.5, 8.6},
	{"Lagos", 6.5244, 3.3792, 7, 27.0, 7.9},
	{"Nairobi", -1.2921, 36.8219, 1661, 17.2, 10.1},
	{"Johannesburg", -26.2041, 28.0473, 1753, 19.0, 13.3},
	{"Cape Town", -33.9249, 18.4241, 9, 17.5, 27.4},
	{"Dubai", 25.2048, 55.2708, 5, 25.1, 11.5},
	{"Mumbai", 19.0760, 72.8777, 14, 26.8, 6.8},
	{"Delhi", 28.6139, 77.2090, 216, 17.9, 3.2},
	{"Bangkok", 13.7563, 100.5018, 4, 26.0, 5.4},
	{"Singapore", 1.3521, 103.8198, 15, 26.4, 4.7},
	{"Jakarta", -6.2088, 106.8456, 8, 26.1, 3.6},
	{"Beijing", 39.9042, 116.4074, 49, -1.5, 7.6},
	{"Shanghai", 31.2304, 121.4737, 4, 8.0, 12.6},
	{"Seoul", 37.5665, 126.9780, 38, 2.0, 9.0},
	{"Tokyo", 35.6762, 139.6503, 40, 9.1, 4.3},
	{"Sydney", -33.8688, 151.2093, 58, 19.8, 14.2},
	{"Melbourne", -37.8136, 144.9631, 31, 14.5, 17.8},
	{"Auckland", -36.8485, 174.7633, 26, 15.0, 19.3},
	{"Honolulu", 21.3099, -157.8581, 6, 26.0, 20.5},
	{"Anchorage", 61.2181, -149.9003, 30, -8.0, 5.8},
	{"San Francisco", 37.7749, -122.4194, 16, 13.0, 8.9},
	{"Los Angeles", 34.0522, -118.2437, 89, 17.5, 5.1},
	{"Denver", 39.7392, -104.9903, 1609, 2.0, 12.9},
	{"Mexico City", 19.4326, -99.1332, 2240, 18.0, 6.2},
	{"Chicago", 41.8781, -87.6298, 181, 3.5, 24.1},
	{"Toronto", 43.6532, -79.3832, 91, 4.0, 21.7},
	{"New York", 40.7128, -74.0060, 10, 8.2, 18.6},
	{"Bogotá", 4.7110, -74.0721, 2640, 15.5, 9.5},
	{"Lima", -12.0464, -77.0428, 154, 20.5, 13.8},
	{"Santiago", -33.4489, -70.6693, 570, 24.0, 11.0},
	{"Buenos Aires", -34.6037, -58.3816, 25, 26.0, 16.4},
	{"São Paulo", -23.5505, -46.6333, 760, 23.0, 10.3},
}

// buildPlaces writes each place's answer as Open-Meteo gives it for
// current=temperature_2m,wind_speed_10m in GMT, the sample's verbatim.
func buildPlaces(sample []byte) ([]byte, error) {
	if !json.Valid(sample) {
		return nil, errors.New("the sample is not JSON")
	}
	rng := newRNG(20241123)
	var out bytes.Buffer
	out.WriteString("[")
	out.Write(bytes.TrimSpace(sample))
	for _, p := range places {
		fmt.Fprintf(&out, `,{"latitude":%s,"longitude":%s,"generationtime_ms":%s,"utc_offset_seconds":0,"timezone":"GMT","timezone_abbreviation":"GMT","elevation":%s,`+
			`"current_units":{"time":"iso8601","interval":"seconds","temperature_2m":"°C","wind_speed_10m":"km/h"},`+
			`"current":{"time":%q,"interval":900,"temperature_2m":%s,"wind_speed_10m":%s}}`,
			swiftFloat(gridCell(p.lat)), swiftFloat(gridCell(p.lon)),
			strconv.FormatFloat(round(0.02+0.07*rng.Float64(), 3), 'f', -1, 64),
			swiftFloat(float32(p.elevation)), weatherTime, swiftFloat(float32(p.temp)), swiftFloat(float32(p.wind)))
	}
	out.WriteString("]")
	if !json.Valid(out.Bytes()) {
		return nil, errors.New("the places are not valid JSON")
	}
	return out.Bytes(), nil
}

// gridCell snaps a coordinate to the grid in single precision, as the
// provider computes its cells (hence coordinates like 13.419998).
func gridCell(v float64) float32 {
	return float32(math.Round(v/weatherGridStep)) * float32(weatherGridStep)
}

// swiftFloat formats a single-precision number as the provider's Swift
// encoder does: the shortest form that reads back, with ".0" when whole.
func swiftFloat(f float32) string {
	s := strconv.FormatFloat(float64(f), 'f', -1, 32)
	if math.Trunc(float64(f)) == float64(f) {
		s += ".0"
	}
	return s
}
