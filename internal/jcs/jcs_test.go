package jcs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/internal/jcs"
	"github.com/toolgate/toolgate/registry"
	"github.com/toolgate/toolgate/tools"
)

// The reference (reference_test.go) does the same through encoding/json's
// tokenizer: both must give the same bytes, or both refuse.
func sameAsReference(t *testing.T, doc []byte) {
	t.Helper()
	want, wantErr := referenceCanonicalize(doc)
	got, err := jcs.Canonicalize(doc)
	if wantErr != nil {
		require.Error(t, err, "the reference refuses %q (%v)", doc, wantErr)
		require.True(t, errors.Is(err, jcs.ErrNotCanonicalizable))
		return
	}
	require.NoError(t, err, "%q", doc)
	require.Equal(t, string(want), string(got), "%q", doc)
}

func TestTheRFCExamples(t *testing.T) {
	// RFC 8785 section 3.2.2's example, and its sorting example.
	got, err := jcs.Canonicalize([]byte(`{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`))
	require.NoError(t, err)
	assert.Equal(t, `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`, string(got))

	got, err = jcs.Canonicalize([]byte(`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`))
	require.NoError(t, err)
	assert.Equal(t, "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}", string(got))
}

func TestAgreesWithTheReference(t *testing.T) {
	docs := []string{
		`0`, `-0`, `-0.0`, `1e21`, `1e20`, `123456789012345`, `1234567890123456789`, `-12`, `0.1`, `1e-7`, `1e-6`,
		`5e-324`, `1.7976931348623157e308`, `1e400`, `[]`, `{}`, `[1,[2,[3]]]`, `{"b":1,"a":2,"a\u0000":3}`,
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `"\ud800"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"<>&\u2028"`,
		`"\u007f"`, `"\/"`, `0.000001`, `0.0000001`, `0.0000012`, `12.50`, `-12.5`, `-0.0`, `0.1234567890123456`, `123456789012345.6`, `1234.5678`, ` {"x" : [ true , false , null ] } `, `{"x":1}x`, `[1,]`, `{"a"}`, `"abc`, `01`, `1.`,
		`-`, `+1`, `.5`, `tru`, `nul`, "\"\x01\"", "\"\xff\"", `[` + string(bytes.Repeat([]byte("["), 600)),
	}
	for _, d := range docs {
		sameAsReference(t, []byte(d))
	}
	// Every JSON file of the repository's test data, which is most of the
	// shapes tools answer with.
	files, _ := filepath.Glob("../../tools/recorded/testdata/*.json")
	more, _ := filepath.Glob("../../registry/testdata/*.json")
	for _, f := range append(files, more...) {
		doc, err := os.ReadFile(f)
		require.NoError(t, err)
		sameAsReference(t, doc)
	}
}

func TestRandomDocuments(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		doc, err := json.Marshal(randomValue(rng, 0))
		require.NoError(t, err)
		sameAsReference(t, doc)
	}
}

func randomValue(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(8); {
	case depth > 4 || k == 0:
		return []any{nil, true, false}[rng.IntN(3)]
	case k == 1:
		return math.Float64frombits(rng.Uint64()&^(0x7ff<<52) | uint64(rng.IntN(2046)+1)<<52)
	case k == 2:
		return rng.Int64N(1<<62) - 1<<61
	case k == 3:
		return randomString(rng)
	case k <= 5:
		m := map[string]any{}
		for range rng.IntN(6) {
			m[randomString(rng)] = randomValue(rng, depth+1)
		}
		return m
	default:
		a := make([]any, rng.IntN(5))
		for i := range a {
			a[i] = randomValue(rng, depth+1)
		}
		return a
	}
}

func randomString(rng *rand.Rand) string {
	alphabet := []rune{'a', 'B', '"', '\\', '\n', 0x01, 0x7f, 'é', '€', 0xfb33, 0x1f600, 0xe000, 0xffff, 0x10000, '<', 0x2028}
	r := make([]rune, rng.IntN(6))
	for i := range r {
		r[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(r)
}

func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{`{"b":[1,2.50,"x"],"a":null}`, `"\ud83d\ude00"`, `1e21`, `{"a":{"c":1,"b":2}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		want, wantErr := referenceCanonicalize(doc)
		got, err := jcs.Canonicalize(doc)
		if (wantErr != nil) != (err != nil) {
			t.Fatalf("%q: reference error %v, ours %v", doc, wantErr, err)
		}
		if err == nil && !bytes.Equal(want, got) {
			t.Fatalf("%q: reference %q, ours %q", doc, want, got)
		}
	})
}

func BenchmarkCanonicalize(b *testing.B) {
	doc, err := os.ReadFile("../../tools/recorded/testdata/usgs_10_features.json")
	require.NoError(b, err)
	b.Run("jcs", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := jcs.Canonicalize(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := referenceCanonicalize(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCanonicalizeOutput canonicalizes what the gateway hashes on
// every earthquake-search call: the tool's output for the recorded body.
func BenchmarkCanonicalizeOutput(b *testing.B) {
	doc, err := os.ReadFile("../../tools/recorded/testdata/usgs_10_features.json")
	require.NoError(b, err)
	out, err := tools.EarthquakeSearch().Normalize(registry.UpstreamResponse{StatusCode: 200, Body: doc})
	require.NoError(b, err)
	output, err := json.Marshal(out)
	require.NoError(b, err)
	b.SetBytes(int64(len(output)))
	b.ReportAllocs()
	for range b.N {
		if _, err := jcs.Canonicalize(output); err != nil {
			b.Fatal(err)
		}
	}
}
