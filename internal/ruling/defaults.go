package ruling

import (
	"encoding/json"
)

// defaults is what a tool's input schema gives as each property's
// "default", nested as the properties are: the input rules read is the
// input with them filled in where it leaves them out, as the tool itself
// reads it. nil when the schema gives none.
type defaults map[string]*defaulted

// defaulted is one property's default value (set: has one) and its own
// properties' defaults.
type defaulted struct {
	value any
	set   bool
	props defaults
}

// defaultsOf reads the defaults of an input schema; nil when it has none
// or cannot be read (the registry checked it is JSON Schema already).
func defaultsOf(schema []byte) defaults {
	var s schemaNode
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	return s.defaults()
}

// schemaNode is the part of a JSON Schema defaults are read from.
type schemaNode struct {
	Properties map[string]struct {
		schemaNode
		Default json.RawMessage `json:"default"`
	} `json:"properties"`
}

func (s schemaNode) defaults() defaults {
	var out defaults
	for name, p := range s.Properties {
		d := &defaulted{props: p.defaults()}
		if p.Default != nil && json.Unmarshal(p.Default, &d.value) == nil {
			d.set = true
		}
		if d.set || d.props != nil {
			if out == nil {
				out = defaults{}
			}
			out[name] = d
		}
	}
	return out
}

// fill adds to input the defaults of what it leaves out, and of the
// properties of the objects it has. It changes input, which is the
// rules' own copy.
func (ds defaults) fill(input map[string]any) {
	for name, d := range ds {
		v, present := input[name]
		switch {
		case !present && d.set:
			input[name] = d.value
		case present && d.props != nil:
			if obj, ok := v.(map[string]any); ok {
				d.props.fill(obj)
			}
		}
	}
}
