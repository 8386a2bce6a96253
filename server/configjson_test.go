package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParseConfigPlacesMistakesDeep: a mistake inside an array, a map, or a
// value that decodes itself is named by its whole path, indexes and map
// keys included, as the decoder alone would not.
func TestParseConfigPlacesMistakesDeep(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ doc, want string }{
		{`{"principals": [{"id": "a", "apiKeys": ["k", null]}]}`,
			`config: principals[0].apiKeys[1]: must be a string, not null`},
		{`{"principals": [{"id": "a", "apiKeys": ["k"], "spendControls": {"tools": {"goal-data": {"allowed": true, "allowed": false}}}}]}`,
			`config: principals[0].spendControls.tools.goal-data: field "allowed" is given twice`},
		{`{"mcpServers": [{"id": "x", "command": ["a", 2]}]}`,
			`config: mcpServers[0].command[1]: must be a string, not a number`},
		{`{"mcpServers": [{"id": "x", "command": ["a"], "env": {"A": {"fil": "y"}}}]}`,
			`config: mcpServers[0].env.A: unknown field "fil": did you mean "file"?`},
		{`{"mcpServers": [{"id": "x", "command": ["a"], "env": {"A": {"file": " "}}}]}`,
			`config: mcpServers[0].env.A.file: must not be empty`},
		{`{"budgets": [{"id": "b", "claims": {"team": 3}}]}`,
			`config: budgets[0].claims.team: must be the string the claim equals or holds, such as "search", not a number`},
		{`{"upstreams": {"goal-data": 3}}`, `config: upstreams.goal-data: must be a string, not a number`},
		{`{"Listen": "127.0.0.1:1"}`, `config: unknown field "Listen": did you mean "listen"?`},
		{`null`, `config: must be an object, not null`},
	} {
		_, err := ParseConfig([]byte(c.doc))
		assert.EqualError(t, err, c.want, c.doc)
	}
}
