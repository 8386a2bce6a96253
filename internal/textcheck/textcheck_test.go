package textcheck_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/toolgate/toolgate/internal/textcheck"
)

func TestProblem(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]string{
		"":                         "",
		"Search team":              "",
		"line one\nline two\r\n\t": "",
		"Zoë 東京 🙂":                 "",
		"a\x00b":                   "holds the control character U+0000",
		"\x1b[31m":                 "holds the control character U+001B",
		"bell\x07":                 "holds the control character U+0007",
		"\x1f":                     "holds the control character U+001F",
		"bad \xff byte":            "is not UTF-8 text",
	} {
		assert.Equal(t, want, textcheck.Problem(s), "%q", s)
	}
}

func TestFields(t *testing.T) {
	t.Parallel()
	type approval struct {
		GrantID *string `json:"grantId,omitempty"`
	}
	type body struct {
		QuoteID  *string         `json:"quoteId"`
		Input    json.RawMessage `json:"input"`
		Approval *approval       `json:"approval"`
		Tools    map[string]struct {
			Note string `json:"note"`
		} `json:"tools"`
	}
	bad := "g\x00"
	ok := "q-1"
	path, p := textcheck.Fields(&body{QuoteID: &ok, Input: json.RawMessage(`{"a":"\u0000"}`), Approval: &approval{GrantID: &bad}})
	assert.Equal(t, "approval.grantId", path)
	assert.Equal(t, "holds the control character U+0000", p)

	b := body{QuoteID: &ok, Tools: map[string]struct {
		Note string `json:"note"`
	}{"goal-data": {Note: "\x07"}}}
	path, _ = textcheck.Fields(&b)
	assert.Equal(t, "tools.goal-data.note", path)
	b.Tools["\x00"] = b.Tools["goal-data"]
	path, p = textcheck.Fields(&b)
	assert.Equal(t, "tools", path)
	assert.Equal(t, "has a member whose name holds the control character U+0000", p)

	path, p = textcheck.Fields(&body{QuoteID: &ok, Input: json.RawMessage(`{"a":"\u0000"}`)})
	assert.Empty(t, path, "raw JSON is not looked into")
	assert.Empty(t, p)
}
