package mcpupstream

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/registry"
)

const redacted = "[redacted]"

// minSecret is the shortest value taken out of text: a shorter one would
// take out ordinary words, and guards nothing.
const minSecret = 6

// redactor takes a server's secrets (its credential and the environment
// values read from the gateway's environment or files) out of what its
// upstream sends back, which may echo them: outputs, error messages, log
// messages. The zero value and nil take out nothing.
type redactor struct {
	plain   []string
	escaped [][]byte // each secret as encoding/json writes it inside a string
}

func newRedactor(secrets []string) *redactor {
	r := &redactor{}
	// The longest first: one secret may hold another.
	secrets = slices.Clone(secrets)
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	for _, s := range secrets {
		if len(s) < minSecret {
			continue
		}
		r.plain = append(r.plain, s)
		enc, _ := json.Marshal(s)
		r.escaped = append(r.escaped, enc[1:len(enc)-1])
	}
	return r
}

// text takes the secrets out of s.
func (r *redactor) text(s string) string {
	if r == nil {
		return s
	}
	for _, p := range r.plain {
		s = strings.ReplaceAll(s, p, redacted)
	}
	return s
}

// excerpt is provider text fit for a message (registry.Excerpt) without
// the secrets: taken out before cleaning, and again after, since cleaning
// drops invisible characters that could hide one.
func (r *redactor) excerpt(s string) string { return r.text(registry.Excerpt([]byte(r.text(s)))) }

// redactJSON takes the secrets out of a JSON document written by
// encoding/json, whose strings are escaped one way only.
func (r *redactor) redactJSON(doc []byte) []byte {
	if r == nil {
		return doc
	}
	for _, e := range r.escaped {
		if bytes.Contains(doc, e) {
			doc = bytes.ReplaceAll(doc, e, []byte(redacted))
		}
	}
	return doc
}
