package pagestyle

import (
	"fmt"
	"strings"
	"unicode"
)

// Invisible reports whether a page shows r as its escape rather than
// itself: a character a person reading the page would not see, or that
// changes how the characters around it are seen. They are
//
//   - the format characters (general category Cf): the bidirectional
//     controls that reorder text (U+202A–U+202E, U+2066–U+2069, U+200E,
//     U+200F, U+061C), the zero-width space, joiners and word joiner
//     (U+200B–U+200D, U+2060), the byte order mark (U+FEFF), the soft
//     hyphen, the invisible operators, the tag characters (U+E0000–U+E007F)
//     and the rest of the category;
//   - the control characters (Cc) but tab, line feed and carriage return,
//     which HTML lays out as white space (a page's own text is full of
//     them), and the line and paragraph separators (U+2028, U+2029),
//     which break or hide a line;
//   - the other default-ignorable characters, which fonts draw as nothing:
//     the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), the combining
//     grapheme joiner (U+034F) and the like (Other_Default_Ignorable_Code_Point),
//     and the variation selectors (U+FE00–U+FE0F, U+E0100–U+E01EF), which
//     can carry hidden data after any character. An emoji's U+FE0F is shown
//     as its escape too: a visible oddity is the price of hiding nothing.
//
// Spaces other than U+0020 are not in the set: they are seen, as space.
func Invisible(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.Cf, unicode.Cc, unicode.Zl, unicode.Zp,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// Escape is how a page shows an invisible character: \u and four
// hexadecimal digits, or \U and eight above U+FFFF, as Go and Python
// write them (U+202E is \u202E).
func Escape(r rune) string {
	if r > 0xFFFF {
		return fmt.Sprintf(`\U%08X`, r)
	}
	return fmt.Sprintf(`\u%04X`, r)
}

// Visible returns s with every invisible character (see Invisible) in
// place of itself as its escape, so that what a person reads is every
// character there is: "moc.live@\u202Ekcatta" rather than text that a
// right-to-left override turns around. Everything else is left as it is;
// a backslash is not doubled, so a value that spells an escape out looks
// like one, which shows a person something odd rather than hiding it.
// Invalid UTF-8 is left to the page's own escaping.
func Visible(s string) string {
	i := strings.IndexFunc(s, Invisible)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		if Invisible(r) {
			b.WriteString(Escape(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Width is how many characters s takes on a page once Visible has shown it.
func Width(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

func runeWidth(r rune) int {
	if Invisible(r) {
		return len(Escape(r))
	}
	return 1
}

// Cut is Visible(s) cut to at most n characters, the last an ellipsis
// when anything was cut. It never cuts an escape in two: a character is
// shown whole, as itself or as its escape, or not at all.
func Cut(s string, n int) string {
	if Width(s) <= n {
		return Visible(s)
	}
	var b strings.Builder
	room := n - 1 // the ellipsis
	for _, r := range s {
		w := runeWidth(r)
		if w > room {
			break
		}
		room -= w
		if w > 1 {
			b.WriteString(Escape(r))
		} else {
			b.WriteRune(r)
		}
	}
	b.WriteString("…")
	return b.String()
}
