package tools

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Decoding the USGS answer with encoding/json is most of the CPU an
// earthquake-search call costs the gateway: a pass to validate the document,
// a second to decode it through reflection, and an allocation for every
// pointer in usgsCollection. scanUSGSCollection is a fast path for the
// answers USGS actually sends: one pass over the bytes by a small
// recursive-descent scanner that knows usgsCollection's shape, skips (but
// still checks) every value the tool drops, and allocates one block per
// feature rather than one object per field.
//
// Its contract is that it never disagrees with encoding/json. For any body
// it accepts, decodeBody would succeed and produce a usgsCollection that is
// deep-equal to the scanner's. Anything it is not sure about makes it
// decline, and decodeBody then decodes the body as it always has, with the
// same errors and edge cases. That covers:
//   - escapes in a key or in a string the tool keeps (USGS writes raw
//     UTF-8, so these do not come up);
//   - invalid UTF-8 anywhere, which encoding/json would replace in kept
//     strings;
//   - a key that matches a field only case-insensitively, or a non-ASCII
//     key in an object the tool keeps (encoding/json folds those to match
//     fields, with its own folding rules);
//   - a field given twice (encoding/json would merge the two);
//   - a number that encoding/json would refuse for its field;
//   - a value of the wrong type, and null where encoding/json would not
//     simply leave a pointer or slice nil;
//   - data after the document, and nesting deeper than usgsMaxDepth.
//
// TestUSGSScannerAgreesWithEncodingJSON and FuzzUSGSDecode check that
// contract.

// usgsMaxDepth bounds how deeply objects and arrays may nest before the
// scanner declines. USGS answers nest five deep; encoding/json's own limit
// (10000) is far above this, so a body the scanner declines for depth
// still gets encoding/json's verdict.
const usgsMaxDepth = 64

// The JSON names of each usgs* struct's fields, in the order the scanner
// checks them.
var (
	usgsCollectionFields = []string{"type", "metadata", "features"}
	usgsMetadataFields   = []string{"title"}
	usgsFeatureFields    = []string{"id", "geometry", "properties"}
	usgsGeometryFields   = []string{"type", "coordinates"}
	usgsPropertiesFields = []string{"mag", "url", "time", "place"}
)

// usgsCollectionStorage holds what a usgsCollection's pointers point at.
type usgsCollectionStorage struct {
	typ      string
	metadata usgsMetadata
	title    string
}

// usgsFeatureStorage holds what one usgsFeature's pointers point at, so a
// feature costs one allocation instead of one for each field.
type usgsFeatureStorage struct {
	geometry     usgsGeometry
	properties   usgsProperties
	id           string
	geometryType string
	url          string
	place        string
	mag          float64
	time         wholeNumber
	// coordinates backs geometry.Coordinates when there are at most three,
	// as in every point USGS sends.
	coordinates [3]float64
}

// scanUSGSCollection decodes body as decodeBody would decode it into a
// usgsCollection, or reports false (with a zero usgsCollection) when it
// declines; see above for when it does.
func scanUSGSCollection(body []byte) (usgsCollection, bool) {
	s := usgsScanner{buf: body}
	var c usgsCollection
	if !s.collection(&c) {
		return usgsCollection{}, false
	}
	// decodeBody allows only whitespace after the document.
	s.skipSpace()
	if s.pos != len(s.buf) {
		return usgsCollection{}, false
	}
	return c, true
}

// usgsScanner reads one JSON document. Every method returns false to
// decline, after which the scanner's state is of no further use.
type usgsScanner struct {
	buf   []byte
	pos   int
	depth int // objects and arrays open at pos
}

func (s *usgsScanner) collection(c *usgsCollection) bool {
	if s.peek() != '{' { // encoding/json ignores a top-level null, and refuses anything else
		return false
	}
	store := new(usgsCollectionStorage)
	return s.object(usgsCollectionFields, func(field string) bool {
		switch field {
		case "type":
			return s.stringField(&c.Type, &store.typ)
		case "metadata":
			if s.peek() == 'n' {
				return s.literal("null") // leaves Metadata nil, as encoding/json does
			}
			c.Metadata = &store.metadata
			return s.object(usgsMetadataFields, func(string) bool {
				return s.stringField(&store.metadata.Title, &store.title)
			})
		case "features":
			return s.features(&c.Features)
		}
		return false
	})
}

func (s *usgsScanner) features(dst *[]usgsFeature) bool {
	if s.peek() == 'n' {
		return s.literal("null") // leaves Features nil, as encoding/json does
	}
	// Never nil: encoding/json decodes [] as an empty, non-nil slice.
	features := make([]usgsFeature, 0, earthquakeDefaultLimit)
	ok := s.array(func() bool {
		// A null feature would decode as a zero usgsFeature; USGS never
		// sends one, so feature declines it.
		var f usgsFeature
		if !s.feature(&f) {
			return false
		}
		features = append(features, f)
		return true
	})
	if !ok {
		return false
	}
	*dst = features
	return true
}

func (s *usgsScanner) feature(f *usgsFeature) bool {
	if s.peek() != '{' {
		return false
	}
	store := new(usgsFeatureStorage)
	return s.object(usgsFeatureFields, func(field string) bool {
		switch field {
		case "id":
			return s.stringField(&f.ID, &store.id)
		case "geometry":
			if s.peek() == 'n' {
				return s.literal("null")
			}
			g := &store.geometry
			f.Geometry = g
			return s.object(usgsGeometryFields, func(field string) bool {
				if field == "type" {
					return s.stringField(&g.Type, &store.geometryType)
				}
				return s.coordinates(&g.Coordinates, &store.coordinates)
			})
		case "properties":
			if s.peek() == 'n' {
				return s.literal("null")
			}
			p := &store.properties
			f.Properties = p
			return s.object(usgsPropertiesFields, func(field string) bool {
				switch field {
				case "mag":
					return s.floatField(&p.Mag, &store.mag)
				case "url":
					return s.stringField(&p.URL, &store.url)
				case "time":
					return s.timeField(&p.Time, &store.time)
				case "place":
					return s.stringField(&p.Place, &store.place)
				}
				return false
			})
		}
		return false
	})
}

// stringField reads a string into *slot and points *dst at it; null leaves
// *dst nil, as encoding/json does for a pointer.
func (s *usgsScanner) stringField(dst **string, slot *string) bool {
	if s.peek() == 'n' {
		return s.literal("null")
	}
	b, ok := s.plainString()
	if !ok {
		return false
	}
	*slot = keptString(b)
	*dst = slot
	return true
}

// floatField reads a number into *slot and points *dst at it; null leaves
// *dst nil.
func (s *usgsScanner) floatField(dst **float64, slot *float64) bool {
	if s.peek() == 'n' {
		return s.literal("null")
	}
	f, ok := s.float()
	if !ok {
		return false
	}
	*slot = f
	*dst = slot
	return true
}

// timeField reads a number with wholeNumber's own UnmarshalJSON, which
// encoding/json calls with the number's text, so its rules are kept exactly;
// null leaves *dst nil (encoding/json does not call UnmarshalJSON for null
// into a nil pointer). A string, boolean, object or array would reach
// UnmarshalJSON too, and fail there; the scanner declines them instead.
func (s *usgsScanner) timeField(dst **wholeNumber, slot *wholeNumber) bool {
	if s.peek() == 'n' {
		return s.literal("null")
	}
	text, ok := s.number()
	if !ok || slot.UnmarshalJSON(text) != nil {
		return false
	}
	*dst = slot
	return true
}

// coordinates reads an array of numbers. Up to three go in small, the rest
// on the heap as append decides; the slice handed out has no spare
// capacity, so nobody appending to it can write into small.
func (s *usgsScanner) coordinates(dst *[]float64, small *[3]float64) bool {
	if s.peek() == 'n' {
		return s.literal("null")
	}
	coords := small[:0] // not nil: encoding/json decodes [] as an empty slice
	ok := s.array(func() bool {
		// A null element would leave a 0 in encoding/json; declined.
		f, ok := s.float()
		coords = append(coords, f)
		return ok
	})
	if !ok {
		return false
	}
	*dst = coords[:len(coords):len(coords)]
	return true
}

// float reads a number as encoding/json does for a float64, declining the
// ones it refuses (out of range).
func (s *usgsScanner) float() (float64, bool) {
	text, ok := s.number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(text), 64)
	return f, err == nil
}

// keptString copies b into a new string, except for the values every USGS
// answer repeats, which are shared constants instead.
func keptString(b []byte) string {
	switch string(b) {
	case "FeatureCollection":
		return "FeatureCollection"
	case "Point":
		return "Point"
	case "USGS Earthquakes":
		return "USGS Earthquakes"
	}
	return string(b)
}

// object reads an object whose keys are matched against fields, the JSON
// names of a struct's fields (none for an object that is only skipped).
// For a member that is a field, value is called with the field's name and
// must read the member's value; other members' values are skipped.
func (s *usgsScanner) object(fields []string, value func(field string) bool) bool {
	if !s.enter('{') {
		return false
	}
	if s.next('}') {
		return s.leave()
	}
	var seen uint64 // bit i: fields[i] has been read
	for {
		key, ok := s.plainString()
		if !ok || !s.next(':') {
			return false
		}
		i, ok := matchField(key, fields)
		switch {
		case !ok:
			return false
		case i < 0:
			if !s.skipValue() {
				return false
			}
		case seen&(1<<i) != 0:
			return false // encoding/json would decode the second on top of the first
		default:
			seen |= 1 << i
			if !value(fields[i]) {
				return false
			}
		}
		if s.next(',') {
			continue
		}
		if s.next('}') {
			return s.leave()
		}
		return false
	}
}

// matchField finds key among fields. It returns the index of the field key
// names exactly, or -1 for a key that names no field and is to be skipped.
// It reports false for a key encoding/json might match to a field
// case-insensitively: one that equals a field but for ASCII case, or any
// non-ASCII key in an object with fields (encoding/json folds Unicode too:
// "ſ" matches "s", and the Kelvin sign "K" matches "k").
func matchField(key []byte, fields []string) (int, bool) {
	for i, f := range fields {
		if len(key) != len(f) {
			continue // for ASCII, folding never changes a length
		}
		if string(key) == f {
			return i, true
		}
		if strings.EqualFold(string(key), f) {
			return 0, false
		}
	}
	if len(fields) > 0 {
		for _, c := range key {
			if c >= utf8.RuneSelf {
				return 0, false
			}
		}
	}
	return -1, true
}

// array reads an array, calling element for each element, which must read
// it.
func (s *usgsScanner) array(element func() bool) bool {
	if !s.enter('[') {
		return false
	}
	if s.next(']') {
		return s.leave()
	}
	for {
		if !element() {
			return false
		}
		if s.next(',') {
			continue
		}
		if s.next(']') {
			return s.leave()
		}
		return false
	}
}

// skipValue reads any value and checks it is well-formed JSON, as
// encoding/json checks the whole document before it decodes any of it.
func (s *usgsScanner) skipValue() bool {
	switch s.peek() {
	case '{':
		return s.object(nil, nil)
	case '[':
		return s.array(s.skipValue)
	case '"':
		return s.skipString()
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	_, ok := s.number()
	return ok
}

// enter reads open, an object's or array's opening bracket.
func (s *usgsScanner) enter(open byte) bool {
	if s.peek() != open {
		return false
	}
	s.pos++
	s.depth++
	return s.depth <= usgsMaxDepth
}

// leave notes that the object or array entered last has been read.
func (s *usgsScanner) leave() bool {
	s.depth--
	return true
}

// skipSpace moves past JSON whitespace, which is only these four bytes.
func (s *usgsScanner) skipSpace() {
	buf, i := s.buf, s.pos
	for i < len(buf) && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r') {
		i++
	}
	s.pos = i
}

// peek returns the byte after any whitespace, or 0 (which begins no JSON
// value) at the end.
func (s *usgsScanner) peek() byte {
	s.skipSpace()
	if s.pos == len(s.buf) {
		return 0
	}
	return s.buf[s.pos]
}

// next reads c if it comes after any whitespace.
func (s *usgsScanner) next(c byte) bool {
	if s.peek() != c {
		return false
	}
	s.pos++
	return true
}

// literal reads true, false or null. A letter straight after it (nullx) is
// left for the caller, which then finds no comma or bracket and declines.
func (s *usgsScanner) literal(word string) bool {
	end := s.pos + len(word)
	if end > len(s.buf) || string(s.buf[s.pos:end]) != word {
		return false
	}
	s.pos = end
	return true
}

// number reads a number in JSON's grammar, -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?,
// and returns its text. What follows it is the caller's to check, so 01 is
// a 0 followed by something that is neither a comma nor a bracket.
func (s *usgsScanner) number() ([]byte, bool) {
	s.skipSpace()
	start := s.pos
	if s.at('-') {
		s.pos++
	}
	switch {
	case s.at('0'):
		s.pos++
	case s.pos < len(s.buf) && '1' <= s.buf[s.pos] && s.buf[s.pos] <= '9':
		s.digits()
	default:
		return nil, false
	}
	if s.at('.') {
		s.pos++
		if s.digits() == 0 {
			return nil, false
		}
	}
	if s.at('e') || s.at('E') {
		s.pos++
		if s.at('+') || s.at('-') {
			s.pos++
		}
		if s.digits() == 0 {
			return nil, false
		}
	}
	return s.buf[start:s.pos], true
}

func (s *usgsScanner) at(c byte) bool { return s.pos < len(s.buf) && s.buf[s.pos] == c }

// digits moves past a run of decimal digits and returns how many.
func (s *usgsScanner) digits() int {
	buf, i := s.buf, s.pos
	for i < len(buf) && '0' <= buf[i] && buf[i] <= '9' {
		i++
	}
	n := i - s.pos
	s.pos = i
	return n
}

// plainString reads a string that encoding/json would take verbatim: no
// escapes, valid UTF-8. It returns the bytes between the quotes, which
// alias the body.
func (s *usgsScanner) plainString() ([]byte, bool) {
	if !s.next('"') {
		return nil, false
	}
	start := s.pos
	s.skipPlain()
	if !s.at('"') { // an escape, a control character, invalid UTF-8 or the end
		return nil, false
	}
	s.pos++
	return s.buf[start : s.pos-1], true
}

// skipString reads a string, checking its escapes as encoding/json does.
func (s *usgsScanner) skipString() bool {
	s.pos++ // the opening quote
	for {
		s.skipPlain()
		switch {
		case s.at('"'):
			s.pos++
			return true
		case s.at('\\'):
			if !s.skipEscape() {
				return false
			}
		default: // a control character, invalid UTF-8 or the end
			return false
		}
	}
}

// skipEscape reads a backslash escape: \" \\ \/ \b \f \n \r \t or \u and
// four hex digits. Any \u is well-formed to encoding/json, even half a
// surrogate pair.
func (s *usgsScanner) skipEscape() bool {
	if s.pos+1 >= len(s.buf) {
		return false
	}
	switch s.buf[s.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.pos += 2
		return true
	case 'u':
		if s.pos+6 > len(s.buf) {
			return false
		}
		for _, c := range s.buf[s.pos+2 : s.pos+6] {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
		s.pos += 6
		return true
	}
	return false
}

// skipPlain moves past string content that needs no decoding: printable
// ASCII other than the quote and backslash, and valid UTF-8 sequences.
// (Most of a USGS answer is string content, so this loop is the hot one;
// it works on locals rather than on s.)
func (s *usgsScanner) skipPlain() {
	buf, i := s.buf, s.pos
	for i < len(buf) {
		c := buf[i]
		if plainASCII[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			break
		}
		r, size := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	s.pos = i
}

// plainASCII marks the bytes that stand for themselves inside a JSON
// string: not the quote or backslash, not a control character (which JSON
// does not allow unescaped), not the start of a multi-byte UTF-8 sequence.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()
