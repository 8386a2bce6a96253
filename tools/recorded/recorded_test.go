package recorded_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/tools/recorded"
)

func TestEveryRecordingIsEmbedded(t *testing.T) {
	t.Parallel()
	names := recorded.Names()
	require.Len(t, names, 14)
	for _, name := range names {
		resp := recorded.Response(name)
		assert.NotZero(t, resp.StatusCode, name)
		if resp.StatusCode == http.StatusNoContent {
			assert.Empty(t, resp.Body, name)
			continue
		}
		assert.NotEmpty(t, resp.Body, name)
		assert.NotEmpty(t, resp.Header.Get("Content-Type"), name)
		if strings.Contains(resp.Header.Get("Content-Type"), "json") {
			assert.True(t, json.Valid(resp.Body), name)
		}
	}
}

func TestRecordingsAreShapedLikeTheProviders(t *testing.T) {
	t.Parallel()
	var usgs struct {
		Metadata struct {
			Count int `json:"count"`
		} `json:"metadata"`
		Features []struct {
			Properties struct {
				Mag   *float64 `json:"mag"`
				Place *string  `json:"place"`
			} `json:"properties"`
		} `json:"features"`
		BBox []float64 `json:"bbox"`
	}
	require.NoError(t, json.Unmarshal(recorded.Body(recorded.USGSTenFeatures), &usgs))
	assert.Len(t, usgs.Features, 10)
	assert.Equal(t, 10, usgs.Metadata.Count)
	assert.Len(t, usgs.BBox, 6)
	var nullMag, nullPlace int
	for _, f := range usgs.Features {
		if f.Properties.Mag == nil {
			nullMag++
		}
		if f.Properties.Place == nil {
			nullPlace++
		}
	}
	assert.Equal(t, 1, nullMag)
	assert.Equal(t, 1, nullPlace)

	var holidays []struct {
		CountryCode      string   `json:"countryCode"`
		SubdivisionCodes []string `json:"subdivisionCodes"`
	}
	require.NoError(t, json.Unmarshal(recorded.Body(recorded.NagerPT2027), &holidays))
	assert.GreaterOrEqual(t, len(holidays), 13)
	regional := 0
	for _, h := range holidays {
		assert.Equal(t, "PT", h.CountryCode)
		if h.SubdivisionCodes != nil {
			regional++
		}
	}
	assert.Positive(t, regional)

	assert.Equal(t, "text/plain; charset=utf-8", recorded.Response(recorded.USGSBadLimit).Header.Get("Content-Type"))
	assert.JSONEq(t, `{"status":422,"message":"invalid currency: FOO"}`, string(recorded.Body(recorded.FrankfurterInvalidCurrency)))
}

func TestBodyIsACopy(t *testing.T) {
	t.Parallel()
	b := recorded.Body(recorded.FrankfurterRates)
	b[0] = 'X'
	assert.Equal(t, byte('['), recorded.Body(recorded.FrankfurterRates)[0])
}

func TestUnknownNamePanics(t *testing.T) {
	t.Parallel()
	assert.Panics(t, func() { recorded.Body("no-such-recording") })
	assert.Panics(t, func() { recorded.Response("no-such-recording") })
}

func TestTransportRoutes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		method    string
		url       string
		body      string
		status    int
		recording string // expected body, when a recording
		contains  string // expected in the body otherwise
	}{
		{"USGS query", "GET", "https://earthquake.usgs.gov/fdsnws/event/1/query?format=geojson&starttime=2024-09-25&limit=10&orderby=time&minmagnitude=4", "", 200, "", `"count":10}`},
		{"USGS bad limit", "GET", "https://earthquake.usgs.gov/fdsnws/event/1/query?format=geojson&limit=20001", "", 400, "", `Bad limit value "20001". Valid values are 0 <= limit <= 20000`},
		{"USGS other path", "GET", "https://earthquake.usgs.gov/fdsnws/event/1/count", "", 404, "", "not found"},
		{"Frankfurter rates", "GET", "https://api.frankfurter.dev/v2/rates?base=USD&quotes=EUR%2CGBP", "", 200, recorded.FrankfurterRates, ""},
		{"Frankfurter lowercase codes", "GET", "https://api.frankfurter.dev/v2/rates?base=usd&quotes=jpy", "", 200, "", `"base":"USD","quote":"JPY"`},
		{"Frankfurter default base", "GET", "https://api.frankfurter.dev/v2/rates?quotes=USD", "", 200, "", `"base":"EUR","quote":"USD"`},
		{"Frankfurter unknown quote", "GET", "https://api.frankfurter.dev/v2/rates?base=USD&quotes=EUR,FOO", "", 422, recorded.FrankfurterInvalidCurrency, ""},
		{"Frankfurter unknown base", "GET", "https://api.frankfurter.dev/v2/rates?base=XYZ&quotes=EUR", "", 422, "", "invalid currency: XYZ"},
		{"Frankfurter other path", "GET", "https://api.frankfurter.dev/v1/latest", "", 404, recorded.FrankfurterNotFound, ""},
		{"Nager PT", "GET", "https://date.nager.at/api/v4/Holidays/PT/2027", "", 200, recorded.NagerPT2027, ""},
		{"Nager unknown country", "GET", "https://date.nager.at/api/v4/Holidays/ZZ/2027", "", 404, "", `"title":"Not Found"`},
		{"Nager bad year", "GET", "https://date.nager.at/api/v4/Holidays/PT/soon", "", 400, "", "The value 'soon' is not valid."},
		{"Nager other path", "GET", "https://date.nager.at/api/v3/AvailableCountries", "", 404, recorded.NagerUnknownCountry, ""},
		{"Open-Meteo", "GET", "https://api.open-meteo.com/v1/forecast?latitude=52.52&longitude=13.41&current=temperature_2m,wind_speed_10m", "", 200, recorded.OpenMeteoCurrent, ""},
		{"Open-Meteo bad latitude", "GET", "https://api.open-meteo.com/v1/forecast?latitude=999&longitude=13.41", "", 400, recorded.OpenMeteoBadLatitude, ""},
		{"Open-Meteo missing longitude", "GET", "https://api.open-meteo.com/v1/forecast?latitude=52.52", "", 400, "", "must have the same number of elements"},
		{"goal provider", "POST", "https://goal-data.example/v1/goal-data", `{"goal":"g","step":3,"targetSteps":3}`, 200, "", `"goalAchieved":true`},
		{"goal provider bad input", "POST", "https://goal-data.example/v1/goal-data", `{"goal":"g"}`, 400, "", "step is required"},
		{"goal provider GET", "GET", "https://goal-data.example/v1/goal-data", "", 405, "", "method_not_allowed"},
		{"unknown host and path", "GET", "https://example.com/anything", "", 404, "", "not found"},
		{"operator origin, USGS path", "GET", "http://127.0.0.1:9001/fdsnws/event/1/query?format=geojson&starttime=2024-09-25", "", 200, "", `"type":"FeatureCollection"`},
		{"operator origin, Nager path", "GET", "http://mirror.internal/api/v4/Holidays/PT/2027", "", 200, recorded.NagerPT2027, ""},
		{"operator origin, goal path", "POST", "http://127.0.0.1:9004/v1/goal-data", `{"goal":"g","step":1}`, 200, "", `"goalAchieved":false`},
		{"USGS path on another provider's host", "GET", "https://api.frankfurter.dev/fdsnws/event/1/query", "", 404, recorded.FrankfurterNotFound, ""},
	}
	client := &http.Client{Transport: recorded.Transport()}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequestWithContext(context.Background(), tc.method, tc.url, strings.NewReader(tc.body))
			require.NoError(t, err)
			resp, err := client.Do(req)
			require.NoError(t, err)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Same(t, req, resp.Request)
			assert.Equal(t, int64(len(got)), resp.ContentLength)
			if tc.recording != "" {
				want := recorded.Response(tc.recording)
				assert.True(t, sameBody(tc.recording, got), "got %s", got)
				assert.Equal(t, want.Header.Get("Content-Type"), resp.Header.Get("Content-Type"))
			} else {
				assert.Contains(t, strings.ToLower(string(got)), strings.ToLower(tc.contains))
			}
		})
	}
}

func TestTransportFailsCanceledRequests(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, recorded.USGSOrigin+"/fdsnws/event/1/query", nil)
	require.NoError(t, err)
	_, err = recorded.Transport().RoundTrip(req)
	assert.ErrorIs(t, err, context.Canceled)
}

type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

func TestTransportClosesRequestBody(t *testing.T) {
	t.Parallel()
	body := &closeTracker{Reader: strings.NewReader(`{"goal":"g","step":1}`)}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, recorded.GoalDataOrigin+"/v1/goal-data", body)
	require.NoError(t, err)
	resp, err := recorded.Transport().RoundTrip(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, body.closed)
}

func TestTransportIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	client := &http.Client{Transport: recorded.Transport()}
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every data set, so their first loads race one another.
			targets := []string{
				recorded.NagerOrigin + "/api/v4/Holidays/PT/2027",
				recorded.USGSOrigin + "/fdsnws/event/1/query?format=geojson&starttime=2024-09-25",
				recorded.FrankfurterOrigin + "/v2/rates?base=USD&quotes=EUR,GBP,JPY",
				recorded.OpenMeteoOrigin + "/v1/forecast?latitude=52.52&longitude=13.41&current=temperature_2m",
			}
			target, method, payload := targets[i%4], http.MethodGet, ""
			if i%5 == 4 {
				target, method, payload = recorded.GoalDataOrigin+"/v1/goal-data", http.MethodPost, `{"goal":"g","step":2}`
			}
			req, err := http.NewRequestWithContext(context.Background(), method, target, strings.NewReader(payload))
			if !assert.NoError(t, err) {
				return
			}
			resp, err := client.Do(req)
			if !assert.NoError(t, err) {
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)
		}()
	}
	wg.Wait()
}

// TestHandlerOverARealListener serves the recordings the way an operator
// would for a gateway pointed at a fixture server: routing is by path.
func TestHandlerOverARealListener(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(recorded.Handler())
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Get(srv.URL + "/v2/rates?base=USD&quotes=EUR,GBP")
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, sameBody(recorded.FrankfurterRates, got), "got %s", got)
}
