// Package strictjson checks the object members of a JSON document before
// encoding/json decodes it. encoding/json matches a member to a struct
// field whatever the case of its name ("quoteID" fills QuoteID, tagged
// "quoteId") and keeps the last of a duplicated member, so one document can
// mean one thing to the gateway and another to whatever read it first (a
// proxy, a log, a person, another verifier). Check refuses both: a member
// whose name is not exactly one of its struct's, and a member that appears
// twice in its object, at any depth, including inside values kept as raw
// JSON (a call's input) and maps.
//
// Check is one pass over the bytes and allocates nothing for the small
// objects requests are made of; it leaves syntax to the decoder, answering
// ErrNotJSON so the caller can let the decoder say what is wrong.
package strictjson

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/jcs"
)

// ErrNotJSON is returned for a document that is not one JSON value, which
// the decoder that follows refuses with its own words.
var ErrNotJSON = errors.New("strictjson: not a JSON document")

// MaxDepth is encoding/json's nesting limit: deeper is ErrNotJSON, as the
// decoder refuses it too.
const MaxDepth = 10000

// MemberError is a member Check refuses.
type MemberError struct {
	// Path says where: member names joined by '.', array positions as [i],
	// each name cut to 64 bytes (it is the sender's own text, echoed).
	Path string
	// Object is the path of the object the member is in ("" for the
	// document's), and Name the member's name, cut as in Path.
	Object, Name string
	// Duplicate: the member appears more than once in its object; else its
	// name is not one its object knows (as encoding/json words it, "unknown
	// field").
	Duplicate bool
	// Known are the names the object's struct knows, in the struct's
	// order, when the name is unknown: for suggesting the one meant.
	Known []string
}

func (e *MemberError) Error() string {
	if e.Duplicate {
		return fmt.Sprintf("duplicate field %q", e.Path)
	}
	return fmt.Sprintf("unknown field %q", e.Path)
}

// Check checks the members of every object in doc, a single JSON value:
// no name twice in one object (names compared as decoded, so "a" and
// "\u0061" are the same member, as encoding/json sees them) and, where
// shape describes an object as a struct, no name that is not exactly one
// of its fields'. A nil shape checks duplicates only. It returns a
// *MemberError for the first member refused, ErrNotJSON when doc is not
// JSON, or nil; never wrapped, so a type assertion tells them apart.
func Check(doc []byte, shape *Shape) error {
	s := scanners.Get().(*scanner)
	defer func() {
		clear(s.names[:cap(s.names)]) // no document kept alive by the pool
		s.in, s.names = nil, s.names[:0]
		scanners.Put(s)
	}()
	s.in, s.i = doc, 0
	s.space()
	if err := s.value(shape, 0); err != nil {
		if m, ok := err.(*memberErr); ok {
			return m.build()
		}
		return err
	}
	s.space()
	if s.i != len(s.in) {
		return ErrNotJSON
	}
	return nil
}

// scanners keeps scanners, and the room their names take, from one check
// to the next: a check on the call path allocates nothing.
var scanners = sync.Pool{New: func() any { return &scanner{names: make([][]byte, 0, linearNames)} }}

// memberErr is a MemberError on its way up: the segments of its path, the
// innermost first, each level adding its own as the error passes it.
type memberErr struct {
	segments  []string
	name      string
	duplicate bool
	known     []string
}

func (m *memberErr) Error() string { return m.build().Error() }

func (m *memberErr) build() *MemberError {
	var b strings.Builder
	var object string
	for i := len(m.segments) - 1; i >= 0; i-- {
		if i == 0 {
			object = b.String()
		}
		seg := m.segments[i]
		if b.Len() > 0 && seg[0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return &MemberError{Path: b.String(), Object: object, Name: m.name, Duplicate: m.duplicate, Known: m.known}
}

// nameSegment is how a name shows in a path: cut to 64 bytes, on a
// character boundary.
func nameSegment(name []byte) string {
	if len(name) == 0 {
		return `""`
	}
	return cutName(name)
}

// cutName is name cut to 64 bytes, on a character boundary.
func cutName(name []byte) string {
	const limit = 64
	if len(name) <= limit {
		return string(name)
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return string(name[:cut]) + "…"
}

// newMemberErr is the error of the member name of an object, not yet
// placed in the document.
func newMemberErr(name []byte, duplicate bool, known []string) *memberErr {
	return &memberErr{segments: []string{nameSegment(name)}, name: cutName(name), duplicate: duplicate, known: known}
}

// linearNames is how many members an object may have before its names are
// looked up in a map rather than compared one by one.
const linearNames = 32

type scanner struct {
	in []byte
	i  int
	// names holds the member names of the objects being scanned, each
	// object's after those of the objects around it.
	names [][]byte
}

func (s *scanner) space() {
	for s.i < len(s.in) {
		switch s.in[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) value(shape *Shape, depth int) error {
	if s.i >= len(s.in) {
		return ErrNotJSON
	}
	switch s.in[s.i] {
	case '{':
		if depth >= MaxDepth {
			return ErrNotJSON
		}
		return s.object(shape, depth)
	case '[':
		if depth >= MaxDepth {
			return ErrNotJSON
		}
		return s.array(shape, depth)
	case '"':
		return s.skipString()
	}
	// A number or a literal: its bytes are the decoder's to judge.
	start := s.i
	for s.i < len(s.in) {
		c := s.in[s.i]
		if c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			s.i++
			continue
		}
		break
	}
	if s.i == start {
		return ErrNotJSON
	}
	return nil
}

func (s *scanner) object(shape *Shape, depth int) error {
	s.i++ // {
	s.space()
	if s.i < len(s.in) && s.in[s.i] == '}' {
		s.i++
		return nil
	}
	if shape != nil && shape.kind != kindStruct && shape.kind != kindMap {
		shape = nil // an object where none is expected: the decoder's type error
	}
	base := len(s.names)
	defer func() { s.names = s.names[:base] }()
	var seen map[string]struct{} // past linearNames members
	for {
		if s.i >= len(s.in) || s.in[s.i] != '"' {
			return ErrNotJSON
		}
		name, err := s.name()
		if err != nil {
			return err
		}
		if seen != nil {
			if _, dup := seen[string(name)]; dup {
				return newMemberErr(name, true, nil)
			}
			seen[string(name)] = struct{}{}
		} else {
			for _, n := range s.names[base:] {
				if string(n) == string(name) {
					return newMemberErr(name, true, nil)
				}
			}
			s.names = append(s.names, name)
			if len(s.names)-base > linearNames {
				seen = make(map[string]struct{}, 2*linearNames)
				for _, n := range s.names[base:] {
					seen[string(n)] = struct{}{}
				}
			}
		}
		var child *Shape
		if shape != nil {
			if shape.kind == kindStruct {
				f, ok := shape.fields[string(name)]
				if !ok {
					return newMemberErr(name, false, shape.names)
				}
				child = f
			} else {
				child = shape.elem
			}
		}
		s.space()
		if s.i >= len(s.in) || s.in[s.i] != ':' {
			return ErrNotJSON
		}
		s.i++
		s.space()
		if err := s.value(child, depth+1); err != nil {
			if m, ok := err.(*memberErr); ok {
				m.segments = append(m.segments, nameSegment(name))
			}
			return err
		}
		s.space()
		if s.i >= len(s.in) {
			return ErrNotJSON
		}
		switch s.in[s.i] {
		case '}':
			s.i++
			return nil
		case ',':
			s.i++
			s.space()
		default:
			return ErrNotJSON
		}
	}
}

func (s *scanner) array(shape *Shape, depth int) error {
	s.i++ // [
	s.space()
	if s.i < len(s.in) && s.in[s.i] == ']' {
		s.i++
		return nil
	}
	var elem *Shape
	if shape != nil && shape.kind == kindArray {
		elem = shape.elem
	}
	for n := 0; ; n++ {
		if err := s.value(elem, depth+1); err != nil {
			if m, ok := err.(*memberErr); ok {
				m.segments = append(m.segments, "["+strconv.Itoa(n)+"]")
			}
			return err
		}
		s.space()
		if s.i >= len(s.in) {
			return ErrNotJSON
		}
		switch s.in[s.i] {
		case ']':
			s.i++
			return nil
		case ',':
			s.i++
			s.space()
		default:
			return ErrNotJSON
		}
	}
}

// skipString moves past the string at s.i. What is inside is the
// decoder's to judge; only where it ends matters here.
func (s *scanner) skipString() error {
	s.i++ // opening quote
	for {
		end := bytes.IndexByte(s.in[s.i:], '"')
		if end < 0 {
			return ErrNotJSON
		}
		esc := bytes.IndexByte(s.in[s.i:s.i+end], '\\')
		if esc < 0 {
			s.i += end + 1
			return nil
		}
		s.i += esc + 2 // past the escape, whatever it escapes
		if s.i > len(s.in) {
			return ErrNotJSON
		}
	}
}

// name reads the member name at s.i and returns it as encoding/json
// decodes it: its bytes when it has no escape and is valid UTF-8 (the
// common case, which aliases the input), else decoded, with invalid UTF-8
// and lone surrogate escapes as U+FFFD.
func (s *scanner) name() ([]byte, error) {
	s.i++ // opening quote
	start := s.i
	if end := bytes.IndexByte(s.in[start:], '"'); end >= 0 {
		raw := s.in[start : start+end]
		if bytes.IndexByte(raw, '\\') < 0 {
			for _, c := range raw {
				if c < 0x20 {
					return nil, ErrNotJSON
				}
			}
			s.i += end + 1
			if utf8.Valid(raw) {
				return raw, nil
			}
			return decodeName(raw), nil
		}
	}
	return s.escapedName(start)
}

// escapedName finishes a name with escapes that began at start.
func (s *scanner) escapedName(start int) ([]byte, error) {
	for s.i < len(s.in) {
		switch c := s.in[s.i]; {
		case c == '"':
			raw := s.in[start:s.i]
			s.i++
			return decodeName(raw), nil
		case c == '\\':
			if err := s.skipEscape(); err != nil {
				return nil, err
			}
		case c < 0x20:
			return nil, ErrNotJSON
		default:
			s.i++
		}
	}
	return nil, ErrNotJSON
}

// skipEscape moves past the escape at s.i, refusing one JSON does not have.
func (s *scanner) skipEscape() error {
	if s.i+1 >= len(s.in) {
		return ErrNotJSON
	}
	switch s.in[s.i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		s.i += 2
		return nil
	case 'u':
		if _, ok := jcs.Hex4(s.in, s.i+2); !ok {
			return ErrNotJSON
		}
		s.i += 6
		return nil
	}
	return ErrNotJSON
}

// decodeName decodes raw, the bytes between a name's quotes, whose escapes
// skipEscape has checked.
func decodeName(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			var r rune
			r, i = decodeEscape(raw, i)
			out = utf8.AppendRune(out, r)
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			out = utf8.AppendRune(out, r) // invalid UTF-8 is U+FFFD
			i += size
		}
	}
	return out
}

// decodeEscape decodes the escape at raw[i] and returns where it ends; a
// surrogate pair is one rune, a lone half U+FFFD, as encoding/json has it.
func decodeEscape(raw []byte, i int) (rune, int) {
	switch c := raw[i+1]; c {
	case 'b':
		return '\b', i + 2
	case 'f':
		return '\f', i + 2
	case 'n':
		return '\n', i + 2
	case 'r':
		return '\r', i + 2
	case 't':
		return '\t', i + 2
	case 'u':
		r, _ := jcs.Hex4(raw, i+2)
		i += 6
		if !utf16.IsSurrogate(r) {
			return r, i
		}
		if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
			if r2, ok := jcs.Hex4(raw, i+2); ok {
				if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
					return pair, i + 6
				}
			}
		}
		return utf8.RuneError, i
	default: // '"', '\\', '/'
		return rune(c), i + 2
	}
}
