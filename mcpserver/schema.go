package mcpserver

import (
	"bytes"
	"encoding/json"
)

// MCP's structured content is an object, and a tool's outputSchema
// describes one. A tool whose output is an array (exchange-rates,
// public-holidays) has it wrapped as {"items": [...]}, and its schema
// wrapped to match.

// itemsKey names the member an output that is not an object is wrapped in.
const itemsKey = "items"

// outputSchemaOf is the outputSchema of a tool whose output schema is raw:
// the schema itself when it describes an object, the wrapping object's when
// it describes an array, none (nil) otherwise.
func outputSchemaOf(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, err
	}
	switch schema["type"] {
	case "object":
		return raw, nil
	case "array":
		return json.Marshal(wrapSchema(schema))
	}
	return nil, nil
}

// wrapSchema returns the schema of {"items": <what schema describes>}.
// The dialect and the definitions move up to the new root, where "$schema"
// must be and where "#/definitions/..." references look.
func wrapSchema(schema map[string]any) map[string]any {
	inner := make(map[string]any, len(schema))
	wrapper := map[string]any{
		"type":                 "object",
		"required":             []string{itemsKey},
		"additionalProperties": false,
	}
	for k, v := range schema {
		switch k {
		case "$schema", "definitions", "$defs":
			wrapper[k] = v
		default:
			inner[k] = v
		}
	}
	wrapper["properties"] = map[string]any{itemsKey: inner}
	return wrapper
}

// structuredContentOf is a completed call's structured content: the output
// when it is an object, else the output wrapped as {"items": ...}.
func structuredContentOf(output json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(output)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return trimmed
	}
	wrapped := make([]byte, 0, len(trimmed)+len(itemsKey)+5)
	wrapped = append(wrapped, `{"`+itemsKey+`":`...)
	wrapped = append(wrapped, trimmed...)
	return append(wrapped, '}')
}
