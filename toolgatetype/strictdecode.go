package toolgatetype

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
)

// checkMembers refuses data when one of its members' names is not exactly
// one of v's: encoding/json would match "maxPerCallUSD" to maxPerCallUsd,
// and DisallowUnknownFields lets it through. It is invalid_request naming
// the member by its path ("tools.echo.Allowed"). Members of structs and of
// maps of structs are checked, as the spend controls' forms have them.
//
// A member twice is refused before the bytes get here: every body the HTTP
// API reads is checked for that at every depth (package httpapi). This
// check is the vocabulary's own, as toolgatetype depends on nothing else
// of toolgate's; spend controls are not on the call path, so that it
// decodes the members once more does not matter.
func checkMembers(data []byte, v any) error {
	return checkNames(data, reflect.TypeOf(v), "")
}

func checkNames(data []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var members map[string]json.RawMessage
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if json.Unmarshal(data, &members) != nil {
			return nil // not an object (or null): the decoder says what is wrong
		}
	default:
		return nil
	}
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	slices.Sort(names) // the same member named each time
	for _, name := range names {
		var inner reflect.Type
		if t.Kind() == reflect.Map {
			inner = t.Elem() // a map's names are its keys; its values have their type
		} else {
			f, ok := jsonField(t, name)
			if !ok {
				return Errorf(CodeInvalidRequest, "unknown field %q", path+name)
			}
			inner = f.Type
		}
		if err := checkNames(members[name], inner, path+name+"."); err != nil {
			return err
		}
	}
	return nil
}

// jsonField is t's field whose json name is exactly name.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" {
			tag = f.Name
		}
		if f.IsExported() && tag != "-" && tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
