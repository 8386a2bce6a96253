// Package jcs writes JSON in its RFC 8785 canonical form (the JSON
// Canonicalization Scheme) in one pass over the bytes, for the hashes and
// signatures of receipts: an execution's output is hashed on every call, so
// this is the cheap way of doing what registry.Canonicalize does (which
// stays the reference the tests compare against).
//
// Canonical form: no insignificant white space; object members sorted by
// the UTF-16 code units of their names; numbers as ECMAScript prints the
// IEEE 754 double they denote; strings with only '"', '\' and control
// characters escaped (the short escapes where JSON has them, else \u00xx).
// Input that has no canonical form is refused: invalid JSON or UTF-8,
// duplicate names, numbers beyond a double. A lone surrogate escape becomes
// U+FFFD, as encoding/json decodes it.
package jcs

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrNotCanonicalizable is wrapped by every error of Append.
var ErrNotCanonicalizable = errors.New("jcs: value has no canonical JSON form")

// MaxDepth bounds nesting so hostile input cannot exhaust the stack.
const MaxDepth = 512

// Canonicalize returns the canonical form of the JSON document doc.
func Canonicalize(doc []byte) ([]byte, error) {
	return Append(make([]byte, 0, len(doc)), doc)
}

// Append appends the canonical form of the JSON document doc to dst.
func Append(dst, doc []byte) ([]byte, error) {
	w := writer{in: doc, out: dst}
	if err := w.document(); err != nil {
		return dst, err
	}
	return w.out, nil
}

// AppendString appends s as a canonical JSON string. s must be valid UTF-8.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = appendEscape(dst, c)
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendEscape appends the canonical escape of an ASCII byte that needs one.
func appendEscape(dst []byte, c byte) []byte {
	const hex = "0123456789abcdef"
	switch c {
	case '"':
		return append(dst, '\\', '"')
	case '\\':
		return append(dst, '\\', '\\')
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
}

type writer struct {
	in  []byte
	i   int
	out []byte
	// scratch holds an object's members while reorder rewrites them.
	scratch []byte
}

// document writes the whole of w.in, a single JSON value.
func (w *writer) document() error {
	w.space()
	if err := w.value(0); err != nil {
		return err
	}
	w.space()
	if w.i != len(w.in) {
		return w.fail("data after the document")
	}
	return nil
}

func (w *writer) fail(format string, args ...any) error {
	return fmt.Errorf("%w: %s at byte %d", ErrNotCanonicalizable, fmt.Sprintf(format, args...), w.i)
}

func (w *writer) space() {
	for w.i < len(w.in) {
		switch w.in[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

func (w *writer) value(depth int) error {
	if w.i >= len(w.in) {
		return w.fail("the document is cut short")
	}
	switch c := w.in[w.i]; {
	case c == '{':
		if depth >= MaxDepth {
			return w.fail("nested deeper than %d", MaxDepth)
		}
		return w.object(depth)
	case c == '[':
		if depth >= MaxDepth {
			return w.fail("nested deeper than %d", MaxDepth)
		}
		return w.array(depth)
	case c == '"':
		_, err := w.str()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return w.number()
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(w.in[w.i:], []byte(lit)) {
			w.out = append(w.out, lit...)
			w.i += len(lit)
			return nil
		}
	}
	return w.fail("unexpected %q", w.in[w.i])
}

// member is one written member of an object: its name, decoded, and where
// its canonical bytes start and end in the output.
type member struct {
	name       []byte
	start, end int
}

func (w *writer) object(depth int) error {
	w.i++ // {
	w.out = append(w.out, '{')
	begin := len(w.out)
	var stack [16]member
	members := stack[:0]
	sorted := true
	w.space()
	if w.i < len(w.in) && w.in[w.i] == '}' {
		w.i++
		w.out = append(w.out, '}')
		return nil
	}
	for {
		w.space()
		if w.i >= len(w.in) || w.in[w.i] != '"' {
			return w.fail("expected a member name")
		}
		if len(members) > 0 {
			w.out = append(w.out, ',')
		}
		start := len(w.out)
		name, err := w.str()
		if err != nil {
			return err
		}
		w.space()
		if w.i >= len(w.in) || w.in[w.i] != ':' {
			return w.fail("expected ':'")
		}
		w.i++
		w.out = append(w.out, ':')
		w.space()
		if err := w.value(depth + 1); err != nil {
			return err
		}
		if n := len(members); n > 0 {
			switch c := compareUTF16(members[n-1].name, name); {
			case c == 0:
				return w.fail("duplicate member %q", name)
			case c > 0:
				sorted = false
			}
		}
		members = append(members, member{name: name, start: start, end: len(w.out)})
		w.space()
		if w.i >= len(w.in) {
			return w.fail("the document is cut short")
		}
		if w.in[w.i] == '}' {
			w.i++
			break
		}
		if w.in[w.i] != ',' {
			return w.fail("expected ',' or '}'")
		}
		w.i++
	}
	if !sorted {
		if err := w.reorder(begin, members); err != nil {
			return err
		}
	}
	w.out = append(w.out, '}')
	return nil
}

// reorder rewrites the members written since begin in canonical order.
// Members arrive sorted almost always (encoding/json sorts map keys, and
// struct fields are often declared in order), so this is the rare path.
func (w *writer) reorder(begin int, members []member) error {
	w.scratch = append(w.scratch[:0], w.out[begin:]...)
	// Insertion sort: objects are small, and most arrive nearly sorted.
	for i := 1; i < len(members); i++ {
		m := members[i]
		j := i
		for ; j > 0; j-- {
			c := compareUTF16(members[j-1].name, m.name)
			if c == 0 {
				return w.fail("duplicate member %q", m.name)
			}
			if c < 0 {
				break
			}
			members[j] = members[j-1]
		}
		members[j] = m
	}
	w.out = w.out[:begin]
	for i, m := range members {
		if i > 0 {
			w.out = append(w.out, ',')
		}
		w.out = append(w.out, w.scratch[m.start-begin:m.end-begin]...)
	}
	return nil
}

func (w *writer) array(depth int) error {
	w.i++ // [
	w.out = append(w.out, '[')
	w.space()
	if w.i < len(w.in) && w.in[w.i] == ']' {
		w.i++
		w.out = append(w.out, ']')
		return nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			w.out = append(w.out, ',')
		}
		w.space()
		if err := w.value(depth + 1); err != nil {
			return err
		}
		w.space()
		if w.i >= len(w.in) {
			return w.fail("the document is cut short")
		}
		if w.in[w.i] == ']' {
			w.i++
			break
		}
		if w.in[w.i] != ',' {
			return w.fail("expected ',' or ']'")
		}
		w.i++
	}
	w.out = append(w.out, ']')
	return nil
}

// str writes the string at w.i canonically and returns its decoded value,
// which aliases the input when the string has no escapes.
func (w *writer) str() ([]byte, error) {
	w.i++ // opening quote
	start := w.i
	// The common case: no escapes, nothing to escape; copied as it is.
	for w.i < len(w.in) {
		c := w.in[w.i]
		switch {
		case c == '"':
			raw := w.in[start:w.i]
			w.out = append(w.out, '"')
			w.out = append(w.out, raw...)
			w.out = append(w.out, '"')
			w.i++
			return raw, nil
		case c == '\\':
			return w.escapedStr(start)
		case c < 0x20:
			return nil, w.fail("control character in a string")
		case c < utf8.RuneSelf:
			w.i++
		default:
			r, size := utf8.DecodeRune(w.in[w.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, w.fail("invalid UTF-8")
			}
			w.i += size
		}
	}
	return nil, w.fail("the document is cut short")
}

// escapedStr finishes a string that has escapes, decoding from start.
func (w *writer) escapedStr(start int) ([]byte, error) {
	decoded := append([]byte(nil), w.in[start:w.i]...)
	for w.i < len(w.in) {
		c := w.in[w.i]
		switch {
		case c == '"':
			w.i++
			w.out = AppendString(w.out, string(decoded))
			return decoded, nil
		case c < 0x20:
			return nil, w.fail("control character in a string")
		case c == '\\':
			r, err := w.escape()
			if err != nil {
				return nil, err
			}
			decoded = utf8.AppendRune(decoded, r)
		case c < utf8.RuneSelf:
			decoded = append(decoded, c)
			w.i++
		default:
			r, size := utf8.DecodeRune(w.in[w.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, w.fail("invalid UTF-8")
			}
			decoded = append(decoded, w.in[w.i:w.i+size]...)
			w.i += size
		}
	}
	return nil, w.fail("the document is cut short")
}

// escape decodes the escape at w.i, a surrogate pair as one rune.
func (w *writer) escape() (rune, error) {
	if w.i+1 >= len(w.in) {
		return 0, w.fail("the document is cut short")
	}
	c := w.in[w.i+1]
	w.i += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		r, ok := w.hex4()
		if !ok {
			return 0, w.fail("bad \\u escape")
		}
		if utf16.IsSurrogate(r) {
			// A pair makes one rune; a lone half is U+FFFD.
			if w.i+1 < len(w.in) && w.in[w.i] == '\\' && w.in[w.i+1] == 'u' {
				save := w.i
				w.i += 2
				if r2, ok := w.hex4(); ok {
					if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
						return pair, nil
					}
				}
				w.i = save
			}
			return utf8.RuneError, nil
		}
		return r, nil
	}
	return 0, w.fail("bad escape")
}

func (w *writer) hex4() (rune, bool) {
	r, ok := Hex4(w.in, w.i)
	if ok {
		w.i += 4
	}
	return r, ok
}

// Hex4 reads the four hex digits of a \uXXXX escape starting at b[at].
func Hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number writes the number at w.i as ECMAScript prints its double.
func (w *writer) number() error {
	start := w.i
	integer := true
	if w.in[w.i] == '-' {
		w.i++
	}
	switch {
	case w.i < len(w.in) && w.in[w.i] == '0':
		w.i++
	case w.i < len(w.in) && w.in[w.i] >= '1' && w.in[w.i] <= '9':
		for w.i < len(w.in) && w.in[w.i] >= '0' && w.in[w.i] <= '9' {
			w.i++
		}
	default:
		return w.fail("bad number")
	}
	if w.i < len(w.in) && w.in[w.i] == '.' {
		integer = false
		w.i++
		if !w.digits() {
			return w.fail("bad number")
		}
	}
	if w.i < len(w.in) && (w.in[w.i] == 'e' || w.in[w.i] == 'E') {
		integer = false
		w.i++
		if w.i < len(w.in) && (w.in[w.i] == '+' || w.in[w.i] == '-') {
			w.i++
		}
		if !w.digits() {
			return w.fail("bad number")
		}
	}
	lit := w.in[start:w.i]
	// Integers of up to 15 digits are exact doubles, printed as written
	// (but for -0, which prints as 0).
	digits := len(lit)
	if lit[0] == '-' {
		digits--
	}
	if integer && digits <= 15 {
		if string(lit) == "-0" {
			w.out = append(w.out, '0')
			return nil
		}
		w.out = append(w.out, lit...)
		return nil
	}
	if !integer && plainDecimal(lit) {
		w.out = append(w.out, lit...)
		return nil
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(f, 0) {
		return w.fail("number %s is not a finite double", lit)
	}
	w.out = AppendNumber(w.out, f)
	return nil
}

// plainDecimal reports whether lit, a valid JSON number, is already what
// ECMAScript prints for it: a fixed-point literal without exponent, of at
// most 15 significant digits (so it is the shortest decimal of its double),
// without trailing zeros after the point, and not below 1e-6, below which
// ECMAScript switches to exponent form.
func plainDecimal(lit []byte) bool {
	if lit[0] == '-' {
		lit = lit[1:]
	}
	point := bytes.IndexByte(lit, '.')
	if point < 0 || bytes.IndexAny(lit, "eE") >= 0 || lit[len(lit)-1] == '0' {
		return false
	}
	significant := len(lit) - 1
	if lit[0] == '0' { // 0.000ddd: the zeros after the point do not count
		zeros := 0
		for _, c := range lit[point+1:] {
			if c != '0' {
				break
			}
			zeros++
		}
		if zeros > 5 {
			return false
		}
		significant = len(lit) - point - 1 - zeros
	}
	return significant <= 15
}

func (w *writer) digits() bool {
	start := w.i
	for w.i < len(w.in) && w.in[w.i] >= '0' && w.in[w.i] <= '9' {
		w.i++
	}
	return w.i > start
}

// AppendNumber appends f as ECMAScript's Number.prototype.toString prints
// it. f must be finite.
func AppendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0') // also for -0
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	var scratch [32]byte
	e := strconv.AppendFloat(scratch[:0], f, 'e', -1, 64) // d.dddde±XX
	mark := bytes.IndexByte(e, 'e')
	var digitsBuf [24]byte
	digits := append(digitsBuf[:0], e[0])
	if mark > 1 {
		digits = append(digits, e[2:mark]...)
	}
	exp, _ := strconv.Atoi(string(e[mark+1:]))
	k, point := len(digits), exp+1 // point: where the decimal point falls in digits
	switch {
	case k <= point && point <= 21:
		dst = append(dst, digits...)
		for range point - k {
			dst = append(dst, '0')
		}
	case 0 < point && point <= 21:
		dst = append(dst, digits[:point]...)
		dst = append(dst, '.')
		dst = append(dst, digits[point:]...)
	case -6 < point && point <= 0:
		dst = append(dst, '0', '.')
		for range -point {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if point-1 < 0 {
			dst = append(dst, '-')
		} else {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(abs(point-1)), 10)
	}
	return dst
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// compareUTF16 orders member names by UTF-16 code units. UTF-8 byte order
// is code point order, which differs from it only when a character above
// U+FFFF meets one in U+E000..U+FFFF; only names with such bytes take the
// slow way.
func compareUTF16(a, b []byte) int {
	if !hasHighRune(a) || !hasHighRune(b) {
		return bytes.Compare(a, b)
	}
	ua, ub := utf16.Encode([]rune(string(a))), utf16.Encode([]rune(string(b)))
	return slices.Compare(ua, ub)
}

// hasHighRune reports whether b holds a character at U+E000 or above, the
// only ones whose UTF-8 and UTF-16 orders can disagree.
func hasHighRune(b []byte) bool {
	for _, c := range b {
		if c >= 0xEE {
			return true
		}
	}
	return false
}
