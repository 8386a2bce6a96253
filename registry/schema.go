package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/xeipuuv/gojsonschema"
)

// FieldError is one way a document fails its schema.
type FieldError struct {
	// Path locates the failing value, e.g. "input.limit"; the root is the prefix alone.
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Schema is a JSON Schema compiled once, when its tool version is registered.
type Schema struct {
	raw      json.RawMessage
	compiled *gojsonschema.Schema
}

// CompileSchema compiles a JSON Schema. References to anything but the
// schema itself ("#...") are refused: a schema that could fetch from the
// network at validation time would let a provider make the gateway send
// requests, and would make validation depend on a remote's availability.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("registry: schema is not JSON: %w", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, fmt.Errorf("registry: schema must be a JSON object")
	}
	if ref := firstRemoteRef(doc); ref != "" {
		return nil, fmt.Errorf("registry: schema refers to %q: only local references (#...) are allowed", ref)
	}
	compiled, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(raw))
	if err != nil {
		return nil, fmt.Errorf("registry: invalid schema: %w", err)
	}
	return &Schema{raw: raw, compiled: compiled}, nil
}

func firstRemoteRef(v any) string {
	switch t := v.(type) {
	case map[string]any:
		if ref, ok := t["$ref"].(string); ok && !strings.HasPrefix(ref, "#") {
			return ref
		}
		if id, ok := t["$id"].(string); ok && id != "" && !strings.HasPrefix(id, "#") {
			// A base URI would make later relative references remote.
			return id
		}
		for _, child := range t {
			if ref := firstRemoteRef(child); ref != "" {
				return ref
			}
		}
	case []any:
		for _, child := range t {
			if ref := firstRemoteRef(child); ref != "" {
				return ref
			}
		}
	}
	return ""
}

// Raw returns the schema document as registered.
func (s *Schema) Raw() json.RawMessage { return s.raw }

// Validate checks a JSON document against the schema. It returns nil when
// the document is valid and otherwise every failure, ordered by path, with
// paths rooted at prefix ("input", "output").
func (s *Schema) Validate(doc []byte, prefix string) []FieldError {
	res, err := s.compiled.Validate(gojsonschema.NewBytesLoader(doc))
	if err != nil {
		return []FieldError{{Path: prefix, Message: "is not valid JSON"}}
	}
	if res.Valid() {
		return nil
	}
	out := make([]FieldError, 0, len(res.Errors()))
	for _, e := range res.Errors() {
		path := prefix
		if f := e.Field(); f != "" && f != "(root)" {
			path += "." + f
		}
		if e.Type() == "required" {
			if p, ok := e.Details()["property"].(string); ok {
				path += "." + p
				out = append(out, FieldError{Path: path, Message: "is required"})
				continue
			}
		}
		out = append(out, FieldError{Path: path, Message: e.Description()})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
