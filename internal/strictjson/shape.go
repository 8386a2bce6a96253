package strictjson

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// Shape is what Check expects of a value: a struct's member names, or the
// shape of a map's values or an array's elements. A nil *Shape, or the
// shape of any other value (a leaf), expects nothing in particular (names
// are free; duplicates are still refused).
type Shape struct {
	kind   kind
	typ    reflect.Type      // the Go type the value decodes into
	fields map[string]*Shape // kindStruct: the members, by their exact names
	names  []string          // kindStruct: the members' names, in the struct's order
	elem   *Shape            // kindMap, kindArray: each value's shape
}

type kind uint8

const (
	kindLeaf kind = iota // a value that decodes itself, or a string, number, boolean or interface
	kindStruct
	kindMap
	kindArray
)

var (
	shapesMu sync.Mutex
	shapes   sync.Map // reflect.Type -> *Shape; nil shapes stored as (*Shape)(nil)
)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// ShapeOf returns the shape encoding/json decodes into a value of type t
// (a pointer to it, as given to Unmarshal, has the same shape): a struct's
// members are the names of its exported fields as their json tags give
// them, with those of untagged embedded structs promoted, "-" left out. A
// type that decodes itself (json.Unmarshaler, encoding.TextUnmarshaler,
// json.RawMessage) or an interface is a leaf: its names are its own to
// check. A nil t has a nil shape. Shapes are kept per type, so asking again costs a map lookup.
func ShapeOf(t reflect.Type) *Shape {
	if t == nil {
		return nil
	}
	if s, ok := shapes.Load(t); ok {
		return s.(*Shape)
	}
	shapesMu.Lock()
	defer shapesMu.Unlock()
	building := map[reflect.Type]*Shape{}
	s := build(t, building)
	for bt, bs := range building {
		shapes.Store(bt, bs)
	}
	shapes.Store(t, s)
	return s
}

// build makes t's shape; building holds the struct shapes under way, so a
// recursive type refers to itself rather than recursing forever.
func build(t reflect.Type, building map[reflect.Type]*Shape) *Shape {
	for t.Kind() == reflect.Pointer && !decodesItself(t) {
		t = t.Elem()
	}
	if s, ok := shapes.Load(t); ok {
		return s.(*Shape)
	}
	if s, ok := building[t]; ok {
		return s
	}
	leaf := &Shape{kind: kindLeaf, typ: t}
	if decodesItself(t) {
		return leaf
	}
	switch t.Kind() {
	case reflect.Struct:
		s := &Shape{kind: kindStruct, typ: t, fields: map[string]*Shape{}}
		building[t] = s
		addFields(s, t, building, map[reflect.Type]bool{})
		return s
	case reflect.Map:
		if t.Key().Kind() == reflect.String {
			return &Shape{kind: kindMap, typ: t, elem: build(t.Elem(), building)}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return leaf // []byte is a base64 string
		}
		return &Shape{kind: kindArray, typ: t, elem: build(t.Elem(), building)}
	}
	return leaf
}

func decodesItself(t reflect.Type) bool {
	if t.Kind() == reflect.Interface {
		return true
	}
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || pt.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || pt.Implements(textUnmarshaler)
}

// addFields adds t's fields to s, a field of an outer struct winning over
// a promoted one of the same name, as in encoding/json.
func addFields(s *Shape, t reflect.Type, building map[reflect.Type]*Shape, seen map[reflect.Type]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	var embedded []reflect.Type
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && !decodesItself(ft) {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, taken := s.fields[name]; !taken {
			s.fields[name] = build(f.Type, building)
			s.names = append(s.names, name)
		}
	}
	for _, e := range embedded {
		addFields(s, e, building, seen)
	}
}
