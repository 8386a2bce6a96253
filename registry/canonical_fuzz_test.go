package registry_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/toolgate/toolgate/registry"
)

// FuzzCanonicalize checks, for any input, that canonicalization never
// panics, that its output is valid JSON meaning the same as the input, and
// that it is a fixed point: canonical bytes canonicalize to themselves.
func FuzzCanonicalize(f *testing.F) {
	for _, seed := range []string{
		`{}`, `[]`, `null`, `{"b":1,"a":[true,false,null]}`, `{"\u20ac":1,"\r":2,"\ud83d\ude00":3}`,
		`1e21`, `-0`, `0.000001`, `"\u0007"`, `{"a":{"a":{"a":[1.5e-7]}}}`, `{"a":1,"a":2}`, "\xff", `[1,]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		canon, err := registry.Canonicalize(doc)
		if err != nil {
			return
		}
		if !json.Valid(canon) {
			t.Fatalf("canonical form of %q is not JSON: %q", doc, canon)
		}
		again, err := registry.Canonicalize(canon)
		if err != nil || !bytes.Equal(again, canon) {
			t.Fatalf("not a fixed point: %q -> %q -> %q (%v)", doc, canon, again, err)
		}
		var a, b any
		if json.Unmarshal(doc, &a) == nil && json.Unmarshal(canon, &b) == nil && !reflect.DeepEqual(a, b) {
			t.Fatalf("meaning changed: %q -> %q", doc, canon)
		}
	})
}
