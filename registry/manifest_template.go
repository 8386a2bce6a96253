package registry

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// template is a string of a manifest's endpoint with {field} placeholders,
// split once at load into literal text and the input fields that fill it.
type template struct {
	parts []templatePart
}

type templatePart struct {
	literal string
	field   string // set for a placeholder; literal is then empty
}

// fieldName is what a placeholder may name: the name of a top-level input
// property, written plainly.
var fieldName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,127}$`)

// compileTemplate splits s at its placeholders. Braces appear only as
// placeholders: anything else between or around them is a mistake, and
// refusing it keeps a template's meaning plain to whoever reviews it.
func compileTemplate(s string) (template, error) {
	var t template
	for s != "" {
		open := strings.IndexAny(s, "{}")
		if open < 0 {
			t.parts = append(t.parts, templatePart{literal: s})
			break
		}
		if s[open] == '}' {
			return template{}, fmt.Errorf("has a %q outside a {field} placeholder", "}")
		}
		if open > 0 {
			t.parts = append(t.parts, templatePart{literal: s[:open]})
		}
		end := strings.IndexAny(s[open+1:], "{}")
		if end < 0 || s[open+1+end] != '}' {
			return template{}, fmt.Errorf("has a %q that does not close a {field} placeholder", "{")
		}
		name := s[open+1 : open+1+end]
		if !fieldName.MatchString(name) {
			return template{}, fmt.Errorf("has a placeholder {%s} that is not a field name", name)
		}
		t.parts = append(t.parts, templatePart{field: name})
		s = s[open+1+end+1:]
	}
	return t, nil
}

// fields lists the input fields the template names, in order.
func (t template) fields() []string {
	var out []string
	for _, p := range t.parts {
		if p.field != "" {
			out = append(out, p.field)
		}
	}
	return out
}

// whole returns the field when the template is exactly one placeholder.
func (t template) whole() (string, bool) {
	if len(t.parts) == 1 && t.parts[0].field != "" {
		return t.parts[0].field, true
	}
	return "", false
}

// render fills the placeholders from input, each value turned into text
// and passed through escape. present is false when a field is absent from
// the input, in which case the caller leaves the whole value out.
func (t template) render(input map[string]any, escape func(string) string) (out string, present bool, err error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.field == "" {
			b.WriteString(p.literal)
			continue
		}
		v, ok := input[p.field]
		if !ok {
			return "", false, nil
		}
		text, err := scalarText(v)
		if err != nil {
			return "", false, fmt.Errorf("input field %s: %w", p.field, err)
		}
		b.WriteString(escape(text))
	}
	return b.String(), true, nil
}

// scalarText is the text of a decoded scalar input value, as it goes into a
// path, a query parameter or a header: strings as they are, numbers as the
// caller wrote them, booleans as true or false.
func scalarText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	}
	return "", fmt.Errorf("is not a string, number or boolean")
}
