package registry

import "github.com/toolgate/toolgate/toolgatetype"

// Hooks into the fast path of Schema.Validate, for the tests that hold it
// to gojsonschema's answers.

// HasFastPath reports whether s validates without gojsonschema when it can.
func HasFastPath(s *Schema) bool { return s.fast != nil }

// FastAccepts is the fast path's answer alone: true means certainly valid.
func FastAccepts(s *Schema, doc []byte) bool { return s.fast != nil && s.fast.accepts(doc) }

// ValidateSlow is Validate by gojsonschema alone.
func ValidateSlow(s *Schema, doc []byte, prefix string) []toolgatetype.FieldError {
	return s.validateSlow(doc, prefix)
}
