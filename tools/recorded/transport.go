package recorded

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"

	"github.com/toolgate/toolgate/tools/goalprovider"
)

// knownCurrencies is the small set Transport accepts as Frankfurter codes;
// any other code gets the recorded 422, as the real service answers a code
// it does not publish.
var knownCurrencies = map[string]bool{
	"AUD": true, "BRL": true, "CAD": true, "CHF": true, "CNY": true, "CZK": true,
	"DKK": true, "EUR": true, "GBP": true, "HKD": true, "JPY": true, "NOK": true,
	"NZD": true, "PLN": true, "SEK": true, "USD": true,
}

// Handler returns an http.Handler that answers like the five providers of
// the built-in tools, from the recordings:
//
//   - USGS, GET /fdsnws/event/1/query: USGSTenFeatures, whatever the query,
//     unless limit is not an integer from 0 to 20000 (USGSBadLimit).
//   - Frankfurter, GET /v2/rates: FrankfurterRates, whatever the base,
//     quotes and date, unless base or a quote is not among a small set of
//     real codes (FrankfurterInvalidCurrency); other paths on its host get
//     FrankfurterNotFound.
//   - Nager.Date, GET /api/v4/Holidays/{countryCode}/{year}: NagerPT2027
//     for PT in any year, NagerUnknownCountry for any other code, NagerBadYear
//     for a year that is not a number; other paths on its host get
//     NagerUnknownCountry's 404.
//   - Open-Meteo, GET /v1/forecast: OpenMeteoCurrent wherever, unless
//     latitude or longitude is missing or out of range (OpenMeteoBadLatitude).
//   - goal-data, /v1/goal-data: the demo goal provider itself, in process.
//
// The bodies are served as recorded: the rates always read USD to EUR and
// GBP and the holidays are always Portugal's 2027 ones, whatever was asked.
//
// A request to one of the providers' own hosts is routed by host, then
// path. A request to any other host (an origin the operator pointed a tool
// at, or the listener this handler is served on) is routed by path alone,
// so the recordings keep answering whatever origin a tool was given.
// Anything else gets 404.
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

func serveUSGS(w http.ResponseWriter, r *http.Request) {
	if v := r.URL.Query().Get("limit"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 || n > 20000 {
			serve(w, USGSBadLimit)
			return
		}
	}
	serve(w, USGSTenFeatures)
}

func serveFrankfurter(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	codes := []string{"EUR"} // Frankfurter's default base
	if base := q.Get("base"); base != "" {
		codes[0] = base
	}
	if quotes, ok := q["quotes"]; ok {
		codes = append(codes, strings.Split(strings.Join(quotes, ","), ",")...)
	}
	for _, c := range codes {
		if !knownCurrencies[strings.ToUpper(c)] {
			serve(w, FrankfurterInvalidCurrency)
			return
		}
	}
	serve(w, FrankfurterRates)
}

func serveNager(w http.ResponseWriter, r *http.Request) {
	if _, err := strconv.Atoi(r.PathValue("year")); err != nil {
		serve(w, NagerBadYear)
		return
	}
	if !strings.EqualFold(r.PathValue("country"), "PT") {
		serve(w, NagerUnknownCountry)
		return
	}
	serve(w, NagerPT2027)
}

func serveOpenMeteo(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !inRange(q.Get("latitude"), 90) || !inRange(q.Get("longitude"), 180) {
		serve(w, OpenMeteoBadLatitude)
		return
	}
	serve(w, OpenMeteoCurrent)
}

func inRange(v string, limit float64) bool {
	f, err := strconv.ParseFloat(v, 64)
	return err == nil && f >= -limit && f <= limit
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
