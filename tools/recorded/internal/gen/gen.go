// Package gen builds the data sets the recorded package answers from: a
// USGS earthquake catalog, ECB reference rates as Frankfurter serves them,
// Nager.Date public holidays and Open-Meteo current conditions, each written
// in its provider's own answer shape.
//
// What can be derived is derived: holidays come from each country's rules
// (Easter, fixed dates, nth weekdays, the years a rule applies) as the
// provider publishes them, and publication days from the ECB's calendar.
// What cannot be fetched offline is synthesized, deterministically, from a
// fixed seed: earthquakes in real seismic regions with a Gutenberg-Richter
// spread of magnitudes, exchange rates as random walks that end on the
// provider's published sample, current weather at a list of places. The
// providers' published samples are included verbatim.
//
// The recorded package's tests call Build and compare its output with the
// embedded files; run them with -update to rewrite the files.
package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// File names of the data sets, under the recorded package's testdata.
const (
	USGSFile        = "usgs_catalog.json.gz"
	FrankfurterFile = "ecb_rates.json.gz"
	NagerFile       = "nager_holidays.json.gz"
	OpenMeteoFile   = "openmeteo_places.json.gz"
)

// Samples are the providers' published answers that the data sets must
// contain as they are.
type Samples struct {
	// USGSTwo and USGSTen are USGS FeatureCollections whose features join
	// the catalog verbatim.
	USGSTwo, USGSTen []byte
	// OpenMeteo is an Open-Meteo forecast whose grid cell joins the places.
	OpenMeteo []byte
}

// Build returns each data set by file name, uncompressed.
func Build(s Samples) (map[string][]byte, error) {
	usgs, err := buildCatalog(s.USGSTwo, s.USGSTen)
	if err != nil {
		return nil, fmt.Errorf("usgs: %w", err)
	}
	rates, err := buildRates()
	if err != nil {
		return nil, fmt.Errorf("rates: %w", err)
	}
	holidays, err := buildHolidays()
	if err != nil {
		return nil, fmt.Errorf("holidays: %w", err)
	}
	places, err := buildPlaces(s.OpenMeteo)
	if err != nil {
		return nil, fmt.Errorf("places: %w", err)
	}
	return map[string][]byte{
		USGSFile:        usgs,
		FrankfurterFile: rates,
		NagerFile:       holidays,
		OpenMeteoFile:   places,
	}, nil
}

// marshal encodes v as the providers do: compact, and without escaping
// '&', '<' and '>' the way encoding/json would by default.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
