package tooldocs

import (
	"bytes"
	"encoding/json"
	"strings"
)

// exampleInput is the tool's own example input, or one made from its input
// schema when it ships none.
func (d *toolDoc) exampleInput() any {
	return exampleOr(d.v.Tool.ExampleInput, d.v.Tool.InputSchema)
}

// exampleOutput is the tool's own example output, or one made from its
// output schema.
func (d *toolDoc) exampleOutput() any {
	return exampleOr(d.v.Tool.ExampleOutput, d.v.Tool.OutputSchema)
}

func exampleOr(example, schema json.RawMessage) any {
	if v, ok := decodeJSON(example); ok && v != nil {
		return v
	}
	s, _ := decodeJSON(schema)
	return exampleFor(s, s, 0)
}

// decodeJSON decodes raw keeping numbers as written.
func decodeJSON(raw json.RawMessage) (any, bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

// exampleFor makes a small value for schema: its const, default, first
// example or first enum value where it has one, else a value of its type
// with only the required properties of objects. It is a best effort for
// tools that ship no example: a pattern, or constraints spread over
// allOf, can defeat it. root resolves local references.
func exampleFor(schema, root any, depth int) any {
	s, ok := schema.(map[string]any)
	if !ok || depth > 12 {
		return nil
	}
	if ref, ok := s["$ref"].(string); ok {
		return exampleFor(resolveLocalRef(root, ref), root, depth+1)
	}
	if v, ok := s["const"]; ok {
		return v
	}
	if v, ok := s["default"]; ok {
		return v
	}
	if list, ok := s["examples"].([]any); ok && len(list) > 0 {
		return list[0]
	}
	if list, ok := s["enum"].([]any); ok && len(list) > 0 {
		return list[0]
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := s[k].([]any); ok && len(list) > 0 {
			return exampleFor(list[0], root, depth+1)
		}
	}
	switch firstType(s) {
	case "object":
		out := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		required, _ := s["required"].([]any)
		for _, name := range required {
			if n, ok := name.(string); ok {
				out[n] = exampleFor(props[n], root, depth+1)
			}
		}
		return out
	case "array":
		n := 0
		if m, ok := s["minItems"].(json.Number); ok {
			if i, err := m.Int64(); err == nil && i > 0 {
				n = int(min(i, 3))
			}
		}
		out := make([]any, 0, n)
		for i := 0; i < n; i++ {
			out = append(out, exampleFor(s["items"], root, depth+1))
		}
		return out
	case "string":
		return exampleString(s)
	case "integer", "number":
		for _, k := range []string{"minimum", "exclusiveMinimum", "maximum"} {
			if v, ok := s[k].(json.Number); ok {
				if k == "exclusiveMinimum" {
					if f, err := v.Float64(); err == nil {
						return json.Number(formatNumber(f + 1))
					}
				}
				return v
			}
		}
		return json.Number("0")
	case "boolean":
		return false
	}
	return nil
}

// firstType is the schema's type, the first that is not null when it
// lists several, "object" when it only has properties.
func firstType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, v := range t {
			if name, ok := v.(string); ok && name != "null" {
				return name
			}
		}
		return "null"
	}
	if _, ok := s["properties"]; ok {
		return "object"
	}
	return ""
}

func exampleString(s map[string]any) string {
	switch s["format"] {
	case "date":
		return "2026-01-01"
	case "date-time":
		return "2026-01-01T00:00:00Z"
	case "time":
		return "00:00:00Z"
	case "email":
		return "user@example.com"
	case "uri", "url", "iri":
		return "https://example.com/"
	case "uuid":
		return exampleQuoteID
	case "ipv4":
		return "192.0.2.1"
	case "ipv6":
		return "2001:db8::1"
	case "hostname":
		return "example.com"
	}
	n := 1
	if m, ok := s["minLength"].(json.Number); ok {
		if i, err := m.Int64(); err == nil && i > 1 {
			n = int(min(i, 64))
		}
	}
	return strings.Repeat("x", n)
}

func formatNumber(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// resolveLocalRef follows a "#/a/b" reference inside root, or returns nil.
func resolveLocalRef(root any, ref string) any {
	if ref == "#" {
		return root
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	cur := root
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[tok]
	}
	return cur
}
