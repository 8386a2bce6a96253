package recorded

import (
	"errors"
	"net/http"
	"net/http/httptest"

	"github.com/toolgate/toolgate/tools/goalprovider"
)

// Handler returns an http.Handler that answers like the five providers of
// the built-in tools, each simulated over its recorded data (the data sets
// and how they were made are described in testdata/README.md):
//
//   - USGS, GET /fdsnws/event/1/query: the recorded catalog (16 September
//     to 13 October 2024) filtered by starttime, endtime, minmagnitude and
//     maxmagnitude, ordered by orderby, cut by offset and limit, with the
//     service's metadata and bounding box; its text/plain 400 page for a
//     bad value or an unknown parameter, and a 501 page for a parameter the
//     recording does not simulate (a region, a depth, another format).
//   - Frankfurter, GET /v2/rates: the recorded ECB reference rates
//     (1 December 2025 to 25 March 2026) for the base and quotes asked,
//     cross rates derived and rounded as the service does, a date snapping
//     to the last publication on or before it, from/to ranges, [] before
//     the data and after it, and the service's 422 bodies for an unknown
//     currency, parameter or date; other paths on its host get
//     FrankfurterNotFound.
//   - Nager.Date, GET /api/v4/Holidays/{countryCode}/{year}: the recorded
//     holidays of twelve countries for 2016 to 2035; 400 for a year that
//     is not a number, 404 for a code that is not a country, 204 for any
//     other country or year; other paths on its host get
//     NagerUnknownCountry's 404.
//   - Open-Meteo, GET /v1/forecast: the recorded current conditions of the
//     grid cell nearest the coordinates, within 25 km of one of the
//     recorded places; the service's 400 for coordinates out of range and
//     for data it does not have.
//   - goal-data, /v1/goal-data: the demo goal provider itself, in process.
//
// The recorded bodies named by this package's constants are the providers'
// answers to particular requests, and the simulation gives those same
// answers to those requests.
//
// A request to one of the providers' own hosts is routed by host, then
// path. A request to any other host (an origin the operator pointed a tool
// at, or the listener this handler is served on) is routed by path alone,
// so the recordings keep answering whatever origin a tool was given.
// Anything else gets 404. The handler is safe for concurrent use; each
// data set is loaded on its first request.
func Handler() http.Handler {
	mux := http.NewServeMux()
	goal := goalprovider.New()

	// By host: the providers' own origins.
	mux.HandleFunc("GET earthquake.usgs.gov/fdsnws/event/1/query", serveUSGS)
	mux.HandleFunc("earthquake.usgs.gov/", serveNotFound)
	mux.HandleFunc("GET api.frankfurter.dev/v2/rates", serveFrankfurter)
	mux.HandleFunc("api.frankfurter.dev/", serveRecording(FrankfurterNotFound))
	mux.HandleFunc("GET date.nager.at/api/v4/Holidays/{country}/{year}", serveNager)
	mux.HandleFunc("date.nager.at/", serveRecording(NagerUnknownCountry))
	mux.HandleFunc("GET api.open-meteo.com/v1/forecast", serveOpenMeteo)
	mux.HandleFunc("api.open-meteo.com/", serveNotFound)
	mux.Handle("goal-data.example/", goal)

	// By path, for any other host.
	mux.HandleFunc("GET /fdsnws/event/1/query", serveUSGS)
	mux.HandleFunc("GET /v2/rates", serveFrankfurter)
	mux.HandleFunc("GET /api/v4/Holidays/{country}/{year}", serveNager)
	mux.HandleFunc("GET /v1/forecast", serveOpenMeteo)
	mux.Handle(goalprovider.Path, goal)
	mux.HandleFunc("/", serveNotFound)
	return mux
}

// Transport returns an http.RoundTripper that answers every request from
// Handler, in process, without touching the network. It is safe for
// concurrent use. Like any RoundTripper it closes the request body and
// fails a request whose context is already done.
func Transport() http.RoundTripper {
	return transport{h: Handler()}
}

type transport struct{ h http.Handler }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if req.URL == nil {
		return nil, errors.New("recorded: request has no URL")
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	// The handler sees the request as a server would: Host from the URL when
	// the client left it empty, and a RequestURI.
	in := req.Clone(req.Context())
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	in.RequestURI = req.URL.RequestURI()
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, in)
	resp := rec.Result()
	resp.Request = req
	resp.ContentLength = int64(rec.Body.Len())
	return resp, nil
}

func serveRecording(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { serve(w, name) }
}

func serveNotFound(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, "404 page not found", http.StatusNotFound)
}

// serve writes a recording as the provider sent it.
func serve(w http.ResponseWriter, name string) {
	resp := Response(name)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(resp.Body)
}
