// Package secrettest checks, for tests, that text shows no part of a
// secret the way a person or a program would read it.
package secrettest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/internal/pagestyle"
)

// RunLength is the shortest run of a secret's characters that counts as
// showing it: the run the gateway's redaction looks for in a cut message.
const RunLength = 8

// AssertNoRun fails t when text shows secret or any RunLength characters
// of it in a row: as it is, and read with invisible characters gone and,
// when text is JSON, with its strings and names decoded (so no escape
// hides one). what names the text in the failure.
func AssertNoRun(t testing.TB, text, secret, what string) {
	t.Helper()
	for _, r := range readings(text) {
		seen := strings.Map(func(r rune) rune {
			if pagestyle.Invisible(r) {
				return -1
			}
			return r
		}, r)
		for i := 0; i+RunLength <= len(secret); i++ {
			run := secret[i : i+RunLength]
			if !assert.NotContains(t, seen, run, "%s shows %q of the secret:\n%s", what, run, text) {
				return
			}
		}
	}
}

// readings are the ways text is read: as it is and, when it is JSON, its
// names and strings one a line, and the document written out again.
func readings(text string) []string {
	out := []string{text}
	var doc any
	if json.Unmarshal([]byte(text), &doc) != nil {
		return out
	}
	var sb strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			sb.WriteString(x + "\n")
		case map[string]any:
			for k, c := range x {
				sb.WriteString(k + "\n")
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)
	again, _ := json.Marshal(doc)
	return append(out, sb.String(), string(again))
}
