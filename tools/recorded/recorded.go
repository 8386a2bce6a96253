// Package recorded answers the built-in tools' upstream requests offline,
// so tests, examples and the server's -offline mode run the whole
// quote-and-call flow with no network, and get answers that match what
// they asked: each provider is simulated over a recorded data set (an
// earthquake catalog, reference rates, holidays, current weather) in the
// provider's own answer shapes, filtered, ordered and rounded as the
// provider does, with the provider's own errors.
//
// Transport is an http.RoundTripper to hand the gateway in place of a real
// one; Handler is the same thing as an http.Handler, to serve over a real
// listener. Body and Response give tests single recorded answers, by the
// names declared below.
//
// The recordings are shaped exactly like the providers' answers, extra
// fields included, because what a tool must drop is as much a part of the
// test as what it must keep.
package recorded

import (
	"embed"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strconv"

	"github.com/toolgate/toolgate/registry"
)

// Names of the recordings, for Body and Response.
const (
	// USGSTwoFeatures: USGS 200 with two events (the provider's published sample).
	USGSTwoFeatures = "usgs-2-features"
	// USGSTenFeatures: USGS 200 with ten events, one with a null mag and one
	// with a null place: the newest ten of 29 September 2024.
	USGSTenFeatures = "usgs-10-features"
	// USGSEmpty: USGS 200 with no matching events.
	USGSEmpty = "usgs-empty"
	// USGSBadLimit: USGS 400, a text/plain page about a bad limit value.
	USGSBadLimit = "usgs-400-bad-limit"

	// FrankfurterRates: Frankfurter 200, USD to EUR and GBP.
	FrankfurterRates = "frankfurter-rates"
	// FrankfurterEmpty: Frankfurter 200 with no rates (a date before the data).
	FrankfurterEmpty = "frankfurter-empty"
	// FrankfurterInvalidCurrency: Frankfurter 422, "invalid currency: FOO".
	FrankfurterInvalidCurrency = "frankfurter-422-invalid-currency"
	// FrankfurterNotFound: Frankfurter 404, "not found".
	FrankfurterNotFound = "frankfurter-404-not-found"

	// NagerPT2027: Nager.Date 200, the public holidays of Portugal in 2027.
	NagerPT2027 = "nager-pt-2027"
	// NagerNotCovered: Nager.Date 204 with no body, a country it does not cover.
	NagerNotCovered = "nager-204-not-covered"
	// NagerUnknownCountry: Nager.Date 404 problem body.
	NagerUnknownCountry = "nager-404-unknown-country"
	// NagerBadYear: Nager.Date 400 problem body, the year is not a number.
	NagerBadYear = "nager-400-bad-year"

	// OpenMeteoCurrent: Open-Meteo 200, current temperature and wind.
	OpenMeteoCurrent = "open-meteo-current"
	// OpenMeteoBadLatitude: Open-Meteo 400, latitude out of range.
	OpenMeteoBadLatitude = "open-meteo-400-bad-latitude"
)

// Origins of the built-in tools' providers, as the tools declare them.
const (
	USGSOrigin        = "https://earthquake.usgs.gov"
	FrankfurterOrigin = "https://api.frankfurter.dev"
	NagerOrigin       = "https://date.nager.at"
	OpenMeteoOrigin   = "https://api.open-meteo.com"
	GoalDataOrigin    = "https://goal-data.example"
)

const (
	contentJSON    = "application/json"
	contentJSONUTF = "application/json; charset=utf-8"
	contentProblem = "application/problem+json; charset=utf-8"
	contentText    = "text/plain; charset=utf-8"
)

//go:embed testdata/*.json testdata/*.txt testdata/*.json.gz
var files embed.FS

type recording struct {
	file        string // under testdata/; "" for a response without a body
	status      int
	contentType string
}

var recordings = map[string]recording{
	USGSTwoFeatures: {"usgs_2_features.json", http.StatusOK, contentJSON},
	USGSTenFeatures: {"usgs_10_features.json", http.StatusOK, contentJSON},
	USGSEmpty:       {"usgs_empty.json", http.StatusOK, contentJSON},
	USGSBadLimit:    {"usgs_400.txt", http.StatusBadRequest, contentText},

	FrankfurterRates:           {"frankfurter_rates.json", http.StatusOK, contentJSON},
	FrankfurterEmpty:           {"frankfurter_empty.json", http.StatusOK, contentJSON},
	FrankfurterInvalidCurrency: {"frankfurter_422.json", http.StatusUnprocessableEntity, contentJSON},
	FrankfurterNotFound:        {"frankfurter_404.json", http.StatusNotFound, contentJSON},

	NagerPT2027:         {"nager_pt_2027.json", http.StatusOK, contentJSONUTF},
	NagerNotCovered:     {"", http.StatusNoContent, ""},
	NagerUnknownCountry: {"nager_404.json", http.StatusNotFound, contentProblem},
	NagerBadYear:        {"nager_400.json", http.StatusBadRequest, contentProblem},

	OpenMeteoCurrent:     {"openmeteo_current.json", http.StatusOK, contentJSONUTF},
	OpenMeteoBadLatitude: {"openmeteo_400.json", http.StatusBadRequest, contentJSONUTF},
}

// Names returns the names of every recording, sorted.
func Names() []string {
	names := make([]string, 0, len(recordings))
	for name := range recordings {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Body returns a copy of the body of the named recording (empty for
// NagerNotCovered). It panics on a name not among the constants above,
// which is a mistake in the calling test, not a condition to handle.
func Body(name string) []byte {
	return body(lookup(name))
}

// Response returns the named recording as the gateway would hand it to a
// tool's Normalize: status, Content-Type and Content-Length headers, and a
// copy of the body. It panics on an unknown name, like Body.
func Response(name string) registry.UpstreamResponse {
	rec := lookup(name)
	b := body(rec)
	h := http.Header{}
	if rec.contentType != "" {
		h.Set("Content-Type", rec.contentType)
	}
	if rec.status != http.StatusNoContent {
		h.Set("Content-Length", strconv.Itoa(len(b)))
	}
	return registry.UpstreamResponse{StatusCode: rec.status, Header: h, Body: b}
}

func lookup(name string) recording {
	rec, ok := recordings[name]
	if !ok {
		panic(fmt.Sprintf("recorded: no recording named %q", name))
	}
	return rec
}

func body(rec recording) []byte {
	if rec.file == "" {
		return []byte{}
	}
	b, err := files.ReadFile(path.Join("testdata", rec.file))
	if err != nil {
		// Every file named above is embedded; TestEveryRecordingIsEmbedded
		// keeps it so.
		panic(fmt.Sprintf("recorded: %v", err))
	}
	return b // ReadFile returns a fresh copy, so callers may modify it
}
