// Package probe counts, for tests, how often the call path does its
// costliest pure work: looking a tool up in the registry, putting an input
// in canonical form and validating it against a schema. A door that asked
// the core twice would show as a count of two, which no answer a caller
// reads can show.
//
// Counting is off unless a test turns it on (Start), so the call path pays
// one atomic load per probe point. The counts are process-wide: a test that
// reads them must not run beside tests that call tools (no t.Parallel, and
// nothing left running from earlier tests).
package probe

import "sync/atomic"

// Counts is how often each probe point was reached since Start.
type Counts struct {
	// Lookups of a tool version in a registry.
	Lookups int64
	// Canonicalizations of a JSON document (RFC 8785).
	Canonicalizations int64
	// InputValidations of a call's input (or MCP arguments) against the
	// tool's input schema; outputs are not counted.
	InputValidations int64
}

var (
	on                                           atomic.Bool
	lookups, canonicalizations, inputValidations atomic.Int64
)

// Start zeroes the counts and turns counting on; the returned function
// turns it off again and returns the counts.
func Start() (stop func() Counts) {
	lookups.Store(0)
	canonicalizations.Store(0)
	inputValidations.Store(0)
	on.Store(true)
	return func() Counts {
		on.Store(false)
		return Counts{Lookups: lookups.Load(), Canonicalizations: canonicalizations.Load(), InputValidations: inputValidations.Load()}
	}
}

// Lookup counts a registry lookup.
func Lookup() {
	if on.Load() {
		lookups.Add(1)
	}
}

// Canonicalize counts a canonicalization.
func Canonicalize() {
	if on.Load() {
		canonicalizations.Add(1)
	}
}

// Validate counts a schema validation of a document found at prefix: only
// a call's input ("input", or MCP's "arguments") counts.
func Validate(prefix string) {
	if on.Load() && (prefix == "input" || prefix == "arguments") {
		inputValidations.Add(1)
	}
}
