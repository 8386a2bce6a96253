// Package rules holds the organization's own rules (contract section 29):
// CEL expressions over who calls, which tool, with which input and at
// what cost, each with an effect: deny the call, ask a person to approve
// it, or hide the tool from the caller altogether.
//
// Compile checks every rule against the declared variables, so that a
// rule that cannot work is refused when the config is loaded rather than
// failing open or closed later: a syntax error, a variable or field that
// does not exist, a result that is not a bool, a hide rule that reads the
// input, a duplicate name, or an estimated cost over the limit. A Set,
// once compiled, is immutable and safe for concurrent use; Decide
// evaluates it for one call. A rule that fails while it runs (a missing
// key read without has()) counts as matching, whatever its effect: a rule
// the organization wrote to stop something never lets it through because
// of a mistake in it.
package rules
