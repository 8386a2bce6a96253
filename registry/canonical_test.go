package registry_test

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/toolgate/toolgate/registry"
)

func canon(t *testing.T, doc string) string {
	t.Helper()
	out, err := registry.Canonicalize([]byte(doc))
	require.NoError(t, err, "canonicalize %q", doc)
	return string(out)
}

// The example of RFC 8785 section 3.2.3: members sort by UTF-16 code units,
// so the emoji (a surrogate pair starting 0xD83D) sorts before U+FB33 even
// though its code point is larger.
func TestCanonicalizeSortsKeysByUTF16CodeUnits(t *testing.T) {
	t.Parallel()
	in := `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`
	want := "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\"," +
		"\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\"," +
		"\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"
	assert.Equal(t, want, canon(t, in))
}

// The complete example of RFC 8785 section 3.2.4.
func TestCanonicalizeRFC8785Example(t *testing.T) {
	t.Parallel()
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],` +
		`"string":"€$\u000f\nA'B\"\\\\\"/"}`
	assert.Equal(t, want, canon(t, in))
}

func TestCanonicalizeNumbers(t *testing.T) {
	t.Parallel()
	// Expected values checked against ECMAScript's Number.prototype.toString.
	cases := []struct{ in, want string }{
		{"0", "0"},
		{"-0", "0"},
		{"0.0", "0"},
		{"-0.0e5", "0"},
		{"1", "1"},
		{"-1.5", "-1.5"},
		{"100", "100"},
		{"1E2", "100"},
		{"4.50", "4.5"},
		{"2e-3", "0.002"},
		{"0.1", "0.1"},
		{"1e20", "100000000000000000000"},
		{"1e21", "1e+21"},
		{"1e30", "1e+30"},
		{"123456789012345680000", "123456789012345680000"},
		{"1e-6", "0.000001"},
		{"0.000001", "0.000001"},
		{"0.000001234", "0.000001234"},
		{"12e-7", "0.0000012"},
		{"1e-7", "1e-7"},
		{"0.0000001", "1e-7"},
		{"-1e-7", "-1e-7"},
		{"1e-27", "1e-27"},
		{"5e-324", "5e-324"},
		{"1.7976931348623157e308", "1.7976931348623157e+308"},
		{"333333333.33333329", "333333333.3333333"},
		{"9007199254740993", "9007199254740992"}, // nearest double
		{"1e-400", "0"},                          // underflows to zero, still a double
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.want, canon(t, c.in))
			assert.Equal(t, "["+c.want+"]", canon(t, "["+c.in+"]"))
		})
	}
}

// The IEEE 754 test vectors of RFC 8785 appendix B, given as bit patterns so
// the input is exactly the double the RFC names.
func TestCanonicalizeNumbersRFC8785AppendixB(t *testing.T) {
	t.Parallel()
	cases := []struct{ bits, want string }{
		{"0000000000000000", "0"},
		{"8000000000000000", "0"},
		{"0000000000000001", "5e-324"},
		{"8000000000000001", "-5e-324"},
		{"7fefffffffffffff", "1.7976931348623157e+308"},
		{"ffefffffffffffff", "-1.7976931348623157e+308"},
		{"4340000000000000", "9007199254740992"},
		{"c340000000000000", "-9007199254740992"},
		{"4430000000000000", "295147905179352830000"},
		{"44b52d02c7e14af5", "9.999999999999997e+22"},
		{"44b52d02c7e14af6", "1e+23"},
		{"44b52d02c7e14af7", "1.0000000000000001e+23"},
		{"444b1ae4d6e2ef4e", "999999999999999700000"},
		{"444b1ae4d6e2ef4f", "999999999999999900000"},
		{"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
		{"3eb0c6f7a0b5ed8d", "0.000001"},
		{"41b3de4355555553", "333333333.3333332"},
		{"41b3de4355555554", "333333333.33333325"},
		{"41b3de4355555555", "333333333.3333333"},
		{"41b3de4355555556", "333333333.3333334"},
		{"41b3de4355555557", "333333333.33333343"},
		{"becbf647612f3696", "-0.0000033333333333333333"},
		{"43143ff3c1cb0959", "1424953923781206.2"},
	}
	for _, c := range cases {
		t.Run(c.bits, func(t *testing.T) {
			t.Parallel()
			raw, err := hex.DecodeString(c.bits)
			require.NoError(t, err)
			f := math.Float64frombits(binary.BigEndian.Uint64(raw))
			// Go's shortest round-trip text denotes exactly this double.
			assert.Equal(t, c.want, canon(t, strconv.FormatFloat(f, 'g', -1, 64)))
		})
	}
}

func TestCanonicalizeStrings(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"short escapes", `"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
		{"other controls as lowercase \\u00xx", `"\u0000\u0001\u000B\u001F"`, `"\u0000\u0001\u000b\u001f"`},
		{"quote and backslash", `"\"\\"`, `"\"\\"`},
		{"solidus not escaped", `"a\/b/c"`, `"a/b/c"`},
		{"html characters not escaped", `"\u003cb\u003e & <i>"`, `"<b> & <i>"`},
		{"DEL kept", `"\u007f"`, "\"\x7f\""},
		{"non-ASCII kept as UTF-8", `"\u00e9t\u00E9 é"`, `"été é"`},
		{"line separators kept", `"\u2028\u2029"`, "\"\u2028\u2029\""},
		{"surrogate pair decoded", `"\ud83d\ude00"`, `"😀"`},
		{"keys escaped the same way", `{"a\u000ab":1}`, `{"a\nb":1}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.want, canon(t, c.in))
		})
	}
}

func TestCanonicalizeStructure(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"white space removed", " {\n\t\"b\" : [ 1 , 2 ] ,\r\n \"a\" : { } } ", `{"a":{},"b":[1,2]}`},
		{"nested objects sorted at every level", `{"z":{"y":1,"x":[{"b":true,"a":null}]},"a":[]}`,
			`{"a":[],"z":{"x":[{"a":null,"b":true}],"y":1}}`},
		{"arrays keep their order", `[3, 1, [2, [], {}], "a"]`, `[3,1,[2,[],{}],"a"]`},
		{"literals", `[true,false,null]`, `[true,false,null]`},
		{"scalar document", ` "x" `, `"x"`},
		{"keys sort by code unit, upper case first", `{"b":1,"B":2,"a":3,"aa":4,"A":5}`, `{"A":5,"B":2,"a":3,"aa":4,"b":1}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.want, canon(t, c.in))
		})
	}
}

func TestCanonicalizeSameMeaningSameBytes(t *testing.T) {
	t.Parallel()
	a := `{"name":"echo","limits":{"max":10,"min":1.0},"tags":["x","y"],"s":"\u00e9"}`
	b := "{\n  \"tags\" : [ \"x\", \"y\" ],\n  \"s\": \"é\",\n  \"limits\": { \"min\": 1, \"max\": 1e1 },\n  \"name\": \"\\u0065cho\"\n}"
	assert.Equal(t, canon(t, a), canon(t, b))
	// Canonical output is a fixed point.
	assert.Equal(t, canon(t, a), canon(t, canon(t, a)))
	// And a different meaning gives different bytes.
	assert.NotEqual(t, canon(t, a), canon(t, strings.Replace(a, `"max":10`, `"max":11`, 1)))
}

func nested(n int, inner string) string {
	return strings.Repeat("[", n) + inner + strings.Repeat("]", n)
}

func TestCanonicalizeNestingLimit(t *testing.T) {
	t.Parallel()
	for _, inner := range []string{"", "0"} {
		out, err := registry.Canonicalize([]byte(nested(512, inner)))
		require.NoError(t, err, "512 levels with %q inside", inner)
		assert.Equal(t, nested(512, inner), string(out))

		_, err = registry.Canonicalize([]byte(nested(513, inner)))
		assert.ErrorIs(t, err, registry.ErrNotCanonicalizable, "513 levels with %q inside", inner)
	}
	// Far deeper than the limit fails fast instead of exhausting the stack.
	deep := strings.Repeat(`{"a":`, 200000) + "1" + strings.Repeat("}", 200000)
	_, err := registry.Canonicalize([]byte(deep))
	assert.ErrorIs(t, err, registry.ErrNotCanonicalizable)
}

func TestCanonicalizeRejects(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in string }{
		{"empty", ""},
		{"only white space", "  \n"},
		{"unterminated object", `{"a":1`},
		{"unterminated string", `"abc`},
		{"trailing comma", `[1,]`},
		{"missing value", `{"a"}`},
		{"single quotes", `{'a':1}`},
		{"trailing data", `{"a":1}x`},
		{"second document", `{} {}`},
		{"two numbers", `1 2`},
		{"duplicate key", `{"a":1,"b":2,"a":3}`},
		{"duplicate key once unescaped", `{"a":1,"\u0061":2}`},
		{"nested duplicate key", `{"x":[{"k":1,"k":1}]}`},
		{"invalid UTF-8 in string", "\"a\xffb\""},
		{"invalid UTF-8 in key", "{\"\xc3\x28\":1}"},
		{"number beyond float64", `1e400`},
		{"negative number beyond float64", `[-1e400]`},
		{"NaN", `NaN`},
		{"Infinity", `Infinity`},
		{"leading zero", `01`},
		{"raw control character in string", "\"a\x01b\""},
		{"bad escape", `"\x41"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			out, err := registry.Canonicalize([]byte(c.in))
			require.Error(t, err, "got %q", out)
			assert.True(t, errors.Is(err, registry.ErrNotCanonicalizable), "error %v does not wrap ErrNotCanonicalizable", err)
			assert.Nil(t, out)
		})
	}
}
