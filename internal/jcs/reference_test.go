package jcs_test

// The reference the tests hold jcs to: RFC 8785 done the slow, obvious way,
// through encoding/json's tokenizer. It was the gateway's implementation
// until jcs replaced it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

var errReference = errors.New("reference: value has no canonical JSON form")

// referenceCanonicalize is the reference canonicalization of doc.
func referenceCanonicalize(doc []byte) ([]byte, error) {
	if !utf8.Valid(doc) {
		return nil, fmt.Errorf("%w: invalid UTF-8", errReference)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var buf bytes.Buffer
	if err := canonicalValue(dec, &buf, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the document", errReference)
	}
	return buf.Bytes(), nil
}

// maxCanonicalDepth bounds nesting so hostile input cannot exhaust the stack.
const maxCanonicalDepth = 512

// Canonicalize returns the RFC 8785 (JSON Canonicalization Scheme) form of a
// JSON document: object members sorted by their UTF-16 code units, no
// insignificant white space, numbers in ECMAScript shortest form and strings
// with the minimal escaping the RFC prescribes. Two documents that mean the
// same thing canonicalize to the same bytes, which is what lets a digest bind
// an approval to a manifest rather than to one way of writing it.
func Canonicalize(doc []byte) ([]byte, error) {
	if !utf8.Valid(doc) {
		return nil, fmt.Errorf("%w: invalid UTF-8", errReference)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var buf bytes.Buffer
	if err := canonicalValue(dec, &buf, 0); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data after the document", errReference)
	}
	return buf.Bytes(), nil
}

func canonicalValue(dec *json.Decoder, buf *bytes.Buffer, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", errReference, err)
	}
	switch v := tok.(type) {
	case json.Delim:
		// depth counts the containers around this one.
		if depth >= maxCanonicalDepth {
			return fmt.Errorf("%w: nested deeper than %d", errReference, maxCanonicalDepth)
		}
		switch v {
		case '{':
			return canonicalObject(dec, buf, depth)
		case '[':
			return canonicalArray(dec, buf, depth)
		default:
			return fmt.Errorf("%w: unexpected %q", errReference, v)
		}
	case string:
		writeCanonicalString(buf, v)
	case json.Number:
		s, err := canonicalNumber(v)
		if err != nil {
			return err
		}
		buf.WriteString(s)
	case bool:
		buf.WriteString(strconv.FormatBool(v))
	case nil:
		buf.WriteString("null")
	}
	return nil
}

func canonicalObject(dec *json.Decoder, buf *bytes.Buffer, depth int) error {
	type member struct {
		key   string
		value []byte
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", errReference, err)
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("%w: object key is not a string", errReference)
		}
		if seen[key] {
			return fmt.Errorf("%w: duplicate key %q", errReference, key)
		}
		seen[key] = true
		var value bytes.Buffer
		if err := canonicalValue(dec, &value, depth+1); err != nil {
			return err
		}
		members = append(members, member{key, value.Bytes()})
	}
	if _, err := dec.Token(); err != nil { // closing brace
		return fmt.Errorf("%w: %v", errReference, err)
	}
	sort.Slice(members, func(i, j int) bool { return lessUTF16(members[i].key, members[j].key) })
	buf.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeCanonicalString(buf, m.key)
		buf.WriteByte(':')
		buf.Write(m.value)
	}
	buf.WriteByte('}')
	return nil
}

func canonicalArray(dec *json.Decoder, buf *bytes.Buffer, depth int) error {
	buf.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := canonicalValue(dec, buf, depth+1); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // closing bracket
		return fmt.Errorf("%w: %v", errReference, err)
	}
	buf.WriteByte(']')
	return nil
}

// lessUTF16 orders strings by UTF-16 code units, as RFC 8785 section 3.2.3
// requires; it differs from Go's byte order for characters above U+FFFF.
func lessUTF16(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

func writeCanonicalString(buf *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	buf.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\f':
			buf.WriteString(`\f`)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			if r < 0x20 {
				buf.WriteString(`\u00`)
				buf.WriteByte(hex[r>>4])
				buf.WriteByte(hex[r&0xf])
			} else {
				buf.WriteRune(r)
			}
		}
	}
	buf.WriteByte('"')
}

// canonicalNumber formats a JSON number as ECMAScript's Number.prototype.toString
// does for the IEEE 754 double it denotes (RFC 8785 section 3.2.2.3).
func canonicalNumber(n json.Number) (string, error) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("%w: number %s is not a finite double", errReference, n)
	}
	if f == 0 {
		return "0", nil // also for -0
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest round-tripping digits and the decimal exponent.
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddddde±XX
	mant, expPart, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expPart)
	k := len(digits)
	point := exp + 1 // position of the decimal point relative to the digits
	var out string
	switch {
	case k <= point && point <= 21:
		out = digits + strings.Repeat("0", point-k)
	case 0 < point && point <= 21:
		out = digits[:point] + "." + digits[point:]
	case -6 < point && point <= 0:
		out = "0." + strings.Repeat("0", -point) + digits
	default:
		exp := point - 1
		expSign := "+"
		if exp < 0 {
			expSign, exp = "-", -exp
		}
		m := digits[:1]
		if k > 1 {
			m += "." + digits[1:]
		}
		out = m + "e" + expSign + strconv.Itoa(exp)
	}
	return sign + out, nil
}
