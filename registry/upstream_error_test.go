package registry_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/registry"
)

func TestExcerpt(t *testing.T) {
	t.Parallel()
	x := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct{ name, in, want string }{
		{"empty", "", ""},
		{"only white space", " \r\n\t ", ""},
		{"white space folded and trimmed", "  hello\n\t  world  \r\n", "hello world"},
		{"control characters fold like space", "a\x00\x07b\x7fc", "a b c"},
		{"terminal escape loses its ESC", "red: \x1b[31mX", "red: [31mX"},
		{"unicode spaces and C1 controls", "a\u00a0\u0085\u2003b", "a b"},
		{"invalid UTF-8 replaced", "a\xffb", "a\ufffdb"},
		{"non-ASCII kept", "Zürich <b>", "Zürich <b>"},
		{"exactly 200 characters", x(200), x(200)},
		{"201 characters cut with an ellipsis", x(201), x(200) + "…"},
		{"counts characters, not bytes", strings.Repeat("é", 250), strings.Repeat("é", 200) + "…"},
		{"trailing white space after 200 is not a cut", x(200) + " \n", x(200)},
		{"the cut never leaves a dangling space", x(200) + " tail", x(200) + "…"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.want, registry.Excerpt([]byte(c.in)))
		})
	}
}

// Whatever the provider sends, the excerpt is short, valid, single-line text.
func TestExcerptBounds(t *testing.T) {
	t.Parallel()
	inputs := []string{
		strings.Repeat("x", 199) + " yz",
		strings.Repeat("x", 199) + "\n\n\x00yz",
		strings.Repeat("ab ", 100),
		strings.Repeat("\xff", 500),
		strings.Repeat("😀\t", 300),
		strings.Repeat("\x00", 1000) + "end",
	}
	for _, in := range inputs {
		out := registry.Excerpt([]byte(in))
		assert.True(t, utf8.ValidString(out), "%q", out)
		body := strings.TrimSuffix(out, "…")
		assert.LessOrEqual(t, utf8.RuneCountInString(body), 200, "%q", out)
		assert.Equal(t, strings.TrimSpace(body), body, "no leading or trailing space in %q", out)
		assert.False(t, strings.ContainsFunc(out, unicode.IsControl), "control character in %q", out)
		assert.NotContains(t, out, "  ")
	}
}

func TestUpstreamf(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("normalize: %w", registry.Upstreamf(registry.CodeUpstreamError, "provider answered %d: %s", 503, "busy"))
	var ue *registry.UpstreamError
	if assert.True(t, errors.As(err, &ue)) {
		assert.Equal(t, registry.CodeUpstreamError, ue.Code)
		assert.Equal(t, "provider answered 503: busy", ue.Message)
		assert.Equal(t, ue.Message, ue.Error())
	}
}

func TestExcerptDropsFormatCharacters(t *testing.T) {
	t.Parallel()
	// A right-to-left override would display "01$" as "$10".
	assert.Equal(t, "price is $01 total", registry.Excerpt([]byte("price is $\u202e01\u202c total\u200b")))
}
