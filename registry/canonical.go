package registry

import (
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/internal/jcs"
	"github.com/toolgate/toolgate/internal/probe"
)

// ErrNotCanonicalizable is returned for input that has no RFC 8785 form:
// invalid JSON, invalid UTF-8, duplicate object keys or non-finite numbers.
var ErrNotCanonicalizable = errors.New("registry: value has no canonical JSON form")

// Canonicalize returns the RFC 8785 (JSON Canonicalization Scheme) form of a
// JSON document: object members sorted by their UTF-16 code units, no
// insignificant white space, numbers in ECMAScript shortest form and strings
// with the minimal escaping the RFC prescribes. Two documents that mean the
// same thing canonicalize to the same bytes, which is what lets a digest bind
// an approval to a manifest rather than to one way of writing it.
func Canonicalize(doc []byte) ([]byte, error) {
	probe.Canonicalize()
	out, err := jcs.Canonicalize(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotCanonicalizable, strings.TrimPrefix(err.Error(), jcs.ErrNotCanonicalizable.Error()+": "))
	}
	return out, nil
}
