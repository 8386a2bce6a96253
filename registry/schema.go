package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/jcs"
	"github.com/toolgate/toolgate/internal/probe"
	"github.com/toolgate/toolgate/toolgatetype"
	"github.com/xeipuuv/gojsonschema"
)

// Schema is a JSON Schema compiled once, when its tool version is registered.
type Schema struct {
	raw      json.RawMessage
	compiled *gojsonschema.Schema
	// fast checks documents in one pass over their bytes when the schema
	// uses only keywords it knows; nil otherwise. It only ever answers
	// "valid": anything else, gojsonschema decides and explains.
	fast *fastNode
}

// CompileSchema compiles a JSON Schema. References to anything but the
// schema itself ("#...") are refused: a schema that could fetch from the
// network at validation time would let a provider make the gateway send
// requests, and would make validation depend on a remote's availability.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("registry: schema is not JSON: %w", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, fmt.Errorf("registry: schema must be a JSON object")
	}
	if ref := firstRemoteRef(doc); ref != "" {
		return nil, fmt.Errorf("registry: schema refers to %q: only local references (#...) are allowed", ref)
	}
	compiled, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(raw))
	if err != nil {
		return nil, fmt.Errorf("registry: invalid schema: %w", err)
	}
	return &Schema{raw: raw, compiled: compiled, fast: compileFast(doc)}, nil
}

func firstRemoteRef(v any) string {
	switch t := v.(type) {
	case map[string]any:
		if ref, ok := t["$ref"].(string); ok && !strings.HasPrefix(ref, "#") {
			return ref
		}
		if id, ok := t["$id"].(string); ok && id != "" && !strings.HasPrefix(id, "#") {
			// A base URI would make later relative references remote.
			return id
		}
		for _, child := range t {
			if ref := firstRemoteRef(child); ref != "" {
				return ref
			}
		}
	case []any:
		for _, child := range t {
			if ref := firstRemoteRef(child); ref != "" {
				return ref
			}
		}
	}
	return ""
}

// Raw returns the schema document as registered.
func (s *Schema) Raw() json.RawMessage { return s.raw }

// Validate checks a JSON document against the schema. It returns nil when
// the document is valid and otherwise every failure, ordered by path, with
// paths rooted at prefix ("input", "output").
func (s *Schema) Validate(doc []byte, prefix string) []toolgatetype.FieldError {
	probe.Validate(prefix)
	if s.fast != nil && s.fast.accepts(doc) {
		return nil
	}
	return s.validateSlow(doc, prefix)
}

// validateSlow is Validate by gojsonschema alone: the reference, and the
// only path that explains a failure.
func (s *Schema) validateSlow(doc []byte, prefix string) []toolgatetype.FieldError {
	res, err := s.compiled.Validate(gojsonschema.NewBytesLoader(doc))
	if err != nil {
		return []toolgatetype.FieldError{{Path: prefix, Message: "is not valid JSON"}}
	}
	if res.Valid() {
		return nil
	}
	out := make([]toolgatetype.FieldError, 0, len(res.Errors()))
	for _, e := range res.Errors() {
		path := prefix
		if f := e.Field(); f != "" && f != "(root)" {
			path += "." + f
		}
		if e.Type() == "required" {
			if p, ok := e.Details()["property"].(string); ok {
				path += "." + p
				out = append(out, toolgatetype.FieldError{Path: path, Message: "is required"})
				continue
			}
		}
		out = append(out, toolgatetype.FieldError{Path: path, Message: e.Description()})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// The fast path of Validate. gojsonschema decodes a document into interface
// values and checks every number with big.Rat, which made validating a
// tool's output cost more than decoding the provider's answer. For the
// keywords below, which cover the built-in tools' schemas, a fastNode answers
// from the document's bytes in one pass, without decoding it. It answers only
// "certainly valid": for an invalid or unusual document (bad JSON, a
// duplicate key, a number beyond float64) it answers no, and gojsonschema,
// the reference, decides and explains. So the fast path changes how long
// validation takes, never its outcome. A schema using any other keyword, or
// an older draft, has no fast path at all.
type fastNode struct {
	types      jsonTypes      // 0: any type
	names      []string       // names in properties or required, by bit index
	keys       map[string]int // names -> bit index, for objects with many names
	props      []*fastNode    // by bit index; nil: any value
	required   uint64         // bits of the names that must be present
	declared   uint64         // bits of the names in properties
	closed     bool           // additionalProperties: false
	items      *fastNode      // nil: any items
	minItems   int            // -1: none, likewise below
	maxItems   int
	minLength  int
	maxLength  int
	constStr   *string
	enum       []string
	format     string
	pattern    *regexp.Regexp
	minimum    *fastBound
	maximum    *fastBound
	stringOnly bool // a keyword that gojsonschema also applies, oddly, to numbers
}

// fastBound is a minimum or maximum, as a float64 for the common case and
// exactly for a number that rounds to the same float64.
type fastBound struct {
	f float64
	r *big.Rat
}

type jsonTypes uint8

const (
	typeNull jsonTypes = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeNumber
	typeInteger
	typeString
)

var typeNames = map[string]jsonTypes{
	"null": typeNull, "boolean": typeBoolean, "object": typeObject, "array": typeArray,
	"number": typeNumber, "integer": typeInteger, "string": typeString,
}

// compileFast returns the fast path of a decoded (UseNumber) schema, or nil
// when the schema uses anything it does not handle exactly as gojsonschema.
func compileFast(doc any) *fastNode {
	m, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	n, ok := buildFast(m, 0)
	if !ok {
		return nil
	}
	return n
}

func buildFast(m map[string]any, depth int) (*fastNode, bool) {
	if depth > 64 {
		return nil, false
	}
	n := &fastNode{minItems: -1, maxItems: -1, minLength: -1, maxLength: -1}
	var required []string
	var props map[string]any
	count := func(v any) (int, bool) {
		num, ok := v.(json.Number)
		if !ok {
			return 0, false
		}
		i, err := num.Int64()
		return int(i), err == nil && i >= 0 && i <= 1<<31
	}
	bound := func(v any) (*fastBound, bool) {
		num, ok := v.(json.Number)
		if !ok {
			return nil, false
		}
		f, err := strconv.ParseFloat(string(num), 64)
		r, ok := new(big.Rat).SetString(string(num))
		return &fastBound{f: f, r: r}, err == nil && ok
	}
	for k, v := range m {
		ok := true
		switch k {
		case "title", "description", "default", "examples", "$comment":
		case "$schema":
			// Draft 4 ignores const, for one; only 6 and 7 read as handled here.
			uri, _ := v.(string)
			switch strings.TrimSuffix(uri, "#") {
			case "http://json-schema.org/draft-07/schema", "http://json-schema.org/draft-06/schema":
			default:
				ok = false
			}
		case "type":
			switch t := v.(type) {
			case string:
				n.types, ok = typeNames[t]
			case []any:
				for _, e := range t {
					s, isString := e.(string)
					bit, known := typeNames[s]
					ok = ok && isString && known
					n.types |= bit
				}
				ok = ok && len(t) > 0
			default:
				ok = false
			}
		case "properties":
			props, ok = v.(map[string]any)
		case "required":
			list, isList := v.([]any)
			ok = isList
			for _, e := range list {
				s, isString := e.(string)
				ok = ok && isString
				required = append(required, s)
			}
		case "additionalProperties":
			b, isBool := v.(bool)
			ok, n.closed = isBool, !b
		case "items":
			sub, isObject := v.(map[string]any)
			ok = isObject
			if ok {
				n.items, ok = buildFast(sub, depth+1)
			}
		case "minItems":
			n.minItems, ok = count(v)
		case "maxItems":
			n.maxItems, ok = count(v)
		case "minLength":
			n.minLength, ok = count(v)
			n.stringOnly = true
		case "maxLength":
			n.maxLength, ok = count(v)
			n.stringOnly = true
		case "const":
			s, isString := v.(string)
			ok, n.constStr = isString, &s
		case "enum":
			list, isList := v.([]any)
			ok = isList && len(list) > 0
			for _, e := range list {
				s, isString := e.(string)
				ok = ok && isString
				n.enum = append(n.enum, s)
			}
		case "format":
			n.format, ok = v.(string)
			n.stringOnly = true
		case "pattern":
			s, isString := v.(string)
			ok = isString
			if ok {
				var err error
				n.pattern, err = regexp.Compile(s)
				ok = err == nil
			}
			n.stringOnly = true
		case "minimum":
			n.minimum, ok = bound(v)
		case "maximum":
			n.maximum, ok = bound(v)
		default:
			ok = false
		}
		if !ok {
			return nil, false
		}
	}
	if len(props)+len(required) > 0 {
		n.keys = map[string]int{}
		index := func(name string) int {
			i, seen := n.keys[name]
			if !seen {
				i = len(n.props)
				n.keys[name] = i
				n.names = append(n.names, name)
				n.props = append(n.props, nil)
			}
			return i
		}
		for name, v := range props {
			sub, isObject := v.(map[string]any)
			if !isObject {
				return nil, false
			}
			child, ok := buildFast(sub, depth+1)
			if !ok {
				return nil, false
			}
			i := index(name)
			n.props[i] = child
			n.declared |= 1 << i
		}
		for _, name := range required {
			n.required |= 1 << index(name)
		}
		if len(n.props) > 64 {
			return nil, false
		}
		if len(n.names) <= 8 {
			n.keys = nil // a few comparisons beat hashing
		}
	}
	return n, true
}

// allows reports whether the node accepts a value of type t; a nil node
// accepts anything.
func (n *fastNode) allows(t jsonTypes) bool {
	return n == nil || n.types == 0 || n.types&t != 0
}

// lookup returns the bit index of an object member's name.
func (n *fastNode) lookup(name string) (int, bool) {
	if n.keys != nil {
		i, ok := n.keys[name]
		return i, ok
	}
	for i, known := range n.names {
		if known == name {
			return i, true
		}
	}
	return 0, false
}

// wantsValue reports whether the node checks a string's decoded value.
func (n *fastNode) wantsValue() bool {
	return n != nil && (n.constStr != nil || n.enum != nil || n.format != "" || n.pattern != nil || n.minLength >= 0 || n.maxLength >= 0)
}

// accepts reports whether doc is certainly valid.
func (n *fastNode) accepts(doc []byte) bool {
	if !utf8.Valid(doc) {
		return false // the decoder would replace the bad bytes: let gojsonschema say what that means
	}
	s := fastScanner{b: doc}
	s.space()
	if !s.value(n, 0) {
		return false
	}
	s.space()
	return s.i == len(s.b)
}

type fastScanner struct {
	b []byte
	i int
}

func (s *fastScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *fastScanner) value(n *fastNode, depth int) bool {
	if depth > jcs.MaxDepth || s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return n.allows(typeObject) && (n == nil || n.constStr == nil && n.enum == nil) && s.object(n, depth)
	case c == '[':
		return n.allows(typeArray) && (n == nil || n.constStr == nil && n.enum == nil) && s.array(n, depth)
	case c == '"':
		return n.allows(typeString) && s.str(n)
	case c == 't':
		return n.allows(typeBoolean) && s.literal("true") && (n == nil || n.constStr == nil && n.enum == nil)
	case c == 'f':
		return n.allows(typeBoolean) && s.literal("false") && (n == nil || n.constStr == nil && n.enum == nil)
	case c == 'n':
		return n.allows(typeNull) && s.literal("null") && (n == nil || n.constStr == nil && n.enum == nil)
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(n)
	}
	return false
}

func (s *fastScanner) literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	return true
}

func (s *fastScanner) object(n *fastNode, depth int) bool {
	s.i++ // {
	s.space()
	var seen uint64
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return n == nil || n.required == 0
	}
	for {
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		start := s.i
		raw, escaped, ok := s.stringBytes()
		if !ok {
			return false
		}
		var child *fastNode
		if n != nil {
			var idx int
			var known bool
			if escaped {
				var key string
				if json.Unmarshal(s.b[start:s.i], &key) != nil {
					return false
				}
				idx, known = n.lookup(key)
			} else {
				idx, known = n.lookup(string(raw))
			}
			if known {
				if seen&(1<<idx) != 0 {
					return false // a duplicate: the decoder keeps the last, gojsonschema decides
				}
				seen |= 1 << idx
				child = n.props[idx]
			}
			if n.closed && (!known || n.declared&(1<<idx) == 0) {
				return false
			}
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		if !s.value(child, depth+1) {
			return false
		}
		s.space()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			s.space()
		case '}':
			s.i++
			return n == nil || seen&n.required == n.required
		default:
			return false
		}
	}
}

func (s *fastScanner) array(n *fastNode, depth int) bool {
	s.i++ // [
	s.space()
	var items *fastNode
	if n != nil {
		items = n.items
	}
	count := 0
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
	} else {
		for {
			if !s.value(items, depth+1) {
				return false
			}
			count++
			s.space()
			if s.i >= len(s.b) {
				return false
			}
			if s.b[s.i] == ']' {
				s.i++
				break
			}
			if s.b[s.i] != ',' {
				return false
			}
			s.i++
			s.space()
		}
	}
	return n == nil || ((n.minItems < 0 || count >= n.minItems) && (n.maxItems < 0 || count <= n.maxItems))
}

// stringBytes scans a string at s.i, returning its bytes between the quotes
// and whether they hold escapes.
func (s *fastScanner) stringBytes() (raw []byte, escaped, ok bool) {
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], escaped, true
		case c == '\\':
			escaped = true
			j++
			if j >= len(s.b) {
				return nil, false, false
			}
			switch s.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s.b) {
					return nil, false, false
				}
				for _, h := range s.b[j+1 : j+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return nil, false, false
					}
				}
				j += 4
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		}
	}
	return nil, false, false
}

func (s *fastScanner) str(n *fastNode) bool {
	start := s.i
	raw, escaped, ok := s.stringBytes()
	if !ok {
		return false
	}
	if !n.wantsValue() {
		return true
	}
	// The checks read the bytes where they can: converting every string
	// of a document to check it would allocate for each.
	v := raw
	if escaped {
		var decoded string
		if json.Unmarshal(s.b[start:s.i], &decoded) != nil {
			return false
		}
		v = []byte(decoded)
	}
	if n.constStr != nil && string(v) != *n.constStr {
		return false
	}
	if n.enum != nil && !slices.ContainsFunc(n.enum, func(e string) bool { return e == string(v) }) {
		return false
	}
	if n.minLength >= 0 || n.maxLength >= 0 {
		runes := utf8.RuneCount(v)
		if (n.minLength >= 0 && runes < n.minLength) || (n.maxLength >= 0 && runes > n.maxLength) {
			return false
		}
	}
	if n.pattern != nil && !n.pattern.Match(v) {
		return false
	}
	return n.format == "" || gojsonschema.FormatCheckers.IsFormat(n.format, string(v))
}

func (s *fastScanner) number(n *fastNode) bool {
	start := s.i
	b := s.b
	digits := func() int {
		k := s.i
		for s.i < len(b) && b[s.i] >= '0' && b[s.i] <= '9' {
			s.i++
		}
		return s.i - k
	}
	if b[s.i] == '-' {
		s.i++
	}
	intStart := s.i
	if d := digits(); d == 0 || (d > 1 && b[intStart] == '0') {
		return false
	}
	intEnd := s.i
	fracStart, fracEnd := s.i, s.i
	if s.i < len(b) && b[s.i] == '.' {
		s.i++
		fracStart = s.i
		if digits() == 0 {
			return false
		}
		fracEnd = s.i
	}
	exp := 0
	if s.i < len(b) && (b[s.i] == 'e' || b[s.i] == 'E') {
		s.i++
		neg := false
		if s.i < len(b) && (b[s.i] == '+' || b[s.i] == '-') {
			neg = b[s.i] == '-'
			s.i++
		}
		expStart := s.i
		d := digits()
		if d == 0 || d > 9 {
			return false
		}
		exp, _ = strconv.Atoi(string(b[expStart:s.i]))
		if neg {
			exp = -exp
		}
	}
	if n == nil {
		return true
	}
	if n.stringOnly || n.constStr != nil || n.enum != nil {
		return false // gojsonschema applies these to numbers in its own way: let it
	}
	tok := b[start:s.i]
	if n.types != 0 && n.types&typeNumber == 0 {
		if n.types&typeInteger == 0 || !isIntegral(b[intStart:intEnd], b[fracStart:fracEnd], exp) {
			return false
		}
	}
	if n.minimum != nil {
		if c := compareNumber(tok, n.minimum); c < 0 || c == 2 {
			return false
		}
	}
	if n.maximum != nil && compareNumber(tok, n.maximum) > 0 {
		return false
	}
	return true
}

// isIntegral reports exactly whether intDigits.fracDigits × 10^exp is a
// whole number, as gojsonschema's big.Rat check does.
func isIntegral(intDigits, fracDigits []byte, exp int) bool {
	digits := make([]byte, 0, 32)
	digits = append(append(digits, intDigits...), fracDigits...)
	exp -= len(fracDigits)
	digits = bytes.TrimLeft(digits, "0")
	if len(digits) == 0 {
		return true // zero
	}
	trailing := len(digits) - len(bytes.TrimRight(digits, "0"))
	return exp+trailing >= 0
}

// compareNumber compares a JSON number with a bound: -1, 0 or 1, or 2 when
// the number cannot be compared cheaply and exactly (which callers treat as
// out of bounds, so that gojsonschema decides).
func compareNumber(tok []byte, b *fastBound) int {
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return 2
	}
	switch {
	case f < b.f:
		return -1
	case f > b.f:
		return 1
	}
	// Rounding is monotonic, so only equal float64s need the exact answer.
	r, ok := new(big.Rat).SetString(string(tok))
	if !ok {
		return 2
	}
	return r.Cmp(b.r)
}
