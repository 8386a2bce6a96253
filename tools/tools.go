// Package tools holds toolgate's five built-in tools, each a
// *registry.Tool that maps a call input to a request to a public data
// provider and maps the provider's answer back to the tool's declared output:
//
//   - earthquake-search (EarthquakeSearch): the USGS earthquake catalog
//   - exchange-rates (ExchangeRates): Frankfurter central-bank rates
//   - public-holidays (PublicHolidays): Nager.Date public holidays
//   - goal-data (GoalData): the demo goal provider (NewGoalProvider), paid
//   - current-weather (CurrentWeather): Open-Meteo, listed but not callable
//
// Importing the package registers all five into registry.Default, in the
// manner of database/sql drivers:
//
//	import _ "github.com/toolgate/toolgate/tools"
//
// A program or test that keeps its own registry uses RegisterAll (or All)
// instead, and never touches the global one.
//
// Provider answers are untrusted. Each tool decodes them into Go types that
// hold only its declared output fields, so anything else a provider sends
// (extra fields, instructions aimed at a model, prices) is dropped before it
// reaches the gateway, and reports a provider's failure as a
// *registry.UpstreamError whose message quotes at most a short, cleaned
// excerpt of the provider's text. Package tools/recorded answers every
// built-in tool from recorded provider responses, for tests and offline runs.
package tools

import (
	"fmt"

	"github.com/toolgate/toolgate/registry"
)

// All returns fresh definitions of the five built-in tools, in the order of
// the service description's registry table. Callers may change them freely.
func All() []*registry.Tool {
	return []*registry.Tool{
		EarthquakeSearch(),
		ExchangeRates(),
		PublicHolidays(),
		GoalData(),
		CurrentWeather(),
	}
}

// RegisterAll registers the five built-in tools into r. It stops at the
// first failure, which wraps the registry's error (registry.ErrDuplicate
// when r already holds one of them).
func RegisterAll(r *registry.Registry) error {
	for _, t := range All() {
		if err := r.Register(t); err != nil {
			return fmt.Errorf("tools: register %s: %w", t.Slug, err)
		}
	}
	return nil
}

// readOnlyOpenWorld is the capability set of the three free data tools:
// they only read public data from the open web, keep nothing, and can see
// whatever the provider chooses to send. Every field is stated rather than
// left to the registry's defaults, so a change of defaults cannot change
// what these tools declare (and their digests).
func readOnlyOpenWorld() *registry.Capabilities {
	return &registry.Capabilities{
		ReadOnly:               registry.Bool(true),
		Destructive:            registry.Bool(false),
		Idempotent:             registry.Bool(true),
		OpenWorld:              registry.Bool(true),
		ReadsPrivateData:       registry.Bool(false),
		SeesUntrustedContent:   registry.Bool(true),
		WritesExternalData:     registry.Bool(false),
		SendsMessages:          registry.Bool(false),
		SpendsMoney:            registry.Bool(false),
		ExecutesCode:           registry.Bool(false),
		RequiresUserCredential: registry.Bool(false),
		DataRetention:          registry.RetentionNone,
	}
}
