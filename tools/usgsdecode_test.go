package tools

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/registry"
)

// The scanner's contract (usgsdecode.go): for any body it accepts,
// decodeBody succeeds and decodes the same usgsCollection. Declining is
// always allowed; these tests also check it does not decline the answers
// USGS sends, or it would be no faster.

// scannerDisagrees runs the scanner and encoding/json on body and describes
// how they disagree, if they do. accepted reports whether the scanner took
// the body.
func scannerDisagrees(body []byte) (accepted bool, problem string) {
	// The scanner reads a copy that is then wiped, so a string aliasing the
	// body would show up as a difference.
	scanned := bytes.Clone(body)
	fast, ok := scanUSGSCollection(scanned)
	clear(scanned)
	if !ok {
		if !reflect.DeepEqual(fast, usgsCollection{}) {
			return false, "declined, but returned a partial result"
		}
		return false, ""
	}
	var slow usgsCollection
	if err := decodeBody(earthquakeProvider, body, &slow); err != nil {
		return true, fmt.Sprintf("scanner accepted a body encoding/json refuses: %v", err)
	}
	if !reflect.DeepEqual(fast, slow) {
		return true, fmt.Sprintf("scanner decoded %s, encoding/json %s", dumpUSGS(fast), dumpUSGS(slow))
	}
	// DeepEqual takes -0 for 0; the encodings do not.
	if f, s := dumpUSGS(fast), dumpUSGS(slow); f != s {
		return true, fmt.Sprintf("scanner decoded %s, encoding/json %s", f, s)
	}
	return true, ""
}

func dumpUSGS(c usgsCollection) string {
	b, err := json.Marshal(c)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// recordedUSGSBodies returns every recorded USGS body, by file name.
func recordedUSGSBodies(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("recorded", "testdata", "usgs_*"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no recorded USGS bodies: %v", err)
	}
	bodies := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(p, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		}
		bodies[filepath.Base(p)] = b
	}
	return bodies
}

func TestUSGSScannerAcceptsRecordedBodies(t *testing.T) {
	t.Parallel()
	for name, body := range recordedUSGSBodies(t) {
		accepted, problem := scannerDisagrees(body)
		if problem != "" {
			t.Errorf("%s: %s", name, problem)
		}
		// Every JSON answer USGS gave is taken; its text/plain error page is not.
		if want := strings.Contains(name, ".json"); accepted != want {
			t.Errorf("%s: accepted %v, want %v", name, accepted, want)
		}
	}
}

func TestUSGSScannerCases(t *testing.T) {
	t.Parallel()
	ten := string(recordedUSGSBodies(t)["usgs_10_features.json"])
	edit := func(old, new string) string {
		if !strings.Contains(ten, old) {
			t.Fatalf("the recording has no %q", old)
		}
		return strings.Replace(ten, old, new, 1)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, []byte(ten), "", "\t"); err != nil {
		t.Fatal(err)
	}
	const firstTime = `"time":1727651387342,`
	const firstMag = `"mag":4.6,`
	const firstPlace = `"place":"98 km SSE of Tual, Indonesia"`
	const firstCoords = `"coordinates":[133.0489,-6.4917,35]`
	cases := []struct {
		name     string
		body     string
		accepted bool
	}{
		{"as recorded", ten, true},
		{"indented, CRLF", strings.ReplaceAll(indented.String(), "\n", "\r\n"), true},
		{"whitespace around the document", " \t\r\n" + ten + "\n\n ", true},
		{"time written as a float", edit(firstTime, `"time":1727651387342.0,`), true},
		{"time in exponent form", edit(firstTime, `"time":1.727651387342E+12,`), true},
		{"time above 2^53 written as an integer", edit(firstTime, `"time":9007199254740993,`), true},
		{"time above 2^53 written as a float", edit(firstTime, `"time":9007199254740994.0,`), false},
		{"time beyond int64", edit(firstTime, `"time":9223372036854775808,`), false},
		{"time negative zero", edit(firstTime, `"time":-0,`), true},
		{"fractional time", edit(firstTime, `"time":1727651387342.5,`), false},
		{"time as text", edit(firstTime, `"time":"1727651387342",`), false},
		{"time null", edit(firstTime, `"time":null,`), true},
		{"mag out of range", edit(firstMag, `"mag":1e400,`), false},
		{"mag underflows to zero", edit(firstMag, `"mag":1e-400,`), true},
		{"mag as text", edit(firstMag, `"mag":"4.6",`), false},
		{"mag true", edit(firstMag, `"mag":true,`), false},
		{"mag with a leading zero", edit(firstMag, `"mag":04.6,`), false},
		{"mag without digits after the point", edit(firstMag, `"mag":4.,`), false},
		{"coordinate negative zero", edit(firstCoords, `"coordinates":[-0,-0.0,35]`), true},
		{"coordinates empty", edit(firstCoords, `"coordinates":[]`), true},
		{"five coordinates", edit(firstCoords, `"coordinates":[1,2,3,4,5]`), true},
		{"coordinates null", edit(firstCoords, `"coordinates":null`), true},
		{"a null coordinate", edit(firstCoords, `"coordinates":[133.0489,null,35]`), false},
		{"a nested coordinate", edit(firstCoords, `"coordinates":[133.0489,[1],35]`), false},
		{"geometry null", edit(`"geometry":{"type":"Point",`+firstCoords+`}`, `"geometry":null`), true},
		{"geometry empty", edit(`"geometry":{"type":"Point",`+firstCoords+`}`, `"geometry":{}`), true},
		{"geometry an array", edit(`"geometry":{"type":"Point",`+firstCoords+`}`, `"geometry":[]`), false},
		{"properties null", strings.Replace(ten, `"properties":{`, `"properties":null,"dropped":{`, 1), true},
		{"metadata null", edit(`"metadata":{`, `"metadata":null,"dropped":{`), true},
		{"features empty", `{"type":"FeatureCollection","features":[]}`, true},
		{"features null", `{"type":"FeatureCollection","features":null}`, true},
		{"a null feature", `{"type":"FeatureCollection","features":[null]}`, false},
		{"features an object", `{"type":"FeatureCollection","features":{}}`, false},
		{"no keys at all", `{}`, true},
		{"place null", edit(firstPlace, `"place":null`), true},
		{"place with non-ASCII text", edit(firstPlace, `"place":"24 km WNW of Guánica, Puerto Rico"`), true},
		{"place with an escape", edit(firstPlace, `"place":"98 km SSE of Tual\u002c Indonesia"`), false},
		{"place with invalid UTF-8", edit(firstPlace, "\"place\":\"98 km \xff of Tual\""), false},
		{"place with a surrogate in UTF-8", edit(firstPlace, "\"place\":\"98 km \xed\xa0\x80 of Tual\""), false},
		{"place with U+FFFD", edit(firstPlace, "\"place\":\"98 km \xef\xbf\xbd of Tual\""), true},
		{"place with a raw tab", edit(firstPlace, "\"place\":\"98 km\tSSE\""), false},
		{"escapes in a dropped string", edit(`"magType":"mb"`, `"magType":"m\u0062\n\"\\\/\ud800\uDC00"`), true},
		{"a bad escape in a dropped string", edit(`"magType":"mb"`, `"magType":"m\x"`), false},
		{"invalid UTF-8 in a dropped string", edit(`"magType":"mb"`, "\"magType\":\"m\xc3\""), false},
		{"unknown nested values", edit(firstMag, `"extra":{"a":[1,{"b":null,"c":[true,false,{}]}],"d":-1.5e-3,"Mag":"x","é":[]},`+firstMag), true},
		// The properties object is four deep; usgsMaxDepth is 64.
		{"nested 64 deep", edit(firstMag, `"extra":`+strings.Repeat("[", 60)+strings.Repeat("]", 60)+`,`+firstMag), true},
		{"nested 65 deep", edit(firstMag, `"extra":`+strings.Repeat("[", 61)+strings.Repeat("]", 61)+`,`+firstMag), false},
		{"unknown value deeper than encoding/json allows", edit(firstMag, `"extra":`+strings.Repeat("[", 10001)+strings.Repeat("]", 10001)+`,`+firstMag), false},
		{"case-changed key", edit(firstMag, `"Mag":4.6,`), false},
		{"case-changed key elsewhere", edit(`"features":`, `"FEATURES":`), false},
		{"key that folds to features", edit(`"features":`, `"featureſ":`), false},
		{"key like time but for a dotted capital I", edit(firstTime, `"tİme":1727651387342,`), false},
		{"key like title but for a dotless i", edit(`"title":"USGS Earthquakes"`, `"tıtle":"USGS Earthquakes"`), false},
		{"non-ASCII key in a kept object", edit(firstMag, `"é":1,`+firstMag), false},
		{"escaped key", edit(firstTime, `"\u0074ime":1727651387342,`), false},
		{"escaped unknown key in a kept object", edit(firstTime, `"\u0074imes":1,`+firstTime), false},
		{"duplicate key", edit(firstMag, firstMag+firstMag), false},
		{"duplicate dropped key", edit(`"magType":"mb"`, `"magType":"mb","magType":"ml"`), true},
		{"trailing comma", edit(`"id":"us7000nhq8"}`, `"id":"us7000nhq8",}`), false},
		{"missing comma", edit(`"id":"us7000nhq8"}`, `"id":"us7000nhq8" "x":1}`), false},
		{"literal with a tail", edit(`"tz":null`, `"tz":nullx`), false},
		{"literal cut short", edit(`"tz":null`, `"tz":nul`), false},
		{"a second document", ten + `{}`, false},
		{"trailing garbage", ten + " x", false},
		{"trailing NUL", ten + "\x00", false},
		{"cut short", strings.TrimSpace(ten)[:len(strings.TrimSpace(ten))-1], false},
		{"byte order mark", "\xef\xbb\xbf" + ten, false},
		{"non-breaking space before", "\u00a0" + ten, false},
		{"top-level null", `null`, false},
		{"top-level array", `[]`, false},
		{"empty", ``, false},
		{"whitespace only", " \n", false},
	}
	for _, tc := range cases {
		accepted, problem := scannerDisagrees([]byte(tc.body))
		if problem != "" {
			t.Errorf("%s: %s", tc.name, problem)
		}
		if accepted != tc.accepted {
			t.Errorf("%s: accepted %v, want %v", tc.name, accepted, tc.accepted)
		}
	}
}

// TestUSGSScannerAgreesWithEncodingJSON mutates every recorded body, and
// answers cut from the recorded catalog, in ways the scanner must either
// decline or decode exactly as encoding/json does.
func TestUSGSScannerAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	// Variants of each recorded answer, and of each answer cut from the
	// catalog (there are about a hundred of those).
	answerVariants, catalogVariants := 1000, 30
	if testing.Short() {
		answerVariants, catalogVariants = 100, 5
	}
	type base struct {
		doc      *jsonValue
		variants int
	}
	var bases []base
	bodies := recordedUSGSBodies(t)
	for _, name := range slices.Sorted(maps.Keys(bodies)) { // in order, so each run makes the same variants
		v, err := parseJSONValue(bodies[name])
		if err != nil {
			continue // usgs_400.txt
		}
		if strings.Contains(name, "catalog") {
			for _, answer := range catalogAnswers(v, rng) {
				bases = append(bases, base{answer, catalogVariants})
			}
			continue
		}
		bases = append(bases, base{v, answerVariants})
	}

	var accepted, total int
	check := func(body []byte) {
		ok, problem := scannerDisagrees(body)
		if problem != "" {
			t.Fatalf("%s\nbody: %q", problem, body)
		}
		total++
		if ok {
			accepted++
		}
	}
	for _, base := range bases {
		for range base.variants {
			v := base.doc.clone()
			for range 1 + rng.IntN(3) {
				mutateJSONValue(v, rng)
			}
			doc := v.encode(rng)
			check(doc)
			if rng.IntN(4) == 0 {
				check(append(doc, trailers[rng.IntN(len(trailers))]...))
			}
			check(mutateBytes(doc, rng))
		}
	}
	// Most structural mutations keep the body one encoding/json accepts,
	// and many of those one the scanner takes; if it took few, this test
	// would be checking little.
	t.Logf("%d bodies, %d accepted by the scanner", total, accepted)
	if accepted < total/10 {
		t.Errorf("the scanner accepted only %d of %d bodies", accepted, total)
	}
}

// FuzzUSGSDecode checks the scanner's contract on arbitrary bodies. The
// recorded catalog (300 KB) is seeded cut into answers of a few features,
// as whole it would leave the fuzzer spending its time minimizing it.
func FuzzUSGSDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	bodies := recordedUSGSBodies(f)
	for _, name := range slices.Sorted(maps.Keys(bodies)) {
		body := bodies[name]
		if !strings.Contains(name, "catalog") {
			f.Add(body)
			continue
		}
		catalog, err := parseJSONValue(body)
		if err != nil {
			f.Fatal(err)
		}
		for _, answer := range catalogAnswers(catalog, rng) {
			f.Add(answer.encode(rng))
		}
	}
	f.Add([]byte(`{"type":"FeatureCollection","features":[{"id":"x","geometry":{"type":"Point","coordinates":[1,-0,1e3]},` +
		`"properties":{"mag":null,"url":"u","time":1.5e3,"place":"Guánica","extra":[{"a":"\u00e9\"\\"},true,false,null]}}]}`))
	f.Add([]byte(`{"features":[],"Type":"x","featureſ":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, problem := scannerDisagrees(body); problem != "" {
			t.Fatal(problem)
		}
	})
}

// BenchmarkNormalizeEarthquakes puts the normalizer with the scanner beside
// the same normalizer decoding with encoding/json alone, on the recorded
// ten-event answer.
func BenchmarkNormalizeEarthquakes(b *testing.B) {
	body := recordedUSGSBodies(b)["usgs_10_features.json"]
	resp := registry.UpstreamResponse{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
	for _, bench := range []struct {
		name      string
		normalize func(registry.UpstreamResponse) (any, error)
	}{
		{"encoding-json", func(resp registry.UpstreamResponse) (any, error) {
			var raw usgsCollection
			if err := decodeBody(earthquakeProvider, resp.Body, &raw); err != nil {
				return nil, err
			}
			return earthquakesFrom(raw, resp.StatusCode)
		}},
		{"scanner", normalizeEarthquakes},
	} {
		b.Run(bench.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bench.normalize(resp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// jsonValue is a JSON document that keeps what a mutation needs and
// encoding/json's own types lose: member order, duplicate keys, and the
// exact text of keys, strings and numbers.
type jsonValue struct {
	raw     string // the text of a string, number or literal, as written
	members []jsonMember
	elems   []*jsonValue
	object  bool // with members
	array   bool // with elems
}

type jsonMember struct {
	key   string // as written, quotes included
	value *jsonValue
}

func parseJSONValue(doc []byte) (*jsonValue, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	v, err := readJSONValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the document")
	}
	return v, nil
}

func readJSONValue(dec *json.Decoder) (*jsonValue, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		v := &jsonValue{object: tok == '{', array: tok == '['}
		for dec.More() {
			var key string
			if v.object {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key = quoteJSON(k.(string))
			}
			elem, err := readJSONValue(dec)
			if err != nil {
				return nil, err
			}
			if v.object {
				v.members = append(v.members, jsonMember{key, elem})
			} else {
				v.elems = append(v.elems, elem)
			}
		}
		_, err := dec.Token() // the closing bracket
		return v, err
	case string:
		return &jsonValue{raw: quoteJSON(tok)}, nil
	case json.Number:
		return &jsonValue{raw: tok.String()}, nil
	case bool:
		return &jsonValue{raw: fmt.Sprint(tok)}, nil
	default:
		return &jsonValue{raw: "null"}, nil
	}
}

// quoteJSON writes s as a JSON string, escaping only what JSON requires,
// as USGS does.
func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func (v *jsonValue) clone() *jsonValue {
	c := *v
	c.members = make([]jsonMember, len(v.members))
	for i, m := range v.members {
		c.members[i] = jsonMember{m.key, m.value.clone()}
	}
	c.elems = make([]*jsonValue, len(v.elems))
	for i, e := range v.elems {
		c.elems[i] = e.clone()
	}
	return &c
}

// nodes lists v and every value inside it.
func (v *jsonValue) nodes() []*jsonValue {
	all := []*jsonValue{v}
	for _, m := range v.members {
		all = append(all, m.value.nodes()...)
	}
	for _, e := range v.elems {
		all = append(all, e.nodes()...)
	}
	return all
}

// encode writes v compactly, indented, or with random whitespace between
// tokens.
func (v *jsonValue) encode(rng *rand.Rand) []byte {
	var buf bytes.Buffer
	space := func() {}
	switch rng.IntN(4) {
	case 0:
		space = func() { buf.WriteString("\n  ") }
	case 1:
		space = func() {
			for range rng.IntN(3) {
				buf.WriteByte(" \t\r\n"[rng.IntN(4)])
			}
		}
	}
	var write func(*jsonValue)
	write = func(v *jsonValue) {
		switch {
		case v.object:
			buf.WriteByte('{')
			for i, m := range v.members {
				if i > 0 {
					buf.WriteByte(',')
				}
				space()
				buf.WriteString(m.key)
				space()
				buf.WriteByte(':')
				space()
				write(m.value)
			}
			space()
			buf.WriteByte('}')
		case v.array:
			buf.WriteByte('[')
			for i, e := range v.elems {
				if i > 0 {
					buf.WriteByte(',')
				}
				space()
				write(e)
			}
			space()
			buf.WriteByte(']')
		default:
			buf.WriteString(v.raw)
		}
	}
	write(v)
	return buf.Bytes()
}

// catalogAnswers cuts the recorded catalog into answers of a few features
// each, so every recorded event is mutated without decoding the whole
// catalog for each variant.
func catalogAnswers(catalog *jsonValue, rng *rand.Rand) []*jsonValue {
	var features []*jsonValue
	var at int
	for i, m := range catalog.members {
		if m.key == `"features"` {
			features, at = m.value.elems, i
		}
	}
	var answers []*jsonValue
	for len(features) > 0 {
		n := min(1+rng.IntN(8), len(features))
		answer := &jsonValue{object: true, members: slices.Clone(catalog.members)}
		answer.members[at].value = &jsonValue{array: true, elems: features[:n]}
		answers = append(answers, answer.clone())
		features = features[n:]
	}
	return answers
}

var (
	// Keys that name fields, nearly name them, or are nothing to the tool.
	sampleKeys = []string{
		`"type"`, `"metadata"`, `"features"`, `"title"`, `"id"`, `"geometry"`, `"properties"`, `"coordinates"`,
		`"mag"`, `"url"`, `"time"`, `"place"`, `"Type"`, `"TYPE"`, `"ID"`, `"iD"`, `"Features"`, `"featureſ"`,
		`"Title"`, `"tıtle"`, `"tİme"`, `"MAG"`, `"Url"`, `"PLACE"`, `"Coordinates"`, `"GEOMETRY"`, `"Properties"`,
		`"\u0074ype"`, `"mag\u0000"`, `"types"`, `"extra"`, `""`, `"é"`, `"K"`, "\"\xff\"", `"tz"`, `"detail"`,
	}
	// Numbers at the edges of float64, int64, 2^53 and JSON's grammar.
	sampleNumbers = []string{
		"0", "-0", "0.0", "-0.0", "1", "-1", "4.6", "1727651387342", "1727651387342.0", "1.727651387342e12",
		"1.727651387342E+12", "17276513873420e-1", "1e400", "-1e400", "1e-400", "9007199254740992", "9007199254740993",
		"9007199254740993.0", "-9007199254740993.0", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "0.5", "1E2", "1e+2", "2.5e-3", "123456789012345678901234567890", "4.9e-324",
		"1.7976931348623157e308", "1.7976931348623159e308", "01", "1.", ".5", "+1", "1e", "-", "0x10", "1_000",
	}
	// Strings, as written: plain, escaped, and not valid UTF-8.
	sampleStrings = []string{
		`""`, `"Point"`, `"FeatureCollection"`, `"USGS Earthquakes"`, `"x"`, `"Guánica"`, `"Gu\u00e1nica"`,
		`"a\"b"`, `"\/"`, `"\ud83d\ude00"`, `"\ud800"`, `"\uDC00x"`, `"tab\there"`, `"\u0000"`, "\"\xff\"",
		"\"\xed\xa0\x80\"", `"\uFFFD"`, "\"\xef\xbf\xbd\"", "\"\t\"", `"\x"`, `"\u12"`, `"unterminated`,
	}
	sampleLiterals = []string{"null", "true", "false", "nul", "True", "nullnull"}
	// What may follow the document.
	trailers = []string{"", " ", "\r\n\t ", "x", "{}", "null", "]", "}", ",", "\x00", "\u00a0"}
)

// randomValue is a value of any kind, nested up to depth levels, often
// malformed.
func randomValue(rng *rand.Rand, depth int) *jsonValue {
	switch n := rng.IntN(12); {
	case n == 0 && depth > 0:
		v := &jsonValue{object: true}
		for range rng.IntN(4) {
			v.members = append(v.members, jsonMember{sampleKeys[rng.IntN(len(sampleKeys))], randomValue(rng, depth-1)})
		}
		return v
	case n == 1 && depth > 0:
		v := &jsonValue{array: true}
		for range rng.IntN(4) {
			v.elems = append(v.elems, randomValue(rng, depth-1))
		}
		return v
	case n == 2:
		d := []int{10, 60, 62, 63, 64, 70, 200}[rng.IntN(7)]
		if rng.IntN(2) == 0 {
			return &jsonValue{raw: strings.Repeat("[", d) + strings.Repeat("]", d)}
		}
		return &jsonValue{raw: strings.Repeat(`{"a":`, d) + "1" + strings.Repeat("}", d)}
	case n < 6:
		return &jsonValue{raw: sampleStrings[rng.IntN(len(sampleStrings))]}
	case n < 10:
		return &jsonValue{raw: sampleNumbers[rng.IntN(len(sampleNumbers))]}
	default:
		return &jsonValue{raw: sampleLiterals[rng.IntN(len(sampleLiterals))]}
	}
}

// mutateJSONValue makes one random change somewhere in v.
func mutateJSONValue(v *jsonValue, rng *rand.Rand) {
	all := v.nodes()
	pick := func(from []*jsonValue) *jsonValue { return from[rng.IntN(len(from))] }
	var objects, arrays, scalars []*jsonValue
	for _, n := range all {
		switch {
		case n.object:
			objects = append(objects, n)
		case n.array:
			arrays = append(arrays, n)
		default:
			scalars = append(scalars, n)
		}
	}
	if len(objects) == 0 || len(scalars) == 0 {
		*pick(all) = *randomValue(rng, 3)
		return
	}
	member := func() *jsonMember {
		for range 10 {
			if o := pick(objects); len(o.members) > 0 {
				return &o.members[rng.IntN(len(o.members))]
			}
		}
		return nil
	}
	switch rng.IntN(12) {
	case 0: // reorder an object's members
		o := pick(objects)
		rng.Shuffle(len(o.members), func(i, j int) { o.members[i], o.members[j] = o.members[j], o.members[i] })
	case 1: // add a member
		o := pick(objects)
		at := rng.IntN(len(o.members) + 1)
		m := jsonMember{sampleKeys[rng.IntN(len(sampleKeys))], randomValue(rng, 3)}
		o.members = append(o.members[:at], append([]jsonMember{m}, o.members[at:]...)...)
	case 2: // repeat a member, with its value or another
		if m := member(); m != nil {
			o := pick(objects)
			repeat := jsonMember{m.key, m.value.clone()}
			if rng.IntN(2) == 0 {
				repeat.value = randomValue(rng, 2)
			}
			o.members = append(o.members, repeat)
		}
	case 3: // drop a member
		o := pick(objects)
		if len(o.members) > 0 {
			i := rng.IntN(len(o.members))
			o.members = append(o.members[:i], o.members[i+1:]...)
		}
	case 4: // change a key's case, or fold a letter to a non-ASCII one
		if m := member(); m != nil {
			m.key = recase(m.key, rng)
		}
	case 5: // escape one character of a key or a string
		if rng.IntN(2) == 0 {
			if m := member(); m != nil {
				m.key = escapeOne(m.key, rng)
			}
		} else if s := pick(scalars); strings.HasPrefix(s.raw, `"`) {
			s.raw = escapeOne(s.raw, rng)
		}
	case 6: // put invalid UTF-8 inside a key or a string
		bad := []string{"\xff", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf"}[rng.IntN(5)]
		if s := pick(scalars); strings.HasPrefix(s.raw, `"`) && len(s.raw) >= 2 {
			at := 1 + rng.IntN(len(s.raw)-1)
			s.raw = s.raw[:at] + bad + s.raw[at:]
		} else if m := member(); m != nil {
			m.key = m.key[:1] + bad + m.key[1:]
		}
	case 7: // another number where there is one
		s := pick(scalars)
		if s.raw != "" && (s.raw[0] == '-' || '0' <= s.raw[0] && s.raw[0] <= '9') {
			s.raw = sampleNumbers[rng.IntN(len(sampleNumbers))]
		}
	case 8: // null, or a value of any kind, for a field's value
		if m := member(); m != nil {
			if rng.IntN(2) == 0 {
				m.value = &jsonValue{raw: "null"}
			} else {
				m.value = randomValue(rng, 2)
			}
		}
	case 9: // grow or shrink an array, or null one of its elements
		if len(arrays) == 0 {
			return
		}
		a := pick(arrays)
		switch {
		case len(a.elems) > 0 && rng.IntN(3) == 0:
			a.elems = a.elems[:rng.IntN(len(a.elems))]
		case len(a.elems) > 0 && rng.IntN(2) == 0:
			a.elems[rng.IntN(len(a.elems))] = &jsonValue{raw: "null"}
		case len(a.elems) > 0:
			a.elems = append(a.elems, a.elems[rng.IntN(len(a.elems))].clone())
		default:
			a.elems = append(a.elems, randomValue(rng, 2))
		}
	case 10: // any value anywhere
		*pick(all) = *randomValue(rng, 3)
	case 11: // swap two values
		a, b := pick(all), pick(all)
		if a != v && b != v {
			*a, *b = *b.clone(), *a.clone()
		}
	}
}

// recase changes the case of one ASCII letter in a key, or swaps an s, k
// or i for a non-ASCII letter that folds to it (ſ, the Kelvin sign) or
// looks as if it might (İ, ı).
func recase(key string, rng *rand.Rand) string {
	b := []byte(key)
	i := rng.IntN(len(b))
	switch c := b[i]; {
	case c == 's' && rng.IntN(2) == 0:
		return key[:i] + "ſ" + key[i+1:]
	case c == 'k' && rng.IntN(2) == 0:
		return key[:i] + "\u212a" + key[i+1:]
	case c == 'i' && rng.IntN(2) == 0:
		return key[:i] + []string{"İ", "ı"}[rng.IntN(2)] + key[i+1:]
	case 'a' <= c && c <= 'z':
		b[i] -= 'a' - 'A'
	case 'A' <= c && c <= 'Z':
		b[i] += 'a' - 'A'
	}
	return string(b)
}

// escapeOne writes one printable ASCII character of a quoted string as a
// \u escape, or a slash as \/.
func escapeOne(quoted string, rng *rand.Rand) string {
	if len(quoted) < 3 {
		return quoted
	}
	i := 1 + rng.IntN(len(quoted)-2)
	c := quoted[i]
	switch {
	case c == '/':
		return quoted[:i] + `\/` + quoted[i+1:]
	case c == '\\' || c == '"' || c < 0x20 || c >= 0x80 || quoted[i-1] == '\\':
		return quoted
	}
	return quoted[:i] + fmt.Sprintf(`\u%04X`, c) + quoted[i+1:]
}

// mutateBytes makes a few random byte-level edits to a copy of doc.
func mutateBytes(doc []byte, rng *rand.Rand) []byte {
	const interesting = "{}[],:\"\\ \t\r\n0123456789.-+eEnulltrfa\x00\x1f\x7f\x80\xc3\xe2\xed\xef\xff"
	b := bytes.Clone(doc)
	for range 1 + rng.IntN(4) {
		if len(b) == 0 {
			return b
		}
		i := rng.IntN(len(b))
		switch rng.IntN(6) {
		case 0:
			b[i] = byte(rng.IntN(256))
		case 1:
			b[i] = interesting[rng.IntN(len(interesting))]
		case 2:
			b = append(b[:i], append([]byte{interesting[rng.IntN(len(interesting))]}, b[i:]...)...)
		case 3:
			b = append(b[:i], b[min(len(b), i+1+rng.IntN(8)):]...)
		case 4:
			j := min(len(b), i+1+rng.IntN(16))
			b = append(b[:j], append(bytes.Clone(b[i:j]), b[j:]...)...)
		case 5:
			b = b[:i]
		}
	}
	return b
}
