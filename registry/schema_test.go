package registry_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetype"
)

func TestCompileSchemaRefusesNonLocalReferences(t *testing.T) {
	t.Parallel()
	// A schema that fetches would let a provider make the gateway send requests,
	// so the test server counts any request that arrives.
	var fetched atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetched.Add(1)
		_, _ = w.Write([]byte(`{"type":"string"}`))
	}))
	t.Cleanup(srv.Close)
	// Cleanups run after the parallel subtests finish, and before srv.Close.
	t.Cleanup(func() { assert.Zero(t, fetched.Load(), "a schema was fetched") })

	cases := []struct{ name, schema, ref string }{
		{"remote $ref", `{"$ref":"https://schemas.example.com/x.json"}`, "https://schemas.example.com/x.json"},
		{"remote $ref to a live server", `{"type":"object","properties":{"a":{"$ref":"` + srv.URL + `/a.json"}}}`, srv.URL + "/a.json"},
		{"relative file $ref", `{"type":"object","properties":{"a":{"$ref":"other.json#/x"}}}`, "other.json#/x"},
		{"$ref nested in an array", `{"anyOf":[{"type":"string"},{"$ref":"defs.json"}]}`, "defs.json"},
		{"non-fragment $id", `{"$id":"https://schemas.example.com/root.json","type":"object"}`, "https://schemas.example.com/root.json"},
		{"relative $id in a subschema", `{"type":"object","properties":{"a":{"$id":"a.json","type":"string"}}}`, "a.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := registry.CompileSchema(json.RawMessage(c.schema))
			require.Error(t, err)
			assert.Nil(t, s)
			assert.ErrorContains(t, err, c.ref)
		})
	}
}

func TestCompileSchemaRefusesNonObjects(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, schema string }{
		{"empty", ``},
		{"invalid JSON", `{"type":`},
		{"array", `[{"type":"object"}]`},
		{"boolean", `true`},
		{"string", `"object"`},
		{"null", `null`},
		{"invalid keyword value", `{"type":5}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := registry.CompileSchema(json.RawMessage(c.schema))
			assert.Error(t, err)
			assert.Nil(t, s)
		})
	}
}

func TestCompileSchemaLocalReferences(t *testing.T) {
	t.Parallel()
	raw := json.RawMessage(`{
		"type": "object",
		"properties": {
			"count": {"$ref": "#/definitions/positive"},
			"items": {"type": "array", "items": {"$ref": "#/definitions/positive"}}
		},
		"definitions": {"positive": {"type": "integer", "minimum": 1}}
	}`)
	s, err := registry.CompileSchema(raw)
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(s.Raw()))

	assert.Nil(t, s.Validate([]byte(`{"count":3,"items":[1,2]}`), "input"))

	errs := s.Validate([]byte(`{"count":0,"items":[1,-2]}`), "input")
	assert.Equal(t, []string{"input.count", "input.items.1"}, paths(errs))

	// A root-level reference and a fragment $id are local too.
	root, err := registry.CompileSchema(json.RawMessage(
		`{"$id":"#root","$ref":"#/definitions/req","definitions":{"req":{"type":"object","required":["a"]}}}`))
	require.NoError(t, err)
	assert.Equal(t, []toolgatetype.FieldError{{Path: "input.a", Message: "is required"}}, root.Validate([]byte(`{}`), "input"))
}

func paths(errs []toolgatetype.FieldError) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Path)
	}
	return out
}

func TestSchemaValidate(t *testing.T) {
	t.Parallel()
	s, err := registry.CompileSchema(json.RawMessage(`{
		"type": "object",
		"required": ["q", "address"],
		"properties": {
			"q": {"type": "string"},
			"limit": {"type": "integer", "maximum": 10},
			"address": {
				"type": "object",
				"required": ["city"],
				"properties": {"city": {"type": "string"}, "zip": {"type": "string"}}
			},
			"tags": {"type": "array", "items": {"type": "string"}}
		}
	}`))
	require.NoError(t, err)

	cases := []struct {
		name   string
		doc    string
		prefix string
		want   []toolgatetype.FieldError // Message "" means any non-empty message
	}{
		{"valid", `{"q":"x","address":{"city":"Oslo"}}`, "input", nil},
		{"missing top-level field", `{"address":{"city":"Oslo"}}`, "input",
			[]toolgatetype.FieldError{{Path: "input.q", Message: "is required"}}},
		{"missing nested field", `{"q":"x","address":{"zip":"0150"}}`, "input",
			[]toolgatetype.FieldError{{Path: "input.address.city", Message: "is required"}}},
		{"wrong type of nested field", `{"q":"x","address":{"city":7}}`, "input",
			[]toolgatetype.FieldError{{Path: "input.address.city"}}},
		{"array element", `{"q":"x","address":{"city":"Oslo"},"tags":["a",2]}`, "input",
			[]toolgatetype.FieldError{{Path: "input.tags.1"}}},
		{"several, sorted by path", `{"limit":11,"address":{"zip":1},"tags":[true]}`, "input",
			[]toolgatetype.FieldError{
				{Path: "input.address.city", Message: "is required"},
				{Path: "input.address.zip"},
				{Path: "input.limit"},
				{Path: "input.q", Message: "is required"},
				{Path: "input.tags.0"},
			}},
		{"root of wrong type", `[]`, "input", []toolgatetype.FieldError{{Path: "input"}}},
		{"other prefix", `{"q":1,"address":{"city":"Oslo"}}`, "output", []toolgatetype.FieldError{{Path: "output.q"}}},
		{"not JSON", `{"q":`, "input", []toolgatetype.FieldError{{Path: "input", Message: "is not valid JSON"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := s.Validate([]byte(c.doc), c.prefix)
			if c.want == nil {
				assert.Nil(t, got)
				return
			}
			require.Equal(t, paths(c.want), paths(got), "%+v", got)
			for i, w := range c.want {
				if w.Message == "" {
					assert.NotEmpty(t, got[i].Message, got[i].Path)
				} else {
					assert.Equal(t, w.Message, got[i].Message, got[i].Path)
				}
			}
		})
	}
}
