package recorded_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/tools/recorded"
)

// usgsAnswer is the part of a USGS GeoJSON answer the tests read.
type usgsAnswer struct {
	Metadata map[string]any `json:"metadata"`
	Features []struct {
		ID         string `json:"id"`
		Properties struct {
			Mag   *float64 `json:"mag"`
			Time  int64    `json:"time"`
			Place *string  `json:"place"`
		} `json:"properties"`
	} `json:"features"`
	BBox []float64 `json:"bbox"`
}

func usgsQuery(t *testing.T, query string) (answer, usgsAnswer) {
	t.Helper()
	a := get(t, recorded.USGSOrigin+"/fdsnws/event/1/query?"+query)
	require.Equal(t, 200, a.status, "%s", a.body)
	var out usgsAnswer
	a.decode(t, &out)
	return a, out
}

func ms(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

// TestUSGSGivesThePublishedAnswers: the catalog holds the provider's
// published answers, and the same queries give them back, the moment of
// generation aside.
func TestUSGSGivesThePublishedAnswers(t *testing.T) {
	t.Parallel()
	for _, name := range []string{recorded.USGSTwoFeatures, recorded.USGSTenFeatures, recorded.USGSEmpty} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var want map[string]any
			require.NoError(t, json.Unmarshal(recorded.Body(name), &want))
			u, err := url.Parse(want["metadata"].(map[string]any)["url"].(string))
			require.NoError(t, err)
			a := get(t, u.String())
			require.Equal(t, 200, a.status)
			assert.Equal(t, recorded.Response(name).Header.Get("Content-Type"), a.header.Get("Content-Type"))
			var got map[string]any
			a.decode(t, &got)
			delete(want["metadata"].(map[string]any), "generated")
			delete(got["metadata"].(map[string]any), "generated")
			assert.Equal(t, want, got)
		})
	}
}

// TestUSGSQueries compares answers with the FDSN event service's
// documented behaviour: starttime and endtime bound event times
// inclusively (to the second), minmagnitude and maxmagnitude bound
// magnitudes and drop events without one, orderby orders, offset (from 1)
// and limit cut, and metadata.count is the number of features.
func TestUSGSQueries(t *testing.T) {
	t.Parallel()
	const window = "starttime=2024-09-25&endtime=2024-09-30"
	start, end := ms("2024-09-25T00:00:00Z"), ms("2024-09-30T00:00:00Z")
	type check func(t *testing.T, out usgsAnswer)
	inWindow := func(t *testing.T, out usgsAnswer) {
		for _, f := range out.Features {
			assert.GreaterOrEqual(t, f.Properties.Time, start, f.ID)
			assert.LessOrEqual(t, f.Properties.Time, end, f.ID)
		}
	}
	atLeast := func(floor float64) check {
		return func(t *testing.T, out usgsAnswer) {
			for _, f := range out.Features {
				require.NotNil(t, f.Properties.Mag, f.ID)
				assert.GreaterOrEqual(t, *f.Properties.Mag, floor, f.ID)
			}
		}
	}
	timesDescend := func(t *testing.T, out usgsAnswer) {
		for i := 1; i < len(out.Features); i++ {
			assert.GreaterOrEqual(t, out.Features[i-1].Properties.Time, out.Features[i].Properties.Time)
		}
	}
	cases := []struct {
		name   string
		query  string
		count  int // -1: any, checked by the checks
		checks []check
	}{
		{"the tool's default: M4+ newest first, ten", "format=geojson&" + window + "&limit=10&orderby=time&minmagnitude=4", 10,
			[]check{inWindow, atLeast(4), timesDescend}},
		{"oldest first", "format=geojson&" + window + "&limit=5&orderby=time-asc&minmagnitude=4", 5, []check{inWindow, atLeast(4),
			func(t *testing.T, out usgsAnswer) {
				for i := 1; i < len(out.Features); i++ {
					assert.LessOrEqual(t, out.Features[i-1].Properties.Time, out.Features[i].Properties.Time)
				}
			}}},
		{"largest first", "format=geojson&" + window + "&limit=5&orderby=magnitude", 5, []check{inWindow, func(t *testing.T, out usgsAnswer) {
			assert.Equal(t, "us7000ngmr", out.Features[0].ID, "the M6.3 is the window's largest")
			for i := 1; i < len(out.Features); i++ {
				assert.GreaterOrEqual(t, *out.Features[i-1].Properties.Mag, *out.Features[i].Properties.Mag)
			}
		}}},
		{"smallest first", "format=geojson&" + window + "&limit=5&orderby=magnitude-asc&minmagnitude=4.5", 5, []check{inWindow, atLeast(4.5),
			func(t *testing.T, out usgsAnswer) {
				for i := 1; i < len(out.Features); i++ {
					assert.LessOrEqual(t, *out.Features[i-1].Properties.Mag, *out.Features[i].Properties.Mag)
				}
			}}},
		{"an event without a magnitude sorts last by magnitude", "format=geojson&starttime=2024-09-29T21:00:00&endtime=2024-09-29T21:10:00&orderby=magnitude", -1,
			[]check{func(t *testing.T, out usgsAnswer) {
				require.NotEmpty(t, out.Features)
				last := out.Features[len(out.Features)-1]
				assert.Equal(t, "ci40742231", last.ID)
				assert.Nil(t, last.Properties.Mag)
			}}},
		{"minmagnitude drops an event without a magnitude", "format=geojson&starttime=2024-09-29T21:00:00&endtime=2024-09-29T21:10:00&minmagnitude=-1", 0, nil},
		{"maxmagnitude", "format=geojson&" + window + "&maxmagnitude=1", -1, []check{inWindow, func(t *testing.T, out usgsAnswer) {
			require.NotEmpty(t, out.Features)
			for _, f := range out.Features {
				assert.LessOrEqual(t, *f.Properties.Mag, 1.0, f.ID)
			}
		}}},
		{"offset counts from one", "format=geojson&" + window + "&minmagnitude=5.4&limit=1&offset=2", 1, []check{func(t *testing.T, out usgsAnswer) {
			assert.Equal(t, "us7000nfxx", out.Features[0].ID, "the second newest M5.4+")
			assert.EqualValues(t, 2, out.Metadata["offset"])
		}}},
		{"starttime is inclusive, to the second", "format=geojson&starttime=2024-09-29T23:09:47Z&endtime=2024-09-30", 1, nil},
		{"endtime is inclusive, to the second", "format=geojson&starttime=2024-09-29T23:00:00&endtime=2024-09-29T23:09:47", 0, nil},
		{"a zone offset", "format=geojson&starttime=2024-09-30T01:09:47%2B02:00&endtime=2024-09-30", 1, nil},
		{"every magnitude when none is asked", "format=geojson&starttime=2024-09-29T17:00:00&endtime=2024-09-30", 10, []check{func(t *testing.T, out usgsAnswer) {
			assert.NotContains(t, out.Metadata, "limit", "no limit sent, none reported")
			assert.NotContains(t, out.Metadata, "offset")
		}}},
		{"moderate and large events exist", "format=geojson&starttime=2024-09-16&minmagnitude=5", -1, []check{func(t *testing.T, out usgsAnswer) {
			assert.GreaterOrEqual(t, len(out.Features), 5)
		}}},
		{"no events that large", "format=geojson&" + window + "&minmagnitude=9", 0, nil},
		{"before the catalog", "format=geojson&starttime=2024-01-01&endtime=2024-02-01", 0, []check{func(t *testing.T, out usgsAnswer) {
			assert.Nil(t, out.BBox, "no bounding box without features")
		}}},
		{"after the catalog", "format=geojson&starttime=2025-01-01", 0, nil},
		{"without starttime, the last 30 days", "format=geojson&minmagnitude=4&orderby=time-asc&limit=1", 1, []check{func(t *testing.T, out usgsAnswer) {
			assert.GreaterOrEqual(t, out.Features[0].Properties.Time, ms("2024-09-14T00:00:00Z"))
		}}},
		{"empty values are ignored", "format=geojson&" + window + "&minmagnitude=&limit=3", 3, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, out := usgsQuery(t, tc.query)
			assert.EqualValues(t, len(out.Features), out.Metadata["count"])
			assert.Equal(t, "USGS Earthquakes", out.Metadata["title"])
			assert.EqualValues(t, 200, out.Metadata["status"])
			assert.Equal(t, recorded.USGSOrigin+"/fdsnws/event/1/query?"+tc.query, out.Metadata["url"])
			if tc.count >= 0 {
				assert.Len(t, out.Features, tc.count)
			}
			for _, c := range tc.checks {
				c(t, out)
			}
		})
	}
}

// TestUSGSErrors: the service answers a bad value, or a parameter it does
// not know, with its text/plain page; the reason is the third line.
func TestUSGSErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		query  string
		status int
		reason string
	}{
		{"format=geojson&limit=20001", 400, `Bad limit value "20001". Valid values are 0 <= limit <= 20000`},
		{"format=geojson&limit=ten", 400, `Bad limit value "ten". Valid values are 0 <= limit <= 20000`},
		{"format=geojson&limit=-1", 400, `Bad limit value "-1". Valid values are 0 <= limit <= 20000`},
		{"format=geojson&offset=0", 400, `Bad offset value "0". Valid values are 1 <= offset`},
		{"format=geojson&orderby=size", 400, `Bad orderby value "size". Valid values are: "time", "time-asc", "magnitude", "magnitude-asc".`},
		{"format=geojson&minmagnitude=big", 400, `Bad minmagnitude value "big". Valid values are numeric`},
		{"format=geojson&starttime=yesterday", 400, `Bad starttime value "yesterday". Valid values are ISO-8601 timestamps.`},
		{"format=geojson&endtime=2024-13-01", 400, `Bad endtime value "2024-13-01". Valid values are ISO-8601 timestamps.`},
		{"format=json", 400, `Bad format value "json". Valid values are: "quakeml", "geojson", "csv", "kml", "kmlraw", "xml", "text", "cap".`},
		{"format=geojson&color=red", 400, `Unknown parameter "color".`},
		{"limit=abc&orderby=size", 400, `Bad limit value "abc". Valid values are 0 <= limit <= 20000`},
		{"format=geojson&minlatitude=10", 501, "The minlatitude parameter is not simulated by the recorded catalog, which answers starttime, endtime, minmagnitude, maxmagnitude, limit, offset and orderby."},
		{"starttime=2024-09-25", 501, `Format "quakeml" is not simulated by the recorded catalog; ask for format=geojson.`},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			t.Parallel()
			a := get(t, recorded.USGSOrigin+"/fdsnws/event/1/query?"+tc.query)
			assert.Equal(t, tc.status, a.status)
			assert.Equal(t, "text/plain; charset=utf-8", a.header.Get("Content-Type"))
			lines := strings.Split(string(a.body), "\n")
			require.Greater(t, len(lines), 8, "%s", a.body)
			assert.Regexp(t, `^Error \d{3}: `, lines[0])
			assert.Equal(t, tc.reason, lines[2])
			assert.Equal(t, "/fdsnws/event/1/query?"+tc.query, lines[7], "the page repeats the request")
		})
	}
}
