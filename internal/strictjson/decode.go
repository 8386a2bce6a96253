package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
)

// ValueError is a value that does not decode into its place: its JSON kind
// does not fit the Go type there (Err nil), or the type decodes itself and
// refused it (Err is what its UnmarshalJSON or UnmarshalText said).
type ValueError struct {
	// Path says where, as MemberError's does; "" is the document.
	Path string
	// Kind is the value's JSON kind: "object", "array", "string",
	// "number", "boolean" or "null".
	Kind string
	// Type is the Go type it was to decode into.
	Type reflect.Type
	Err  error
}

func (e *ValueError) Error() string {
	at := ""
	if e.Path != "" {
		at = " at " + strconv.Quote(e.Path)
	}
	if e.Err != nil {
		return "strictjson: value" + at + ": " + e.Err.Error()
	}
	return "strictjson: cannot decode " + e.Kind + at + " into " + e.Type.String()
}

func (e *ValueError) Unwrap() error { return e.Err }

// Decode decodes doc into v, a pointer, with encoding/json, refusing
// first what Check refuses (a *MemberError), and naming the place of a
// value that does not decode (a *ValueError, from Locate): encoding/json's
// own errors name neither the array index nor the map key of a bad value,
// and a value that decodes itself stops the decoder with an error that
// says nothing of where it was. A document that is not JSON is
// ErrNotJSON.
func Decode(doc []byte, v any) error {
	if err := Check(doc, ShapeOf(reflect.TypeOf(v))); err != nil {
		return err
	}
	err := json.Unmarshal(doc, v)
	if err == nil {
		return nil
	}
	if located := Locate(doc, v); located != nil {
		return located
	}
	return err
}

// Locate finds the first value of doc, in the document's order, that does
// not decode into its place in v (a pointer, or its type's zero value),
// and returns it as a *ValueError, or the *MemberError of a Decode inside
// its UnmarshalJSON with the path made the document's; nil when every value decodes, or doc
// is not JSON. Each value is decoded alone, as encoding/json would decode
// it in place: object members its struct does not know are passed over,
// as encoding/json passes them, and null fits anything.
//
// It is for after encoding/json has refused doc: it decodes every leaf
// again, at a cost worth paying only to say where a mistake is.
func Locate(doc []byte, v any) error {
	shape := ShapeOf(reflect.TypeOf(v))
	if shape == nil {
		return nil
	}
	switch err := locate(bytes.TrimSpace(doc), shape, "").(type) {
	case *ValueError:
		return err
	case *MemberError:
		return err
	}
	return nil
}

func locate(raw []byte, shape *Shape, path string) error {
	k := jsonKind(raw)
	if k == "null" && shape.kind != kindLeaf {
		return nil
	}
	switch shape.kind {
	case kindStruct, kindMap:
		if k != "object" {
			return &ValueError{Path: path, Kind: k, Type: shape.typ}
		}
		return members(raw, func(name string, value []byte) error {
			child := shape.elem
			if shape.kind == kindStruct {
				if child = shape.fields[name]; child == nil {
					return nil
				}
			}
			return locate(value, child, join(path, cutName([]byte(name))))
		})
	case kindArray:
		if k != "array" {
			return &ValueError{Path: path, Kind: k, Type: shape.typ}
		}
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return err
		}
		for i, item := range items {
			if err := locate(item, shape.elem, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		return nil
	}
	err := json.Unmarshal(raw, reflect.New(shape.typ).Interface())
	if err == nil {
		return nil
	}
	if !decodesItself(shape.typ) {
		return &ValueError{Path: path, Kind: k, Type: shape.typ}
	}
	return within(path, err, k, shape.typ)
}

// within places err, the error of a value at path that decodes itself:
// an error from a Decode inside its UnmarshalJSON keeps its own path,
// made the document's.
func within(path string, err error, kind string, t reflect.Type) error {
	var member *MemberError
	if errors.As(err, &member) {
		m := *member
		m.Path, m.Object = join(path, m.Path), join(path, m.Object)
		return &m
	}
	var value *ValueError
	if errors.As(err, &value) {
		v := *value
		v.Path = join(path, v.Path)
		return &v
	}
	return &ValueError{Path: path, Kind: kind, Type: t, Err: err}
}

// join is the path of inner, a path within the value at outer.
func join(outer, inner string) string {
	switch {
	case outer == "":
		return inner
	case inner == "":
		return outer
	case inner[0] == '[':
		return outer + inner
	}
	return outer + "." + inner
}

// members calls f with each member of the object raw, in order.
func members(raw []byte, f func(name string, value []byte) error) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return err
		}
		name, _ := tok.(string)
		if err := f(name, value); err != nil {
			return err
		}
	}
	return nil
}

// jsonKind names the JSON kind of the value raw.
func jsonKind(raw []byte) string {
	switch b := bytes.TrimSpace(raw); {
	case len(b) == 0:
		return ""
	case b[0] == '{':
		return "object"
	case b[0] == '[':
		return "array"
	case b[0] == '"':
		return "string"
	case b[0] == 't' || b[0] == 'f':
		return "boolean"
	case b[0] == 'n':
		return "null"
	default:
		return "number"
	}
}
