// Package textcheck says whether text a caller or an operator sends can be
// kept as it was sent by every store. PostgreSQL's text and jsonb hold no
// U+0000 and no bytes that are not UTF-8, and the other C0 control
// characters are no part of any name, id or note a person writes: a field
// holding one is refused where it enters (a 400 naming it, a config error
// at start), so that no store is ever asked to keep it and none answers
// with a server fault.
package textcheck

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Problem says why s cannot be kept as a name, an id or a note, as the end
// of a sentence that begins with the field's name ("holds the control
// character U+0000"); "" when it can. Tab, line feed and carriage return
// are text; the other C0 controls (U+0000 to U+001F) are not, nor is
// anything that is not UTF-8.
func Problem(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			return fmt.Sprintf("holds the control character U+%04X", c)
		}
	}
	if !utf8.ValidString(s) {
		return "is not UTF-8 text"
	}
	return ""
}

// Fields returns the first string in v, a value a JSON body was decoded
// into, that Problem refuses: its path by the JSON names of the fields
// that lead to it ("approval.grantId"), and the problem; "" when there is
// none. Raw JSON (json.RawMessage, []byte) is not text and is left to
// whoever reads it.
func Fields(v any) (path, problem string) {
	return fields(reflect.ValueOf(v), "")
}

func fields(v reflect.Value, path string) (string, string) {
	switch v.Kind() {
	case reflect.String:
		if p := Problem(v.String()); p != "" {
			return path, p
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return fields(v.Elem(), path)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				// A type that reads its own JSON spells its members as
				// toolgate's JSON does, in lower camel case.
				name = strings.ToLower(f.Name[:1]) + f.Name[1:]
			}
			if f.Anonymous && f.Tag.Get("json") == "" {
				name = "" // an embedded struct's fields are its parent's
			}
			if p, problem := fields(v.Field(i), join(path, name)); problem != "" {
				return p, problem
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "", "" // raw JSON or bytes, not text
		}
		for i := range v.Len() {
			if p, problem := fields(v.Index(i), path+"["+strconv.Itoa(i)+"]"); problem != "" {
				return p, problem
			}
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			if k.Kind() == reflect.String {
				if problem := Problem(k.String()); problem != "" {
					return path, "has a member whose name " + problem
				}
			}
			if p, problem := fields(v.MapIndex(k), join(path, k.String())); problem != "" {
				return p, problem
			}
		}
	}
	return "", ""
}

func join(path, name string) string {
	switch {
	case path == "":
		return name
	case name == "":
		return path
	}
	return path + "." + name
}
