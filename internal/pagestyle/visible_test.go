package pagestyle_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/internal/pagestyle"
)

func TestVisibleShowsEveryInvisibleCharacterAsItsEscape(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, in, want string
	}{
		{"plain text", "attack@evil.com", "attack@evil.com"},
		{"right-to-left override", "moc.live@\u202ekcatta", `moc.live@\u202Ekcatta`},
		{"every bidi control", "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069",
			`\u200E\u200F\u061C\u202A\u202B\u202C\u202D\u2066\u2067\u2068\u2069`},
		{"zero-width characters", "a\u200bb\u200cc\u200dd\u2060e\ufefff", `a\u200Bb\u200Cc\u200Dd\u2060e\uFEFFf`},
		{"soft hyphen", "pass\u00adword", `pass\u00ADword`},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"control characters", "a\x1b[2Jb\x00c\u0085d", `a\u001B[2Jb\u0000c\u0085d`},
		{"tag characters", "ok\U000e0041\U000e007f", `ok\U000E0041\U000E007F`},
		{"Hangul fillers", "\u3164\u115f\uffa0", `\u3164\u115F\uFFA0`},
		{"variation selectors", "x\ufe0fy\U000e0100", `x\uFE0Fy\U000E0100`},
		{"layout white space stays", "a\tb\nc\r\n", "a\tb\nc\r\n"},
		{"visible letters stay", "é שלום مرحبا 日本 \u00a0", "é שלום مرحبا 日本 \u00a0"},
		{"a backslash stays", `C:\path`, `C:\path`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := pagestyle.Visible(c.in)
			assert.Equal(t, c.want, got)
			assert.Equal(t, len([]rune(got)), pagestyle.Width(c.in), "Width counts what Visible shows")
			assert.Equal(t, got, pagestyle.Visible(got), "Visible changes nothing twice")
		})
	}
}

func TestCutNeverCutsAnEscapeInTwo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven ch…"},
		{"ééééééééééé", 5, "éééé…"},
		// \u202E is six characters: with four of room left it is left out whole.
		{"abc\u202edef", 8, "abc…"},
		{"abc\u202edef", 10, `abc\u202E…`},
		{"abc\u202edef", 12, `abc\u202Edef`},
		{strings.Repeat("\u200b", 10), 14, `\u200B\u200B…`},
	} {
		got := pagestyle.Cut(c.in, c.n)
		assert.Equal(t, c.want, got, "%q cut to %d", c.in, c.n)
		assert.LessOrEqual(t, len([]rune(got)), c.n)
	}
}

func TestInvisible(t *testing.T) {
	t.Parallel()
	for _, r := range []rune{'\u202e', '\u2066', '\u200b', '\ufeff', '\u2028', '\u034f', '\u180e', '\U000e0001'} {
		assert.True(t, pagestyle.Invisible(r), "%U", r)
	}
	for _, r := range []rune{'a', ' ', '\t', '\n', '\r', '\u00a0', 'ש', '…', '·'} {
		assert.False(t, pagestyle.Invisible(r), "%U", r)
	}
}
