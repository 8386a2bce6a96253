package registry

import (
	"fmt"
	"strconv"
	"strings"
)

// pointer is a parsed RFC 6901 JSON Pointer; the empty pointer is the
// whole document.
type pointer []string

// parsePointer parses an RFC 6901 pointer: empty, or "/" then tokens
// separated by "/", with "~1" for "/" and "~0" for "~".
func parsePointer(s string) (pointer, error) {
	if s == "" {
		return pointer{}, nil
	}
	if s[0] != '/' {
		return nil, fmt.Errorf(`must be empty or start with "/" (RFC 6901)`)
	}
	tokens := strings.Split(s[1:], "/")
	for i, tok := range tokens {
		for j := 0; j < len(tok); j++ {
			if tok[j] == '~' && (j+1 == len(tok) || (tok[j+1] != '0' && tok[j+1] != '1')) {
				return nil, fmt.Errorf(`has a "~" not followed by 0 or 1 (RFC 6901)`)
			}
		}
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
	}
	return tokens, nil
}

// resolve returns the value p points at in doc, a document decoded into
// maps, slices and scalars.
func (p pointer) resolve(doc any) (any, bool) {
	cur := doc
	for _, tok := range p {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			i, ok := arrayIndex(tok)
			if !ok || i >= len(v) {
				return nil, false
			}
			cur = v[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// arrayIndex parses an RFC 6901 array index: decimal digits, no sign, no
// leading zero.
func arrayIndex(tok string) (int, bool) {
	if tok == "" || len(tok) > 9 || (len(tok) > 1 && tok[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(tok)
	return n, err == nil
}

// String is the pointer as RFC 6901 writes it, for messages.
func (p pointer) String() string {
	if len(p) == 0 {
		return `the top level`
	}
	var b strings.Builder
	for _, tok := range p {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}
