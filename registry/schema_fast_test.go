package registry_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/toolgatetype"
	_ "github.com/toolgate/toolgate/tools" // the built-in tools' schemas
	"github.com/toolgate/toolgate/tools/recorded"
)

// The fast path of Schema.Validate may only ever answer "valid" where
// gojsonschema does; these tests hold it to that on the built-in tools'
// schemas, on edge cases, and on thousands of mutated documents.

// agree fails when the fast path accepts a document gojsonschema rejects.
func agree(t *testing.T, s *registry.Schema, doc []byte) {
	t.Helper()
	fast := registry.FastAccepts(s, doc)
	slow, panicked := validateSlow(s, doc)
	if panicked {
		// gojsonschema panics on a few documents (a number too large for a
		// float64 where a const is); the fast path must leave those to it.
		assert.False(t, fast, "the fast path accepted %s, on which gojsonschema panics", doc)
		return
	}
	if fast {
		assert.Empty(t, slow, "the fast path accepted %s", doc)
	}
	// Whichever path answers, Validate says what gojsonschema says.
	assert.Equal(t, slow == nil, s.Validate(doc, "doc") == nil, "%s", doc)
}

func validateSlow(s *registry.Schema, doc []byte) (failures []toolgatetype.FieldError, panicked bool) {
	defer func() {
		if recover() != nil {
			panicked = true
		}
	}()
	return registry.ValidateSlow(s, doc, "doc"), false
}

func TestFastPathCoversBuiltInTools(t *testing.T) {
	t.Parallel()
	versions, _ := registry.Default.List("", 100, 0)
	require.NotEmpty(t, versions)
	for _, v := range versions {
		assert.True(t, registry.HasFastPath(v.Input), "%s input", v.Tool.Slug)
		if v.Output != nil {
			assert.True(t, registry.HasFastPath(v.Output), "%s output", v.Tool.Slug)
			if len(v.Tool.ExampleOutput) > 0 {
				assert.True(t, registry.FastAccepts(v.Output, v.Tool.ExampleOutput), "%s example output", v.Tool.Slug)
			}
		}
		if len(v.Tool.ExampleInput) > 0 {
			assert.True(t, registry.FastAccepts(v.Input, v.Tool.ExampleInput), "%s example input", v.Tool.Slug)
		}
	}
}

func TestFastPathAgreesOnEdgeCases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		schema string
		docs   []string
	}{
		{`{"type":"integer","minimum":1,"maximum":100}`, []string{
			`1`, `1.0`, `1e2`, `1E+2`, `100.0000000000000001`, `100.00000000000001`, `1.5`, `0`, `-0`, `0.99999999999999999`,
			`1e400`, `-1e400`, `1e-400`, `10e-1`, `1000e-1`, `101`, `"1"`, `null`, `true`, `[1]`, `{}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`,
			`1 2`, ` 5 `, "\t7\n", `5]`, ``, `NaN`,
		}},
		{`{"type":"number","maximum":0.1}`, []string{`0.1`, `0.10000000000000001`, `0.1000000000000001`, `0.09999999999999999`, `1e-1`}},
		{`{"type":["string","null"],"minLength":2,"maxLength":3}`, []string{
			`"ab"`, `"abc"`, `"a"`, `"abcd"`, `"éé"`, `"日本語"`, `"日本語x"`, `"\u00e9\u00e9"`, `"a\"b"`, `null`, `12`, `"\ud800x"`,
			"\"a\x01\"", `"\x"`, `"\u12"`, `"ab`, "\"\xff\xfe\"",
		}},
		{`{"enum":["time","time-asc"]}`, []string{`"time"`, `"tim\u0065"`, `"magnitude"`, `1`, `null`, `["time"]`, `{"time":1}`}},
		{`{"const":"FeatureCollection"}`, []string{`"FeatureCollection"`, `"Feature"`, `1`, `true`, `null`, `{}`}},
		{`{"type":"string","format":"date"}`, []string{`"2024-09-25"`, `"2024-13-01"`, `"yesterday"`, `"2024-09-25T00:00:00Z"`, `5`}},
		{`{"type":"string","format":"uri"}`, []string{`"https://example.com/x"`, `"not a uri"`, `"/relative"`, `"https://exa mple.com"`, `"a:b"`}},
		{`{"type":"string","pattern":"^[A-Z]{3}$"}`, []string{`"USD"`, `"usd"`, `"USDX"`, `"US\u0044"`}},
		{`{"type":"object","required":["a","b"],"additionalProperties":false,"properties":{"a":{"type":"string"},"c":{"type":"integer"}}}`, []string{
			`{"a":"x","b":1}`, `{"a":"x"}`, `{"b":1}`, `{"a":"x","b":1,"c":2}`, `{"a":"x","b":1,"c":2.5}`, `{"a":"x","b":1,"d":0}`,
			`{"a":"x","a":"y","b":1}`, `{"a":1,"a":"y","b":1}`, `{"\u0061":"x","b":null}`, `{ "a" : "x" , "b" : 1 }`, `{"a":"x","b":1,}`,
			`{"a":"x" "b":1}`, `{"a":"x","b":1}}`, `[]`, `{}`, `{"a":"x","b":{"deep":[1,2,{"x":[]}]}}`,
		}},
		{`{"type":"object","properties":{"a":{"type":"integer"}}}`, []string{`{"a":1,"a":1.5}`, `{"a":1.5,"a":1}`, `{"z":1,"z":2}`, `{}`}},
		{`{"type":"array","items":{"type":"number"},"minItems":2,"maxItems":3}`, []string{
			`[1,2]`, `[1,2,3]`, `[1]`, `[1,2,3,4]`, `[1,"2"]`, `[ 1 , 2 ]`, `[1,2,]`, `[,1]`, `[]`, `[1 2]`,
		}},
		{`{"$schema":"http://json-schema.org/draft-04/schema#","const":"x"}`, []string{`"y"`, `"x"`}},
		{`{"type":"object","patternProperties":{"^a":{"type":"string"}}}`, []string{`{"ab":1}`, `{"ab":"x"}`}},
		{`{"type":"integer","format":"date"}`, []string{`5`}},
	}
	for _, c := range cases {
		s, err := registry.CompileSchema(json.RawMessage(c.schema))
		require.NoError(t, err, c.schema)
		for _, doc := range c.docs {
			agree(t, s, []byte(doc))
		}
	}
}

func TestFastPathAgreesOnMutatedDocuments(t *testing.T) {
	t.Parallel()
	versions, _ := registry.Default.List("", 100, 0)
	type target struct {
		name   string
		schema *registry.Schema
	}
	var targets []target
	var docs [][]byte
	for _, v := range versions {
		targets = append(targets, target{v.Tool.Slug + " input", v.Input})
		docs = append(docs, v.Tool.ExampleInput)
		if v.Output != nil {
			targets = append(targets, target{v.Tool.Slug + " output", v.Output})
			docs = append(docs, v.Tool.ExampleOutput)
		}
	}
	// Real outputs: every recording normalized by every tool that accepts it.
	for _, name := range recorded.Names() {
		for _, v := range versions {
			out, err := v.Tool.Normalize(recorded.Response(name))
			if err != nil {
				continue
			}
			raw, err := json.Marshal(out)
			require.NoError(t, err)
			docs = append(docs, raw)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, doc := range docs {
		if len(doc) == 0 {
			continue
		}
		var tree any
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&tree))
		for i := 0; i < 200; i++ {
			mutated := mutate(rng, tree, 0)
			raw, err := json.Marshal(mutated)
			require.NoError(t, err)
			if rng.IntN(4) == 0 {
				raw = mutateBytes(rng, raw)
			}
			for _, tg := range targets {
				agree(t, tg.schema, raw)
			}
		}
	}
}

// mutate returns a copy of a decoded document with, at random, values
// replaced by others of another type or at the edges of numbers, and keys
// dropped or added.
func mutate(rng *rand.Rand, v any, depth int) any {
	if rng.IntN(8) == 0 || depth > 6 {
		return replacement(rng)
	}
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t)+1)
		for k, e := range t {
			if rng.IntN(12) == 0 {
				continue
			}
			out[k] = mutate(rng, e, depth+1)
		}
		if rng.IntN(12) == 0 {
			out["extra"+strconv.Itoa(rng.IntN(3))] = replacement(rng)
		}
		return out
	case []any:
		var out []any
		for _, e := range t {
			if rng.IntN(12) == 0 {
				continue
			}
			out = append(out, mutate(rng, e, depth+1))
		}
		if rng.IntN(12) == 0 {
			out = append(out, replacement(rng))
		}
		if out == nil {
			out = []any{}
		}
		return out
	}
	return v
}

func replacement(rng *rand.Rand) any {
	choices := []any{
		nil, true, false, "", "x", "2024-09-25", "2024-02-30", "https://example.com/a", "not a uri", "USD", "EUR", "time",
		"FeatureCollection", "Point", "é日本", json.Number("0"), json.Number("-1"), json.Number("1.5"), json.Number("1e2"),
		json.Number("1.0"), json.Number("100"), json.Number("101"), json.Number("-0.0"), json.Number("1e400"), json.Number("9007199254740993"),
		json.Number("10.000000000000000001"), []any{}, []any{json.Number("1"), json.Number("2")}, map[string]any{}, map[string]any{"a": "b"},
	}
	return choices[rng.IntN(len(choices))]
}

// mutateBytes damages a document at the byte level: a byte dropped,
// doubled or replaced.
func mutateBytes(rng *rand.Rand, b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	i := rng.IntN(len(b))
	out := append([]byte(nil), b[:i]...)
	switch rng.IntN(3) {
	case 0: // drop
	case 1:
		out = append(out, b[i], b[i])
	default:
		out = append(out, "\"{}[],:0e.-\\ \x00\xff"[rng.IntN(15)])
	}
	return append(out, b[i+1:]...)
}
