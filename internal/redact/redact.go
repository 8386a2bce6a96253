// Package redact takes the secrets the gateway holds for a provider (a
// manifest tool's credential, an upstream MCP server's credential and the
// values read for its environment) out of what the provider sends back,
// which may echo them: outputs, error messages, log messages. It is the one
// place both the registry's manifest tools and mcpupstream redact, so both
// answer the same question the same way: does this text show a secret,
// even cut or disguised?
//
// What is covered:
//
//   - A secret anywhere in a text, matched as if the text held no invisible
//     format characters (Unicode Cf: zero-width spaces and joiners, U+2060,
//     U+FEFF, the soft hyphen, bidirectional controls) nor any other
//     character no one sees (control characters, variation selectors,
//     U+034F, the Hangul fillers: pagestyle.Invisible). The whole span is
//     replaced, the invisible characters inside it included, so a secret
//     split by a U+200B is found and leaves nothing behind.
//   - JSON documents (Secrets.JSON): every string (member names included)
//     is decoded before matching, so escapes (\u200b, \u0041) hide nothing;
//     a number whose digits hold a secret is replaced by the marker as a
//     string.
//   - Decoded JSON values (Secrets.Value): strings, member names, and
//     json.Number values likewise.
//   - Excerpts (Secrets.Excerpt): redacted before they are cut, so a cut
//     cannot split a secret into a piece the first pass no longer knows,
//     and the cut text is checked again for any RunLen-character run of a
//     secret, so that a secret the provider itself cut short, or one that
//     cleaning revealed, does not reach a message either.
//
// Outputs are not checked for runs: they are not cut by the gateway, and a
// run of a secret in a provider's data is not the gateway's to change (a
// key's common prefix, such as Stripe's "sk_live_", is 8 characters long;
// taking it out could break an output's schema).
//
// What is not covered: a secret spelled with other visible characters between its
// own (spaces, line breaks, another case). Those are not invisible: a
// reader sees that something was inserted, and the run check of excerpts
// still catches any RunLen characters of it left in one piece.
package redact

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/internal/pagestyle"
)

// Mark replaces what is taken out.
const Mark = "[redacted]"

// MinLen is the length, in characters, of the shortest secret taken out
// of text: a shorter one would take out ordinary words, and guards
// nothing.
const MinLen = 6

// RunLen is the length, in characters, of the shortest run of a secret
// that Excerpt takes out of a cut text.
const RunLen = 8

// Secrets takes a set of secrets out of text. The zero value and nil take
// out nothing; a Secrets is safe for concurrent use.
type Secrets struct {
	whole []string // each secret without invisible characters, longest first
	runs  []string // whole, and every RunLen-character run of each longer secret
}

// New returns the Secrets for values, leaving out those shorter than
// MinLen characters (not counting invisible ones).
func New(values ...string) *Secrets {
	s := &Secrets{}
	for _, v := range values {
		v = visible(v)
		if utf8.RuneCountInString(v) < MinLen || slices.Contains(s.whole, v) {
			continue
		}
		s.whole = append(s.whole, v)
	}
	// The longest first: one secret may hold another.
	slices.SortFunc(s.whole, func(a, b string) int { return len(b) - len(a) })
	for _, v := range s.whole {
		s.runs = append(s.runs, v)
		r := []rune(v)
		for i := 0; i+RunLen <= len(r); i++ {
			s.runs = append(s.runs, string(r[i:i+RunLen]))
		}
	}
	return s
}

// Empty reports whether s takes nothing out.
func (s *Secrets) Empty() bool { return s == nil || len(s.whole) == 0 }

// Text takes the secrets out of t, found as if t held no invisible format
// characters.
func (s *Secrets) Text(t string) string {
	if s.Empty() {
		return t
	}
	return replace(t, s.whole)
}

// Excerpt is t fit for a message, without the secrets: taken out of t,
// then cut (cut is the caller's shortening, such as registry.Excerpt),
// then any RunLen-character run of a secret taken out of what is left.
func (s *Secrets) Excerpt(t string, cut func(string) string) string {
	if s.Empty() {
		return cut(t)
	}
	return replace(cut(replace(t, s.whole)), s.runs)
}

// Value takes the secrets out of a decoded JSON value: its strings, member
// names and json.Number values (a number that held one becomes Mark, a
// string). Slices are changed in place; maps are copied.
func (s *Secrets) Value(v any) any {
	if s.Empty() {
		return v
	}
	switch x := v.(type) {
	case string:
		return s.Text(x)
	case json.Number:
		if r := s.Text(string(x)); r != string(x) {
			return Mark
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, child := range x {
			out[s.Text(k)] = s.Value(child)
		}
		return out
	case []any:
		for i, child := range x {
			x[i] = s.Value(child)
		}
		return x
	}
	return v
}

// JSON takes the secrets out of a well-formed JSON document: each string
// is decoded (so no escape hides a secret) and, when it held one, written
// again without; a number that held one becomes the string Mark. doc is
// returned as it is when it held none.
func (s *Secrets) JSON(doc []byte) []byte {
	if s.Empty() {
		return doc
	}
	var out []byte // nil until something changes
	last := 0
	for i := 0; i < len(doc); {
		c := doc[i]
		switch {
		case c == '"':
			end := stringEnd(doc, i)
			raw := doc[i:end]
			if len(raw) < 2 || raw[len(raw)-1] != '"' {
				return doc // not the well-formed JSON promised
			}
			str := string(raw[1 : len(raw)-1])
			if bytes.IndexByte(raw, '\\') >= 0 && json.Unmarshal(raw, &str) != nil {
				return doc
			}
			if red := s.Text(str); red != str {
				enc, _ := json.Marshal(red)
				out = append(append(out, doc[last:i]...), enc...)
				last = end
			}
			i = end
		case c == '-' || ('0' <= c && c <= '9'):
			end := i + 1
			for end < len(doc) && strings.IndexByte("0123456789+-.eE", doc[end]) >= 0 {
				end++
			}
			if num := string(doc[i:end]); s.Text(num) != num {
				out = append(append(out, doc[last:i]...), `"`+Mark+`"`...)
				last = end
			}
			i = end
		default:
			i++
		}
	}
	if out == nil {
		return doc
	}
	return append(out, doc[last:]...)
}

// stringEnd is the offset just past the JSON string starting at doc[i].
func stringEnd(doc []byte, i int) int {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(doc)
}

// invisible reports whether r is an invisible character: a format
// character (Cf), and every other character the approval pages show as its
// escape because no one sees it (pagestyle.Invisible: control characters
// but tab and line breaks, variation selectors, the combining grapheme
// joiner, the Hangul fillers), any of which can disguise a secret as well
// as a zero-width space.
func invisible(r rune) bool {
	if r < 0x100 {
		// Latin-1, most of what is read, answered without the tables: the
		// control characters but tab and line breaks, and the soft hyphen.
		return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r >= 0x7f && r <= 0x9f || r == 0xad
	}
	return pagestyle.Invisible(r) // Cf among them
}

// visible is t without its invisible format characters.
func visible(t string) string {
	return strings.Map(func(r rune) rune {
		if invisible(r) {
			return -1
		}
		return r
	}, t)
}

// replace replaces each span of t where one of needles appears, read as if
// t held no invisible format characters, by one Mark; overlapping and
// touching spans become one.
func replace(t string, needles []string) string {
	// skel is t without invisible characters; at[i] is where skel's byte i
	// is in t. Plain ASCII, the common case, holds none: skel is t.
	skel, at := t, []int(nil)
	for _, r := range t {
		if invisible(r) {
			skel, at = skeleton(t)
			break
		}
	}
	orig := func(i int) int {
		if at == nil {
			return i
		}
		return at[i]
	}
	var spans [][2]int
	for _, n := range needles {
		for from := 0; ; {
			k := strings.Index(skel[from:], n)
			if k < 0 {
				break
			}
			start := from + k
			last := start + len(n) - 1 // the match's last byte
			spans = append(spans, [2]int{orig(start), orig(last) + 1})
			_, size := utf8.DecodeRuneInString(skel[start:])
			from = start + size
		}
	}
	if len(spans) == 0 {
		return t
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var b strings.Builder
	pos := 0
	for i := 0; i < len(spans); {
		start, end := spans[i][0], spans[i][1]
		for i++; i < len(spans) && spans[i][0] <= end; i++ {
			end = max(end, spans[i][1])
		}
		b.WriteString(t[pos:start])
		b.WriteString(Mark)
		pos = end
	}
	b.WriteString(t[pos:])
	return b.String()
}

// skeleton is t without invisible format characters, and for each of its
// bytes the offset of the same byte in t.
func skeleton(t string) (string, []int) {
	var b strings.Builder
	at := make([]int, 0, len(t))
	for i := 0; i < len(t); {
		r, size := utf8.DecodeRuneInString(t[i:])
		if !invisible(r) {
			// The bytes as they are: an invalid byte stays one byte.
			b.WriteString(t[i : i+size])
			for k := range size {
				at = append(at, i+k)
			}
		}
		i += size
	}
	return b.String(), at
}
